#include "formats/decompress.h"

#include <lz4.h>
#include <zstd.h>

#include <array>
#include <charconv>
#include <limits>
#include <memory>

namespace tailor::formats {
namespace {

std::string hex(uint64_t v) {
  std::array<char, 24> buf{};
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, 16);
  return "0x" + std::string(buf.data(), r.ptr);
}

std::string where(const FatbinEntry& e) {
  return "fatbin entry at " + hex(e.header_offset) + " (" + e.target_name() + ")";
}

}  // namespace

Expected<std::vector<std::byte>> decompress_entry(Bytes file, const FatbinEntry& entry,
                                                  uint64_t max_output) {
  auto start = checked_add(entry.header_offset, entry.header_size);
  auto payload = start ? strict_substr(file, *start, entry.stored_size) : std::nullopt;
  if (!payload)
    return make_error(where(entry) + ": payload (" + hex(entry.stored_size) +
                      " bytes) runs past end of file (size " + hex(file.size()) + ")");
  if (entry.uncompressed_size > max_output)
    return make_error(where(entry) + ": declared size " + hex(entry.uncompressed_size) +
                      " exceeds the limit of " + hex(max_output) + " bytes");
  std::vector<std::byte> out;
  switch (entry.compression) {
    case FatbinCompression::none:
      out.assign(payload->begin(), payload->end());
      return out;
    case FatbinCompression::unknown:
      return make_error(where(entry) + ": unsupported compression (flags " + hex(entry.flags) + ")");
    case FatbinCompression::lz4: {
      constexpr uint64_t k_int_max = std::numeric_limits<int>::max();
      if (entry.compressed_size > k_int_max || entry.uncompressed_size > k_int_max)
        return make_error(where(entry) + ": LZ4 block larger than 2 GiB");
      out.resize(entry.uncompressed_size);
      int n = LZ4_decompress_safe(reinterpret_cast<const char*>(payload->data()),
                                  reinterpret_cast<char*>(out.data()),
                                  static_cast<int>(entry.compressed_size),
                                  static_cast<int>(out.size()));
      if (n < 0 || static_cast<uint64_t>(n) != entry.uncompressed_size)
        return make_error(where(entry) + ": LZ4 block does not decode to the declared " +
                          hex(entry.uncompressed_size) + " bytes");
      return out;
    }
    case FatbinCompression::zstd: {
      out.resize(entry.uncompressed_size);
      std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
      if (!ctx) return make_error(where(entry) + ": out of memory for a ZSTD context");
      size_t n = ZSTD_decompressDCtx(ctx.get(), out.data(), out.size(), payload->data(),
                                     entry.compressed_size);
      if (ZSTD_isError(n) || n != entry.uncompressed_size)
        return make_error(where(entry) + ": ZSTD frame does not decode to the declared " +
                          hex(entry.uncompressed_size) + " bytes" +
                          (ZSTD_isError(n) ? std::string(" (") + ZSTD_getErrorName(n) + ")" : ""));
      return out;
    }
  }
  return make_error(where(entry) + ": unsupported compression");
}

}  // namespace tailor::formats
