// SHA-256, streaming, by OpenSSL's libcrypto (EVP). Wheels' RECORD files list a SHA-256
// per member, and `inspect` hashes each member while inflating it so every byte is read
// once. libcrypto picks its fastest code for the CPU at run time (SHA-NI, AVX2, ARMv8
// crypto extensions), and it is a library every distribution keeps patched.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "util/expected.h"

struct evp_md_ctx_st;

namespace tailor {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> data);
  /// Finishes the hash; the object must not be updated afterwards.
  Digest finish();

  /// One-shot convenience.
  static Digest of(std::span<const std::byte> data);
  /// A whole file, read in 1 MiB chunks; errors name the path.
  static Expected<Digest> of_file(const std::string& path);
  /// Lowercase hex of a digest.
  static std::string hex(const Digest& digest);
  /// Lowercase hex of the digest of `text`.
  static std::string hex_of(std::string_view text);

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> m_ctx;
};

}  // namespace tailor
