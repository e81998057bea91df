#!/usr/bin/env bash
# package_test (issue #25): the install rules and the Debian package of this build tree.
#   tests/package_test.sh BUILD_DIR CMAKE CPACK
# 1. `cmake --install BUILD_DIR --prefix TMP`: the files land where cmake/package.cmake says,
#    and the installed rewind-gen reads the access log installed beside it.
# 2. cpack (DEB) on BUILD_DIR's own configuration (nothing is rebuilt): the package's file
#    list, its Depends (computed by dpkg-shlibdeps), and the binaries extracted with
#    `dpkg-deb -x` into TMP run --help (and rewind --version; its man page renders). Nothing is installed system-wide; everything it
#    writes is under a temp dir (and BUILD_DIR's install_manifest.txt).
set -euo pipefail
build=$1 cmake=$2 cpack=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "package_test: FAILED: $*" >&2; exit 1; }
# No user or system config may leak into the runs below.
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config
unset REWIND_CONFIG REWIND_ACCESS_LOG

expect_files() {  # LISTING FILE...: every FILE is a line of LISTING (paths relative to the root)
  local listing=$1; shift
  for f in "$@"; do
    grep -qxF "$f" <<<"$listing" || fail "'$f' is missing from:"$'\n'"$listing"
  done
}
files=(bin/rewind bin/rewind-gen share/doc/rewind/README.md.gz share/doc/rewind/rewind.conf
       share/doc/rewind/blog.toml share/doc/rewind/shop.toml share/doc/rewind/examples/axon.toml
       share/doc/rewind/examples/eventsauce.toml share/doc/rewind/examples/laravel.toml
       share/doc/rewind/examples/evtstore.toml share/doc/rewind/examples/rewind-follow.service
       share/doc/rewind/docs/replay.md.gz share/doc/rewind/docs/read-models.md.gz share/doc/rewind/docs/operations.md.gz
       share/doc/rewind/apache-combined/SOURCE.md share/rewind/apache-combined/access.log
       share/bash-completion/completions/rewind share/man/man1/rewind.1.gz share/man/man1/rewind-gen.1.gz
       share/doc/rewind/copyright share/doc/rewind/changelog.Debian.gz lib/rewind/rewind-stress)

echo "== cmake --install $build --prefix $tmp/prefix"
"$cmake" --install "$build" --prefix "$tmp/prefix" >/dev/null
expect_files "$(cd "$tmp/prefix" && find . -type f | sed 's|^\./||')" "${files[@]}"
# The installed rewind-gen reads the copy installed beside it, not the one in the sources:
# emptied, that copy is what it complains about.
: >"$tmp/prefix/share/rewind/apache-combined/access.log"
set +e
gen_err=$("$tmp/prefix/bin/rewind-gen" --socket "$tmp/no-server.sock" 2>&1 >/dev/null)
gen_rc=$?
set -e
[ "$gen_rc" = 1 ] || fail "installed rewind-gen exited $gen_rc, not 1: $gen_err"
grep -qF "no access log lines parsed from '$tmp/prefix/share/rewind/apache-combined/access.log'" <<<"$gen_err" \
  || fail "installed rewind-gen did not read the installed access log: $gen_err"

echo "== cpack -G DEB"
(cd "$build" && "$cpack" -G DEB -B "$tmp/cpack" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/cpack/*.deb)
[ "$(wc -l <<<"$deb")" = 1 ] || fail "expected one .deb, got: $deb"
echo "$deb"
dpkg-deb -I "$deb"

listing=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./usr/||')
expect_files "$listing" "${files[@]}"

depends=$(dpkg-deb -f "$deb" Depends)
for lib in libmariadb libtbb libsimdjson libfmt; do
  grep -qE "(^|, )$lib[0-9a-z.-]* " <<<"$depends" || fail "Depends lacks $lib: $depends"
done

dpkg-deb -x "$deb" "$tmp/root"
# What the package recommends and suggests: the completion's reader, the stress plots' tool.
grep -q "bash-completion" <<<"$(dpkg-deb -f "$deb" Recommends)" || fail "Recommends lacks bash-completion"
grep -q "gnuplot" <<<"$(dpkg-deb -f "$deb" Suggests)" || fail "Suggests lacks gnuplot"

for run in "rewind --help" "rewind-gen --help" "rewind --version" "rewind-gen --version"; do
  bin=${run%% *} flag=${run#* }
  set +e
  out=$("$tmp/root/usr/bin/$bin" "$flag" 2>&1)
  rc=$?
  set -e
  [ "$rc" = 0 ] || fail "extracted $bin $flag exited $rc: $out"
  grep -q "$bin" <<<"$out" || fail "extracted $bin $flag printed no usage or version: $out"
done
version=$(grep -oE 'project\(rewind VERSION [0-9.]+' "$(dirname "$0")/../CMakeLists.txt" | awk '{print $3}')
grep -q "^rewind $version" <<<"$("$tmp/root/usr/bin/rewind" --version)" \
  || fail "extracted rewind --version does not name version $version"
# The extracted `rewind stress` runs the packaged rewind-stress (from ../lib/rewind/): with no
# server, the stress program's own refusal says it ran.
set +e
stress_err=$("$tmp/root/usr/bin/rewind" stress --quick --socket "$tmp/no-server.sock" 2>&1 >/dev/null)
stress_rc=$?
set -e
[ "$stress_rc" = 1 ] && grep -qF "rewind stress: " <<<"$stress_err" \
  || fail "extracted rewind stress exited $stress_rc without running rewind-stress: $stress_err"
# The man pages render without a warning.
for page in rewind rewind-gen; do
  man_err=$(MANPAGER=cat man --warnings -l "$tmp/root/usr/share/man/man1/$page.1.gz" 2>&1 >/dev/null)
  [ -z "$man_err" ] || fail "man --warnings on the packaged $page.1.gz: $man_err"
done
# The changelog's newest entry is this version (the package's own revision 1).
head1=$(zcat "$tmp/root/usr/share/doc/rewind/changelog.Debian.gz" | head -1)
grep -qF "rewind ($version-1) " <<<"$head1" || fail "changelog.Debian.gz does not start with version $version-1: $head1"
# lintian, Debian's package checker, finds no error (E:) and no warning (W:) in the package.
command -v lintian >/dev/null || fail "lintian not found (scripts/setup installs it)"
lint=$(lintian --tag-display-limit 0 "$deb" 2>&1 || true)
echo "$lint"
! grep -qE '^(E|W): ' <<<"$lint" || fail "lintian reports errors or warnings:"$'\n'"$lint"
echo "package_test: ok"
