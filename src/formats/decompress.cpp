#include "formats/decompress.h"

#include <lz4.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "util/strings.h"

namespace tailor::formats {
namespace {

// The entry's raw header fields: naming it as a target ("sm_80") is the CUDA model's job,
// which formats does not know.
std::string where(const FatbinEntry& e) {
  return "fatbin entry at " + hex_number(e.header_offset) + " (kind " + std::to_string(e.kind) +
         ", arch " + std::to_string(e.arch) + ")";
}

}  // namespace

Expected<std::vector<std::byte>> decompress_entry(Bytes file, const FatbinEntry& entry,
                                                  uint64_t max_output) {
  auto start = checked_add(entry.header_offset, entry.header_size);
  auto payload = start ? strict_substr(file, *start, entry.stored_size) : std::nullopt;
  if (!payload)
    return make_error(where(entry) + ": payload (" + hex_number(entry.stored_size) +
                      " bytes) runs past end of file (size " + hex_number(file.size()) + ")");
  if (entry.compression != FatbinCompression::none && entry.compressed_size > payload->size())
    return make_error(where(entry) + ": compressed size " + hex_number(entry.compressed_size) +
                      " exceeds its payload size " + hex_number(payload->size()));
  if (entry.uncompressed_size > max_output)
    return make_error(where(entry) + ": declared size " + hex_number(entry.uncompressed_size) +
                      " exceeds the limit of " + hex_number(max_output) + " bytes");
  std::vector<std::byte> out;
  switch (entry.compression) {
    case FatbinCompression::none:
      out.assign(payload->begin(), payload->end());
      return out;
    case FatbinCompression::unknown:
      return make_error(where(entry) + ": unsupported compression (flags " +
                        hex_number(entry.flags) + ")");
    case FatbinCompression::lz4: {
      constexpr uint64_t k_int_max = std::numeric_limits<int>::max();
      if (entry.compressed_size > k_int_max || entry.uncompressed_size > k_int_max)
        return make_error(where(entry) + ": LZ4 block larger than 2 GiB");
      out.resize(entry.uncompressed_size);
      int n = LZ4_decompress_safe(
          reinterpret_cast<const char*>(payload->data()), reinterpret_cast<char*>(out.data()),
          static_cast<int>(entry.compressed_size), static_cast<int>(out.size()));
      if (n < 0 || static_cast<uint64_t>(n) != entry.uncompressed_size)
        return make_error(where(entry) + ": LZ4 block does not decode to the declared " +
                          hex_number(entry.uncompressed_size) + " bytes");
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
                          hex_number(entry.uncompressed_size) + " bytes" +
                          (ZSTD_isError(n) ? std::string(" (") + ZSTD_getErrorName(n) + ")" : ""));
      return out;
    }
  }
  return make_error(where(entry) + ": unsupported compression");
}

namespace {

// Entries up to this size are decoded in one piece (fast); larger ones are streamed.
constexpr uint64_t k_one_piece = 32u << 20;
constexpr int k_zstd_window_log_max = 26;  // 64 MiB
constexpr uint64_t k_max_ratio = 1024;

Error lz4_error(uint64_t at, const std::string& what) {
  return make_error("LZ4 block byte " + hex_number(at) + ": " + what);
}

}  // namespace

Expected<uint64_t> lz4_block_decoded_size(Bytes block, uint64_t limit) {
  constexpr size_t k_window = 1u << 16;  // LZ4 offsets are 16 bits
  std::vector<uint8_t> ring(k_window);
  const size_t n = block.size();
  auto in = [&](size_t i) { return static_cast<uint8_t>(block[i]); };
  uint64_t out = 0;
  size_t ip = 0;
  // A length continues in bytes of 255 until one below 255.
  auto extend = [&](uint64_t& len) -> bool {
    uint8_t b;
    do {
      if (ip >= n) return false;
      b = in(ip++);
      len += b;
    } while (b == 255);
    return true;
  };
  while (true) {
    if (ip >= n) return lz4_error(ip, "block ends before its last sequence");
    const uint8_t token = in(ip++);
    uint64_t literals = token >> 4;
    if (literals == 15 && !extend(literals))
      return lz4_error(ip, "literal length runs past the block");
    if (literals > n - ip) return lz4_error(ip, "literals run past the block");
    if (literals > limit - out)
      return lz4_error(ip, "decodes to more than " + hex_number(limit) + " bytes");
    for (uint64_t done = 0; done < literals;) {  // in at most two pieces around the wrap
      const size_t dst = (out + done) & (k_window - 1);
      const size_t n = std::min<uint64_t>(literals - done, k_window - dst);
      std::memcpy(ring.data() + dst, block.data() + ip + done, n);
      done += n;
    }
    out += literals;
    ip += literals;
    if (ip == n) break;  // the last sequence has literals only
    if (n - ip < 2) return lz4_error(ip, "match offset runs past the block");
    const uint64_t offset = in(ip) | (uint64_t{in(ip + 1)} << 8);
    ip += 2;
    // Offset 0 is outside the format, but liblz4's safe decoder accepts it (the one-piece
    // path): so do we, to give the same verdict on either side of k_one_piece.
    if (offset > out)
      return lz4_error(ip - 2, "match offset " + hex_number(offset) + " points before the output");
    uint64_t length = token & 15;
    if (length == 15 && !extend(length)) return lz4_error(ip, "match length runs past the block");
    length += 4;
    if (length > limit - out)
      return lz4_error(ip, "decodes to more than " + hex_number(limit) + " bytes");
    if (offset == 1) {  // a run of one byte (the common case in zero-filled data)
      const uint8_t c = ring[(out - 1) & (k_window - 1)];
      for (uint64_t done = 0; done < length;) {
        const size_t dst = (out + done) & (k_window - 1);
        const size_t n = std::min<uint64_t>(length - done, k_window - dst);
        std::memset(ring.data() + dst, c, n);
        done += n;
      }
      out += length;
      continue;
    }
    // Pieces of at most `offset` bytes never overlap their source; the wrap splits them too.
    for (uint64_t done = 0; done < length;) {
      const size_t dst = (out + done) & (k_window - 1);
      const size_t src = (out + done - offset) & (k_window - 1);
      const size_t n = std::min<uint64_t>(
          {length - done, std::max<uint64_t>(offset, 1), k_window - dst, k_window - src});
      std::memmove(ring.data() + dst, ring.data() + src, n);
      done += n;
    }
    out += length;
  }
  return out;
}

Expected<void> verify_entry(Bytes file, const FatbinEntry& entry, uint64_t max_output) {
  auto start = checked_add(entry.header_offset, entry.header_size);
  auto payload = start ? strict_substr(file, *start, entry.stored_size) : std::nullopt;
  if (!payload)
    return make_error(where(entry) + ": payload (" + hex_number(entry.stored_size) +
                      " bytes) runs past end of file (size " + hex_number(file.size()) + ")");
  if (entry.compression != FatbinCompression::none && entry.compressed_size > payload->size())
    return make_error(where(entry) + ": compressed size " + hex_number(entry.compressed_size) +
                      " exceeds its payload size " + hex_number(payload->size()));
  if (entry.uncompressed_size > max_output)
    return make_error(where(entry) + ": declared size " + hex_number(entry.uncompressed_size) +
                      " exceeds the limit of " + hex_number(max_output) + " bytes");
  if (entry.compression == FatbinCompression::none) return {};
  if (entry.compression == FatbinCompression::unknown)
    return make_error(where(entry) + ": unsupported compression (flags " + hex_number(entry.flags) +
                      ")");
  if (entry.uncompressed_size / k_max_ratio > entry.compressed_size)
    return make_error(where(entry) + ": declared size " + hex_number(entry.uncompressed_size) +
                      " is more than " + std::to_string(k_max_ratio) +
                      " times its compressed size " + hex_number(entry.compressed_size) +
                      " (a decompression bomb)");
  if (entry.uncompressed_size <= k_one_piece) {
    auto out = decompress_entry(file, entry, max_output);
    if (!out) return out.error();
    return {};
  }
  const Bytes compressed = payload->first(entry.compressed_size);
  if (entry.compression == FatbinCompression::lz4) {
    auto n = lz4_block_decoded_size(compressed, entry.uncompressed_size);
    if (!n || *n != entry.uncompressed_size)
      return make_error(where(entry) + ": LZ4 block does not decode to the declared " +
                        hex_number(entry.uncompressed_size) + " bytes" +
                        (n ? "" : " (" + n.error().message + ")"));
    return {};
  }
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) return make_error(where(entry) + ": out of memory for a ZSTD context");
  ZSTD_DCtx_setParameter(ctx.get(), ZSTD_d_windowLogMax, k_zstd_window_log_max);
  std::vector<std::byte> buffer(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  uint64_t total = 0;
  auto mismatch = [&](const std::string& why) {
    return make_error(where(entry) + ": ZSTD frame does not decode to the declared " +
                      hex_number(entry.uncompressed_size) + " bytes (" + why + ")");
  };
  size_t last = 1;
  while (in.pos < in.size) {
    ZSTD_outBuffer out{buffer.data(), buffer.size(), 0};
    const size_t before = in.pos;
    last = ZSTD_decompressStream(ctx.get(), &out, &in);
    if (ZSTD_isError(last)) {
      if (ZSTD_getErrorCode(last) == ZSTD_error_frameParameter_windowTooLarge)
        return make_error(where(entry) + ": ZSTD frame needs a window above the " +
                          std::to_string((1u << k_zstd_window_log_max) >> 20) +
                          " MiB tailor allows");
      return mismatch(ZSTD_getErrorName(last));
    }
    total += out.pos;
    if (total > entry.uncompressed_size) return mismatch("it decodes to more");
    if (out.pos == 0 && in.pos == before) return mismatch("no progress");
  }
  // Input used up: flush what the decoder still holds.
  while (last != 0) {
    ZSTD_outBuffer out{buffer.data(), buffer.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &out, &in);
    if (ZSTD_isError(last)) return mismatch(ZSTD_getErrorName(last));
    total += out.pos;
    if (total > entry.uncompressed_size) return mismatch("it decodes to more");
    if (out.pos == 0 && last != 0) return mismatch("the frame is truncated");
  }
  if (total != entry.uncompressed_size) return mismatch("it decodes to " + hex_number(total));
  return {};
}

}  // namespace tailor::formats
