#include "stages/fault.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rw {

void FaultPoint(const char* name) {
  static const char* const spec = std::getenv("REWIND_FAULT");
  if (spec == nullptr) return;
  static std::atomic<long> passes{0};
  const std::string s(spec);
  const std::string wanted = s.substr(0, s.find(':'));
  if (wanted != name) return;
  const long nth = s.find(':') == std::string::npos ? 1 : std::atol(s.c_str() + s.find(':') + 1);
  if (passes.fetch_add(1) + 1 != nth) return;
  std::fprintf(stderr, "rewind: fault point %s reached\n", name);
  std::fflush(stderr);
  for (;;) pause();
}

}  // namespace rw
