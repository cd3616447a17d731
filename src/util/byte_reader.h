// Bounds-checked reads of untrusted bytes: every offset and size is checked against the
// span before use; integers are read with memcpy as little-endian (never pointer casts).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace tailor {

using Bytes = std::span<const std::byte>;

/// a + b without wrap-around; nullopt on overflow.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// The sub-span [offset, offset+size) of bytes, or nullopt when it does not fit.
inline std::optional<Bytes> strict_substr(Bytes bytes, uint64_t offset, uint64_t size) {
  auto end = checked_add(offset, size);
  if (!end || *end > bytes.size()) return std::nullopt;
  return bytes.subspan(static_cast<size_t>(offset), static_cast<size_t>(size));
}

/// Little-endian fixed-size integer at offset, or nullopt when out of range.
template <typename T>
std::optional<T> read_le(Bytes bytes, uint64_t offset) {
  auto end = checked_add(offset, sizeof(T));
  if (!end || *end > bytes.size()) return std::nullopt;
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "host must be little-endian");
  return v;
}

inline std::string_view as_chars(Bytes b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}
inline Bytes as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace tailor
