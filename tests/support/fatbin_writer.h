// Fatbin containers written byte by byte, as nvcc lays them out (formats/fatbin.h reads
// them): a 16-byte container header (magic 0xBA55ED50, version, header size, payload size)
// and 64-byte entry headers, each followed by its payload. Shared by the formats, inspect,
// slim and outputs tests; knows no CUDA model (the formats tests may not use one): kinds
// and arch numbers are the raw header fields.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace tailor::test {

/// Writes `v` little-endian at `at`; a write past the end fails the test and writes nothing.
template <typename T>
void put(std::vector<std::byte>& bytes, uint64_t at, T v) {
  if (at > bytes.size() || sizeof v > bytes.size() - at) {
    ADD_FAILURE() << "put of " << sizeof v << " bytes at " << at << " runs past " << bytes.size();
    return;
  }
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

inline constexpr uint32_t k_fatbin_magic = 0xBA55ED50;
/// Entry header flags: nvcc's `a` (sm_90a) and `f` (sm_100f) variants.
inline constexpr uint64_t k_entry_arch_specific = 0x100000, k_entry_family = 0x200000;

/// One entry of a written container.
struct FatbinEntrySpec {
  uint16_t kind = 2;      ///< 1 PTX, 2 cubin (SASS), 8 LTO IR; anything else is an unknown kind
  uint32_t arch = 80;     ///< the SM number: 75, 90, 120
  uint64_t payload = 64;  ///< payload bytes, a multiple of 8
  uint64_t flags = 0;     ///< k_entry_arch_specific, k_entry_family (0: uncompressed, no variant)
};

/// A 16-byte container header for `fat_size` bytes of entries.
inline std::vector<std::byte> fatbin_header(uint64_t fat_size, uint16_t version = 1,
                                            uint16_t header_size = 16) {
  std::vector<std::byte> h(16);
  put<uint32_t>(h, 0, k_fatbin_magic);
  put<uint16_t>(h, 4, version);
  put<uint16_t>(h, 6, header_size);
  put<uint64_t>(h, 8, fat_size);
  return h;
}

/// One container of `entries`, uncompressed. Entry i's payload bytes are 0xA0 + i % 0x60:
/// never zero, so a test can tell a payload from bytes zeroed after it, and tell entries apart.
inline std::vector<std::byte> fatbin_container(const std::vector<FatbinEntrySpec>& entries) {
  uint64_t body = 0;
  for (const auto& e : entries) body += 64 + e.payload;
  std::vector<std::byte> c = fatbin_header(body);
  c.resize(16 + body);
  uint64_t at = 16;
  for (size_t i = 0; i < entries.size(); ++i) {
    const FatbinEntrySpec& e = entries[i];
    put<uint16_t>(c, at, e.kind);
    put<uint32_t>(c, at + 4, 64);  // header size
    put<uint64_t>(c, at + 8, e.payload);
    put<uint32_t>(c, at + 0x1c, e.arch);
    put<uint64_t>(c, at + 0x28, e.flags);
    put<uint64_t>(c, at + 0x38, e.payload);  // uncompressed size
    std::fill(c.begin() + static_cast<ptrdiff_t>(at + 64),
              c.begin() + static_cast<ptrdiff_t>(at + 64 + e.payload), std::byte(0xA0 + i % 0x60));
    at += 64 + e.payload;
  }
  return c;
}

/// `n` bytes of `value`: filler around containers.
inline std::vector<std::byte> filled(size_t n, unsigned char value) {
  return std::vector<std::byte>(n, std::byte{value});
}

/// The parts one after another.
inline std::vector<std::byte> concat(std::initializer_list<std::vector<std::byte>> parts) {
  std::vector<std::byte> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

/// The bytes of a text.
inline std::vector<std::byte> text_bytes(const std::string& text) {
  std::vector<std::byte> b(text.size());
  if (!text.empty()) std::memcpy(b.data(), text.data(), text.size());
  return b;
}

/// A hostile section for the embedded-container scan: `n` empty 64-byte sm_80 entries, each
/// hosting a container header in its ignored tail (the reserved field and the uncompressed
/// size of an uncompressed entry) whose entries run up to a last one that fails (header
/// size 0). Every hosted candidate walks every later entry: n^2/2 entry reads unless the
/// scan bounds the work that failed candidates cost.
inline std::vector<std::byte> candidate_chain(uint64_t n) {
  std::vector<std::byte> s((n + 1) * 64);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t e = i * 64;
    put<uint16_t>(s, e, 2);
    put<uint32_t>(s, e + 4, 64);
    put<uint32_t>(s, e + 0x1c, 80);
    put<uint32_t>(s, e + 0x30, k_fatbin_magic);
    put<uint16_t>(s, e + 0x34, 1);
    put<uint16_t>(s, e + 0x36, 16);
    put<uint64_t>(s, e + 0x38, s.size() - (e + 0x30) - 16);
  }
  put<uint16_t>(s, n * 64, 2);  // the last entry: header size 0
  return s;
}

}  // namespace tailor::test
