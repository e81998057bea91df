#include "base/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

namespace rw {
namespace {

// The algorithm fetched once (a fetch per call costs more than hashing a URL), and one
// digest context per thread.
const EVP_MD* Sha256Md() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

EVP_MD_CTX* ThreadContext() {
  thread_local const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx.get();
}

}  // namespace

// libcrypto uses the CPU's SHA instructions where there are (SHA-NI), else its assembler
// (perf/sha256_bench.cc: the pair against the hand-written one it replaced).
Sha256Digest Sha256(std::string_view bytes) {
  Sha256Digest out;
  EVP_MD_CTX* ctx = ThreadContext();
  unsigned int size = 0;
  if (ctx == nullptr || Sha256Md() == nullptr || EVP_DigestInit_ex2(ctx, Sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, bytes.data(), bytes.size()) != 1 || EVP_DigestFinal_ex(ctx, out.data(), &size) != 1) {
    std::abort();  // only out of memory: a digest of the wrong bytes would corrupt tables silently
  }
  return out;
}

std::string Sha256Hex(std::string_view text, size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const Sha256Digest d = Sha256(text);
  std::string out;
  for (size_t i = 0; i < bytes && i < d.size(); ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

}  // namespace rw
