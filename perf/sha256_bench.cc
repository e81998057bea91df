// The A/B pair of issue 52 (item 6): SHA-256 by libcrypto (base/sha256.cc) against the
// hand-written one it replaced (perf/sha256_by_hand.cc), on the keys rewind hashes: URLs of
// the blog's length and long VARCHAR keys of declared read models. Rounds alternate A and B;
// the median of each is printed, in nanoseconds per hash, with the CPU's SHA instructions'
// presence. Both sides must give the same digests (checked first).
//
//   build/perf/sha256_bench [--rounds R] [--hashes N]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "perf/sha256_by_hand.h"

namespace {

template <typename F>
double NanosPerHash(const std::vector<std::string>& keys, size_t hashes, F&& hash) {
  unsigned sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < hashes; ++i) sink += hash(keys[i % keys.size()])[0];
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  if (sink == 0xFFFFFFFF) std::puts("");  // keeps the work
  return ns / static_cast<double>(hashes);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t rounds = 7, hashes = 2'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--hashes") == 0) hashes = std::strtoul(argv[i + 1], nullptr, 10);
  }
  std::ifstream cpu("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpu)), std::istreambuf_iterator<char>());
  fmt::print("CPU SHA instructions (sha_ni): {}\n", info.find(" sha_ni") != std::string::npos ? "yes" : "no");
  struct Size {
    const char* what;
    size_t bytes;
  };
  for (const Size size : {Size{"URL (60 bytes)", 60}, Size{"long key (700 bytes)", 700}}) {
    std::vector<std::string> keys;
    for (int k = 0; k < 1024; ++k) {
      std::string key = fmt::format("https://blog.example/posts/{}/", k);
      while (key.size() < size.bytes) key += static_cast<char>('a' + (key.size() * 7 + k) % 26);
      keys.push_back(key.substr(0, size.bytes));
    }
    for (const std::string& k : keys) {
      if (rw::Sha256(k) != rw::by_hand::Sha256(k)) {
        fmt::print(stderr, "the two SHA-256 differ on a key of {} bytes\n", k.size());
        return 1;
      }
    }
    std::vector<double> a, b;
    for (size_t r = 0; r < rounds; ++r) {
      a.push_back(NanosPerHash(keys, hashes, [](const std::string& k) { return rw::Sha256(k); }));
      b.push_back(NanosPerHash(keys, hashes, [](const std::string& k) { return rw::by_hand::Sha256(k); }));
    }
    fmt::print("{}: libcrypto {:.1f} ns, by hand {:.1f} ns per hash (medians of {}): by hand / libcrypto = {:.2f}\n",
               size.what, Median(a), Median(b), rounds, Median(b) / Median(a));
  }
  return 0;
}
