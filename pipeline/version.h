// VersionText: what this build of rewind is, for `rewind --version`: the project version
// (project() in CMakeLists.txt), the `git describe` of the checkout it was built from (absent
// when built from a source tarball), the build type and the versions of the libraries it was
// built with, as CMake found them at configure time (cmake/version.cmake). Three lines:
//
//   rewind 0.9.0 (git 2da0c74-dirty)
//   built: RelWithDebInfo
//   libraries: oneTBB 2021.8.0, simdjson 3.1.5, libmariadb 3.3.20, fmt 9.1.0
//
// Pure; thread-safe.
#pragma once

#include <string>

namespace rw {

// The project version alone, e.g. "0.9.0".
std::string VersionNumber();

// The project version with the git describe when there is one, e.g. "0.9.0 (git 2da0c74-dirty)":
// what the checkpoint rows, --stats-json and `status` record as the rewind that built a read model.
std::string BuildVersion();

// The three lines above, each ending in a newline.
std::string VersionText();

}  // namespace rw
