// SHA-256 (FIPS 180-4), streaming. Wheels' RECORD files list a SHA-256 per member, and
// `inspect` hashes each member while inflating it so every byte is read once. Uses the
// x86 SHA extensions when the CPU has them (about 5x the portable code), chosen at run
// time so one binary runs everywhere.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tailor {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  void update(std::span<const std::byte> data);
  /// Finishes the hash; the object must not be updated afterwards.
  Digest finish();

  /// One-shot convenience.
  static Digest of(std::span<const std::byte> data);
  /// Lowercase hex of a digest.
  static std::string hex(const Digest& digest);
  /// True when the hardware (SHA-NI) path is in use on this CPU.
  static bool uses_hardware();

private:
  void compress(const uint8_t* blocks, size_t count);
  uint32_t m_state[8];
  uint8_t m_buffer[64];
  size_t m_buffered = 0;
  uint64_t m_total = 0;
};

/// Tests set this to compare the portable code with the hardware path.
extern bool sha256_force_portable_for_tests;

}  // namespace tailor
