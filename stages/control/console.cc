#include "stages/control/console.h"

#include <cstdio>
#include <string>

#include "stages/control/progress.h"

namespace rw {
namespace console_internal {
std::mutex& Mutex() {
  static std::mutex mu;
  return mu;
}
Progress*& ActiveLocked() {
  static Progress* active = nullptr;
  return active;
}
}  // namespace console_internal

void PrintLine(std::string_view line) {
  std::lock_guard<std::mutex> lock(console_internal::Mutex());
  const std::string text = "rewind: " + std::string(line) + "\n";
  const Progress* active = console_internal::ActiveLocked();
  if (active == nullptr) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    return;
  }
  std::FILE* out = active->stream();
  if (active->redraws_in_place()) {
    // Erase the line being drawn, the message on its own line, the progress line again.
    std::fputs(("\r\033[K" + text + active->Frame()).c_str(), out);
  } else {
    std::fputs(text.c_str(), out);
  }
  std::fflush(out);
}

}  // namespace rw
