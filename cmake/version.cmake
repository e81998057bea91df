# The version of this build (issue #25): build/generated/rewind_version.h, read by
# pipeline/version.cc. PROJECT_VERSION comes from project() in CMakeLists.txt; the git
# description is taken at configure time, and the configure step re-runs on every commit
# or checkout (it depends on the checkout's logs/HEAD). A source tarball has no git
# checkout: the description is then empty, never an error.
set(REWIND_GIT_DESCRIBE "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${CMAKE_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --dirty
                  WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
                  OUTPUT_VARIABLE REWIND_GIT_DESCRIBE OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rewind_git_result ERROR_QUIET)
  if(NOT rewind_git_result EQUAL 0)
    set(REWIND_GIT_DESCRIBE "")
  endif()
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --path-format=absolute --git-path logs/HEAD
                  WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
                  OUTPUT_VARIABLE rewind_git_log OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rewind_git_result ERROR_QUIET)
  if(rewind_git_result EQUAL 0 AND EXISTS "${rewind_git_log}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${rewind_git_log}")
  endif()
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/rewind_version.h.in ${CMAKE_BINARY_DIR}/generated/rewind_version.h @ONLY)
target_include_directories(rewind_pipeline PRIVATE ${CMAKE_BINARY_DIR}/generated)
