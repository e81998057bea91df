# The installed tool (issue #25), included from tests/CMakeLists.txt.
# install_test: the version text and the bash completion (no server).
add_executable(install_test install_test.cc)
target_link_libraries(install_test PRIVATE rewind_pipeline GTest::gtest_main)
target_compile_definitions(install_test PRIVATE REWIND_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                                REWIND_BINARY="$<TARGET_FILE:rewind>")
add_dependencies(install_test rewind)
gtest_discover_tests(install_test DISCOVERY_TIMEOUT 60)
