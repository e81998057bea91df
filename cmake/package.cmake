# Installing rewind (`cmake --install build --prefix P`) and its Debian package
# (scripts/package: CPack's DEB generator). Issue #25.
#
#   P/bin/rewind, P/bin/rewind-gen
#   P/share/doc/rewind/          README.md.gz, docs/*.md.gz, the sample config rewind.conf, blog.toml,
#                                shop.toml, examples/*.toml, apache-combined/SOURCE.md
#   P/share/rewind/apache-combined/access.log
#                                the access log rewind-gen builds its events from; the
#                                installed rewind-gen finds it relative to its own location
#   P/share/bash-completion/completions/rewind
#                                generated at build time by rewind-completion from its
#                                template (scripts/completion/rewind.bash.in) and the tables
#   P/share/man/man1/rewind.1.gz, rewind-gen.1.gz
#                                generated at build time by rewind-man (scripts/man) from
#                                the command and option tables --help is printed from,
#                                compressed with `gzip -9n` as Debian policy asks
#   P/share/doc/rewind/copyright, changelog.Debian.gz
#                                cmake/copyright (machine-readable, DEP-5) and
#                                cmake/changelog.in (Debian changelog format, the maintainer filled
#                                in), as changelog.Debian.gz; gzip -9n
include(GNUInstallDirs)

# The config search (config/options.h): after the user's file, the install's system file
# (/etc/rewind/rewind.conf for a /usr install: GNUInstallDirs maps /usr's sysconfdir to
# /etc), then the repository's sample, only for a binary whose directory is this build tree.
set(REWIND_SYSTEM_CONFIG "${CMAKE_INSTALL_FULL_SYSCONFDIR}/rewind/rewind.conf")
target_compile_definitions(rewind_config PRIVATE REWIND_SYSTEM_CONFIG="${REWIND_SYSTEM_CONFIG}"
                                                 REWIND_BUILD_TREE="${CMAKE_BINARY_DIR}"
                                                 REWIND_REPOSITORY_CONFIG="${CMAKE_SOURCE_DIR}/config/rewind.conf")

# The man page, written by rewind-man from the tables; built with rewind (scripts/package
# builds only the binaries' targets).
add_executable(rewind-man scripts/man/rewind_man.cc)
target_link_libraries(rewind-man PRIVATE rewind_pipeline)
target_compile_definitions(rewind-man PRIVATE REWIND_DOC_DIR="${CMAKE_INSTALL_FULL_DOCDIR}")
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/rewind.1 ${CMAKE_BINARY_DIR}/rewind-gen.1
                   COMMAND rewind-man ${CMAKE_BINARY_DIR}/rewind.1 ${CMAKE_BINARY_DIR}/rewind-gen.1
                   DEPENDS rewind-man
                   COMMENT "Writing the man pages build/rewind.1 and build/rewind-gen.1")
# -n: no name or time stamp in the header, so the same page compresses to the same bytes.
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/rewind.1.gz
                   COMMAND gzip -9n -c ${CMAKE_BINARY_DIR}/rewind.1 > ${CMAKE_BINARY_DIR}/rewind.1.gz
                   DEPENDS ${CMAKE_BINARY_DIR}/rewind.1
                   COMMENT "Compressing the man page build/rewind.1.gz")
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/rewind-gen.1.gz
                   COMMAND gzip -9n -c ${CMAKE_BINARY_DIR}/rewind-gen.1 > ${CMAKE_BINARY_DIR}/rewind-gen.1.gz
                   DEPENDS ${CMAKE_BINARY_DIR}/rewind-gen.1
                   COMMENT "Compressing the man page build/rewind-gen.1.gz")
# Who answers for the package (its Maintainer field and the changelog's sign-off): whoever
# builds a package to hand out sets their own address (-DREWIND_PACKAGE_MAINTAINER=...);
# the default is a placeholder on a reserved domain, which lintian accepts.
set(REWIND_PACKAGE_MAINTAINER "rewind maintainers <rewind@example.org>" CACHE STRING
    "the Debian package's Maintainer (name <address>)")
configure_file(${CMAKE_SOURCE_DIR}/cmake/changelog.in ${CMAKE_BINARY_DIR}/changelog @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/changelog.Debian.gz
                   COMMAND gzip -9n -c ${CMAKE_BINARY_DIR}/changelog > ${CMAKE_BINARY_DIR}/changelog.Debian.gz
                   DEPENDS ${CMAKE_BINARY_DIR}/changelog
                   COMMENT "Compressing the changelog build/changelog.Debian.gz")
# The bash completion, written by rewind-completion from its template and the same tables.
add_executable(rewind-completion scripts/completion/rewind_completion.cc)
target_link_libraries(rewind-completion PRIVATE rewind_pipeline)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/rewind.bash
                   COMMAND rewind-completion ${CMAKE_SOURCE_DIR}/scripts/completion/rewind.bash.in
                           ${CMAKE_BINARY_DIR}/rewind.bash
                   DEPENDS rewind-completion ${CMAKE_SOURCE_DIR}/scripts/completion/rewind.bash.in
                   COMMENT "Writing the bash completion build/rewind.bash")
add_custom_target(rewind_man_page ALL DEPENDS ${CMAKE_BINARY_DIR}/rewind.1.gz ${CMAKE_BINARY_DIR}/rewind-gen.1.gz ${CMAKE_BINARY_DIR}/changelog.Debian.gz
                                              ${CMAKE_BINARY_DIR}/rewind.bash)
add_dependencies(rewind rewind_man_page)
install(FILES ${CMAKE_BINARY_DIR}/rewind.1.gz ${CMAKE_BINARY_DIR}/rewind-gen.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES cmake/copyright ${CMAKE_BINARY_DIR}/changelog.Debian.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
# lintian's overrides, each with its reason (cmake/lintian-overrides).
install(FILES cmake/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME rewind)

install(TARGETS rewind rewind-gen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `rewind stress` runs rewind-stress from ../lib/rewind/ (pipeline/entry.h): a program of
# rewind's, not a command of the user's PATH (so no man page of its own; rewind.1 has stress).
install(TARGETS rewind-stress RUNTIME DESTINATION lib/rewind)
install(FILES config/rewind.conf config/blog.toml config/shop.toml DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The README and the docs pages compressed as Debian policy (12.3) asks of documentation over
# 4 KiB: `gzip -9n` (zless and zgrep read them). All of them, so that every page is found
# under the same name. The configuration files stay plain: they are meant to be copied.
file(GLOB REWIND_DOC_PAGES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
set(REWIND_DOC_GZ "")
foreach(page ${CMAKE_SOURCE_DIR}/README.md ${REWIND_DOC_PAGES})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${page})
  set(gz ${CMAKE_BINARY_DIR}/doc/${rel}.gz)
  get_filename_component(dir ${gz} DIRECTORY)
  add_custom_command(OUTPUT ${gz}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
                     COMMAND gzip -9n -c ${page} > ${gz}
                     DEPENDS ${page}
                     COMMENT "Compressing ${rel}")
  list(APPEND REWIND_DOC_GZ ${gz})
endforeach()
add_custom_target(rewind_doc_pages ALL DEPENDS ${REWIND_DOC_GZ})
add_dependencies(rewind rewind_doc_pages)
install(FILES ${CMAKE_BINARY_DIR}/doc/README.md.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_BINARY_DIR}/doc/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md.gz")
file(GLOB REWIND_EXAMPLE_MODELS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/config/examples/*.toml)
install(FILES ${REWIND_EXAMPLE_MODELS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# A systemd unit for `rewind replay --follow` (docs/operations.md, "Follow as a service").
install(FILES ${CMAKE_SOURCE_DIR}/config/examples/rewind-follow.service DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES tests/data/apache-combined/SOURCE.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/apache-combined)
install(FILES tests/data/apache-combined/access.log
        DESTINATION ${CMAKE_INSTALL_DATADIR}/rewind/apache-combined)
install(FILES ${CMAKE_BINARY_DIR}/rewind.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME rewind)

# rewind-gen looks for the access log at this path relative to its own directory first
# (../share/rewind/apache-combined/access.log for a default layout), then in the sources.
file(RELATIVE_PATH REWIND_DATA_FROM_BIN "/prefix/${CMAKE_INSTALL_BINDIR}"
     "/prefix/${CMAKE_INSTALL_DATADIR}/rewind/apache-combined/access.log")
target_compile_definitions(rewind_generator PRIVATE REWIND_DATA_FROM_BIN="${REWIND_DATA_FROM_BIN}")

# The package. Depends is computed by dpkg-shlibdeps from the shared libraries the binaries
# link (libmariadb, libtbb, libsimdjson, libfmt, libstdc++ ...), never written by hand.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rewind)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "rewind")
set(CPACK_PACKAGE_CONTACT "${REWIND_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "rebuild event-sourced read models from an event table in MariaDB")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${REWIND_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The shell completion is read by bash-completion; `rewind stress` draws its plots with
# gnuplot (without it, the report has no plots and says which package to install).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bash-completion")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "mariadb-client, gnuplot-nox | gnuplot")
# The extended description (the summary above is its first line in the control file).
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
       "rewind replays the events of an event table (a oneTBB flow graph over\n"
       "MariaDB Connector/C and simdjson) into shadow copies of the read models\n"
       "and swaps them in with one RENAME TABLE. It can keep following new events,\n"
       "verify live tables, ingest access logs and measure the event store.\n"
       "rewind-gen fills a sample event table.")
include(CPack)
