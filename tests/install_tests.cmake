# The installed tool (issue #25), included from tests/CMakeLists.txt.
# install_test: the version text and the bash completion (no server).
add_executable(install_test install_test.cc)
target_link_libraries(install_test PRIVATE rewind_pipeline GTest::gtest_main)
target_compile_definitions(install_test PRIVATE REWIND_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                                REWIND_BINARY="$<TARGET_FILE:rewind>"
                                                REWIND_COMPLETION="${CMAKE_BINARY_DIR}/rewind.bash")
add_dependencies(install_test rewind rewind_man_page)
gtest_discover_tests(install_test DISCOVERY_TIMEOUT 60)

# package_test: `cmake --install` of this build tree and its .deb (cpack on this tree's own
# configuration, so nothing is rebuilt), checked with dpkg-deb; no system-wide install.
add_test(NAME Package.InstallAndDeb
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/package_test.sh ${CMAKE_BINARY_DIR} ${CMAKE_COMMAND} ${CMAKE_CPACK_COMMAND})
set_tests_properties(Package.InstallAndDeb PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)

# tool_test: the binary as a process, no server: --version, the config search, the man page.
add_executable(tool_test tool_test.cc)
target_link_libraries(tool_test PRIVATE rewind_pipeline GTest::gtest_main)
target_compile_definitions(tool_test PRIVATE REWIND_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                             REWIND_BINARY="$<TARGET_FILE:rewind>"
                                             REWIND_MAN_PAGE="${CMAKE_BINARY_DIR}/rewind.1"
                                             REWIND_STRESS_BINARY="$<TARGET_FILE:rewind-stress>")
add_dependencies(tool_test rewind rewind-stress rewind_man_page)
gtest_discover_tests(tool_test DISCOVERY_TIMEOUT 60)

# service_test: the systemd unit (config/examples/rewind-follow.service): its sandbox's
# exposure, and its command line run as its own unprivileged user with the config as a
# credential, against the private server (needs root: setpriv and a mount namespace).
add_test(NAME Service.UnitCommandLineAsItsUser
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/service_test.sh $<TARGET_FILE:rewind> $<TARGET_FILE:rewind-gen>)
set_tests_properties(Service.UnitCommandLineAsItsUser PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
