#include "util/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "util/strings.h"

namespace tailor {

namespace {

// The digest is fetched from the default provider once; fetching per object would cost a
// provider lookup for each of a wheel's ten thousand members.
const EVP_MD* sha256_md() {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

// libcrypto fails here only when it cannot allocate or has no SHA-256 at all (a broken
// installation); there is no useful way to go on without a hash.
[[noreturn]] void crypto_failure(const char* what) {
  std::fprintf(stderr, "tailor: error: libcrypto: %s failed\n", what);
  std::abort();
}

}  // namespace

void Sha256::Free::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : m_ctx(EVP_MD_CTX_new()) {
  if (!m_ctx || !sha256_md() || EVP_DigestInit_ex(m_ctx.get(), sha256_md(), nullptr) != 1)
    crypto_failure("SHA-256 init");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> data) {
  if (data.empty()) return;
  if (EVP_DigestUpdate(m_ctx.get(), data.data(), data.size()) != 1)
    crypto_failure("SHA-256 update");
}

Sha256::Digest Sha256::finish() {
  Digest d{};
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(m_ctx.get(), d.data(), &n) != 1 || n != d.size())
    crypto_failure("SHA-256 final");
  return d;
}

Sha256::Digest Sha256::of(std::span<const std::byte> data) {
  Digest d{};
  unsigned int n = 0;
  if (!sha256_md() ||
      EVP_Digest(data.data(), data.size(), d.data(), &n, sha256_md(), nullptr) != 1 ||
      n != d.size())
    crypto_failure("SHA-256");
  return d;
}

Expected<Sha256::Digest> Sha256::of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path + ": " + std::strerror(errno));
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.bad()) return make_error(path + ": read error");
    if (auto n = in.gcount(); n > 0)
      h.update(std::as_bytes(std::span(buf.data(), static_cast<size_t>(n))));
  }
  return h.finish();
}

std::string Sha256::hex_of(std::string_view text) {
  return hex(of(std::as_bytes(std::span<const char>(text.data(), text.size()))));
}

std::string Sha256::hex(const Digest& digest) {
  return hex_bytes(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

}  // namespace tailor
