#include "base/fault.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace rw {

void FaultPoint(const char* name) {
  static const char* const spec = std::getenv("REWIND_FAULT");
  if (spec == nullptr) return;
  static std::atomic<long> passes{0};
  std::string s(spec), resume_file;
  if (const auto at = s.find('@'); at != std::string::npos) {
    resume_file = s.substr(at + 1);
    s = s.substr(0, at);
  }
  const auto colon = s.find(':');
  if (s.substr(0, colon) != name) return;
  const long nth = colon == std::string::npos ? 1 : std::atol(s.c_str() + colon + 1);
  if (passes.fetch_add(1) + 1 != nth) return;
  std::fprintf(stderr, "rewind: fault point %s reached\n", name);
  std::fflush(stderr);
  if (resume_file.empty()) {
    for (;;) pause();
  }
  while (!std::filesystem::exists(resume_file)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace rw
