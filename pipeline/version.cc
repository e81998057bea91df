#include "pipeline/version.h"

#include <fmt/core.h>

#include <string_view>

#include "rewind_version.h"

namespace rw {
namespace {

// A version CMake did not find reads "unknown" rather than an empty word.
std::string_view Known(std::string_view v) { return v.empty() ? std::string_view("unknown") : v; }

}  // namespace

std::string VersionNumber() { return REWIND_VERSION; }

std::string BuildVersion() {
  const std::string_view git = REWIND_GIT_DESCRIBE;
  return fmt::format("{}{}", REWIND_VERSION,
                     git.empty() ? std::string() : fmt::format(" (git {})", git));
}

std::string VersionText() {
  return fmt::format(
      "rewind {}\n"
      "built: {}\n"
      "libraries: oneTBB {}, simdjson {}, libmariadb {}, fmt {}, toml++ {}, CLI11 {}, "
      "nlohmann-json {}\n",
      BuildVersion(), Known(REWIND_BUILD_TYPE), Known(REWIND_TBB_VERSION),
      Known(REWIND_SIMDJSON_VERSION), Known(REWIND_MARIADB_VERSION), Known(REWIND_FMT_VERSION),
      Known(REWIND_TOMLPP_VERSION), Known(REWIND_CLI11_VERSION), Known(REWIND_JSON_VERSION));
}

}  // namespace rw
