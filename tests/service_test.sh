#!/usr/bin/env bash
# service_test (issue 36): the systemd unit config/examples/rewind-follow.service.
#   tests/service_test.sh REWIND REWIND_GEN     (the private server's REWIND_SOCKET/USER/PASSWORD set)
# systemd is not PID 1 where the tests run (a container, CI), so the unit cannot be started
# by it; it is checked in the two parts that do not need it:
# 1. systemd-analyze: the sandbox's exposure (`security --offline`) is at most MEDIUM.
# 2. The unit's own command line, taken from its ExecStart= and run as systemd would run it:
#    as an unprivileged user of its own (uid 65534 here, a DynamicUser's stand-in), the config
#    root's and mode 600, handed over as a credential ($CREDENTIALS_DIRECTORY: a copy only that
#    user can read), the server's socket bind-mounted at a path that user can reach (as
#    /run/mysqld/mysqld.sock is on a Debian host), with the unit's UMask. It must rebuild and
#    follow with the read model exact against SQL, start quietly under --resume (also when
#    restarted, when it continues the live tables from their checkpoints), and stop on SIGTERM with exit 143 (SuccessExitStatus=).
# Part 2 needs root (setpriv, a mount namespace); without it the test says so and fails.
set -euo pipefail
rewind=$1 gen=$2
root=$(cd "$(dirname "$0")/.." && pwd)
unit=$root/config/examples/rewind-follow.service
fail() { echo "service_test: FAILED: $*" >&2; exit 1; }
: "${REWIND_SOCKET:?set the private server settings: eval \"\$(scripts/db env)\"}"

echo "== systemd-analyze security --offline"
command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (Debian package systemd; scripts/setup installs it)"
security=$(cd /tmp && systemd-analyze security --offline=true "$unit" 2>&1 | tail -1)
echo "$security"
score=$(grep -oE 'level for [^:]+: [0-9.]+' <<<"$security" | awk '{print $NF}')
[ -n "$score" ] || fail "no exposure level in: $security"
# systemd's levels: MEDIUM is below 7.0 (EXPOSED from 7.0, UNSAFE from 9.0).
awk -v s="$score" 'BEGIN { exit !(s < 7.0) }' || fail "exposure $score is above MEDIUM"

[ "$(id -u)" = 0 ] || fail "the unit's command line is run as another user: this part needs root"
for tool in setpriv unshare mount mariadb; do command -v $tool >/dev/null || fail "$tool not found"; done

# The sandbox: what the service's user can reach, nothing of the build tree.
box=$(mktemp -d /tmp/rewind-service.XXXXXX)
cleanup() {
  [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null || true
  rm -rf "$box"
}
trap cleanup EXIT
chmod 755 "$box"
mkdir -p "$box/bin" "$box/etc" "$box/run" "$box/credentials"
cp "$rewind" "$box/bin/rewind"
: >"$box/run/mysqld.sock"
db=rewind_service_test
mysql_root() { mariadb -S "$REWIND_SOCKET" -u "$REWIND_USER" ${REWIND_PASSWORD:+-p"$REWIND_PASSWORD"} "$@"; }
mysql_root -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
"$gen" -S "$REWIND_SOCKET" -u "$REWIND_USER" ${REWIND_PASSWORD:+-p "$REWIND_PASSWORD"} -D "$db" --events 20000 --holes 0.01 >/dev/null

# The config as the operator keeps it: root's, mode 600, with the password in it.
cat >"$box/etc/rewind.conf" <<EOF
socket = $box/run/mysqld.sock
user = $REWIND_USER
password = $REWIND_PASSWORD
database = $db
EOF
chmod 600 "$box/etc/rewind.conf"
# The credential, as LoadCredential= hands it over: a copy that only the service's user reads.
cp "$box/etc/rewind.conf" "$box/credentials/rewind.conf"
chown -R 65534:65534 "$box/credentials"
chmod 500 "$box/credentials"
chmod 400 "$box/credentials/rewind.conf"

# The unit's ExecStart=, its UMask= and its SuccessExitStatus=, read from the unit itself.
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
umask_value=$(sed -n 's/^UMask=//p' "$unit")
success=$(sed -n 's/^SuccessExitStatus=//p' "$unit")
[[ "$exec_start" == /usr/bin/rewind\ * ]] || fail "ExecStart does not run /usr/bin/rewind: $exec_start"
grep -q '^DynamicUser=yes' "$unit" || fail "the unit does not run as a user of its own"
grep -q '^LoadCredential=rewind.conf:/etc/rewind/rewind.conf' "$unit" || fail "the unit does not load the config as a credential"
command_line=${exec_start/\/usr\/bin\/rewind/$box/bin/rewind}
command_line=${command_line//\$\{CREDENTIALS_DIRECTORY\}/$box/credentials}
echo "== as uid 65534: $command_line"

# The mode-600 config itself is unreadable to that user: what the credential is for.
if setpriv --reuid=65534 --regid=65534 --clear-groups cat "$box/etc/rewind.conf" >/dev/null 2>&1; then
  fail "uid 65534 can read the mode-600 config: the check below would prove nothing"
fi

start() {  # runs the unit's command line in the background; its stderr in $1
  unshare -m -- bash -c '
    set -e
    mount --make-rprivate /
    mount --bind "$1" "$2"
    umask "$3"
    shift 3
    exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs env -i PATH=/usr/bin:/bin "$@"
  ' service "$REWIND_SOCKET" "$box/run/mysqld.sock" "$umask_value" $command_line >"$box/out" 2>"$1" &
  pid=$!
}
wait_for() {  # FILE TEXT: until FILE holds TEXT or the process ends (then fail)
  while ! grep -qF "$2" "$1"; do
    kill -0 "$pid" 2>/dev/null || { cat "$1" >&2; fail "the unit's command ended before '$2'"; }
    sleep 0.2
  done
}
stop() {  # SIGTERM, as systemctl stop sends it; the exit status must be a clean stop
  kill -TERM "$pid"
  set +e
  wait "$pid"
  local rc=$?
  set -e
  pid=
  [ "$rc" = "$success" ] || { cat "$1" >&2; fail "exit $rc on SIGTERM, not $success"; }
}
exact() {  # visits_per_day against SQL's own count of the events per day of visitedAt
  local diff
  diff=$(mysql_root -N -D "$db" -e "
    SELECT COUNT(*) FROM (
      SELECT LEFT(JSON_VALUE(payload, '\$.visitedAt'), 10) d, COUNT(*) n FROM stored_events
      WHERE eventClass = 'App\\\\Analytics\\\\PageVisited' GROUP BY d) s
    LEFT JOIN visits_per_day v ON v.\`date\` = s.d WHERE v.\`count\` IS NULL OR v.\`count\` <> s.n")
  [ "$diff" = 0 ] || fail "visits_per_day differs from SQL on $diff day(s)"
  local sums
  sums=$(mysql_root -N -D "$db" -e "SELECT (SELECT SUM(\`count\`) FROM visits_per_day),
    (SELECT COUNT(*) FROM stored_events WHERE eventClass = 'App\\\\Analytics\\\\PageVisited')")
  [ "$(awk '{print ($1 == $2 && $2 > 0)}' <<<"$sums")" = 1 ] \
    || fail "visits_per_day counts other than the page visits SQL counts: $sums"
}

for run in first restart; do
  start "$box/err.$run"
  wait_for "$box/err.$run" "following new events"
  # Quiet: what --resume found is said in one line, not one per read model.
  said=$(grep -c "interrupted rebuild" "$box/err.$run" || true)
  if [ "$said" -gt 1 ]; then
    cat "$box/err.$run" >&2
    fail "the $run start under --resume is not quiet: $said lines on what it resumed"
  fi
  if [ "$run" = restart ]; then
    # Started again, the read models continue their live tables; sessions_per_day, whose
    # state is partly in memory, is rebuilt, said with why.
    grep -q "read model(s) continue their live tables from their checkpoints: visits_per_minute" "$box/err.$run" \
      || { cat "$box/err.$run" >&2; fail "the restart did not continue the live tables"; }
    grep -q "sessions_per_day is rebuilt from the first event: it keeps part of its state in memory" "$box/err.$run" \
      || { cat "$box/err.$run" >&2; fail "the restart does not say why sessions_per_day is rebuilt"; }
  fi
  exact
  stop "$box/err.$run"
  # The summary tells the rebuild (its events, seconds, rate) from the following after it.
  grep -q "^rebuilt and swapped in .* read model(s) from .* events in" "$box/out" || fail "no rebuild line in the summary"
  grep -q "^followed after the swap: " "$box/out" || { cat "$box/out" >&2; fail "the summary counts the following as rebuilding"; }
  echo "$run: rebuilt, followed, stopped with $success; its stderr, then its stdout:"; sed "s/^/    /" "$box/err.$run" "$box/out"
done
mysql_root -e "DROP DATABASE $db"
echo "service_test: ok"
