// Hostile files that are small on disk but name one long string many times (sections,
// DT_NEEDED, version needs, fatbin identifiers), and payloads that declare huge sizes:
// every one ends in a clear error or a bounded result, made here from bytes, not blobs.
#include <gtest/gtest.h>
#include <lz4.h>
#include <zstd.h>

#include <random>

#include "formats/decompress.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "synthetic_elf.h"

using namespace tailor;
using namespace tailor::formats;
namespace te = tailor::testing_elf;

namespace {

std::string error_of(const std::vector<std::byte>& file) {
  auto r = parse_elf(file);
  EXPECT_FALSE(r) << "hostile input parsed";
  return r ? "" : r.error().message;
}

}  // namespace

TEST(Amplification, SyntheticElfParses) {
  auto elf = parse_elf(te::with_needed({"libc.so.6", "libm.so.6"}, 2));
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_EQ(elf->needed, (std::vector<std::string>{"libc.so.6", "libm.so.6"}));
  auto vn = parse_elf(te::many_version_needs(3, 2));
  ASSERT_TRUE(vn) << vn.error().message;
  ASSERT_EQ(vn->version_needs.size(), 1u);
  EXPECT_EQ(vn->version_needs[0].versions, (std::vector<std::string>(3, "GLIBC_99")));
}

TEST(Amplification, ManySectionsNamingOneLongStringAreRefused) {
  // 20000 sections x a 30000-byte name would be 600 MB of copies.
  auto file = te::many_sections_one_name(20000, 30000);
  EXPECT_LT(file.size(), 2u << 20);
  std::string e = error_of(file);
  EXPECT_NE(e.find("exceed 4 MiB"), std::string::npos) << e;
  EXPECT_NE(e.find("section"), std::string::npos) << e;
}

TEST(Amplification, LongSectionNameIsCut) {
  auto elf = parse_elf(te::many_sections_one_name(3, 10000));
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_EQ(elf->sections.back().name.size(), 4096u);
}

TEST(Amplification, TooManySectionsAreRefused) {
  std::string e = error_of(te::many_sections_one_name(70000, 1));
  EXPECT_NE(e.find("more than the 65536 tailor reads"), std::string::npos) << e;
}

TEST(Amplification, NeededEntriesSharingOneStringAreRefused) {
  std::string e = error_of(te::with_needed({std::string(3000, 'n')}, 100000));
  EXPECT_NE(e.find("DT_NEEDED entry at 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("exceed 4 MiB"), std::string::npos) << e;
}

TEST(Amplification, TooManyNeededEntriesAreRefused) {
  std::string e = error_of(te::with_needed({"a"}, 5000));
  EXPECT_NE(e.find("more than 4096 DT_NEEDED entries"), std::string::npos) << e;
}

TEST(Amplification, NeededNameLongerThan4KiBIsRefused) {
  std::string e = error_of(te::with_needed({std::string(5000, 'n')}, 1));
  EXPECT_NE(e.find("DT_NEEDED name at 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("longer than 4096 bytes"), std::string::npos) << e;
}

TEST(Amplification, VersionNeedsSharingOneStringAreRefused) {
  std::string e = error_of(te::many_version_needs(60000, 3000));
  EXPECT_NE(e.find("version need aux record at 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("exceed 4 MiB"), std::string::npos) << e;
}

TEST(Amplification, FatbinIdentifiersSharingOneStringAreRefused) {
  auto c = te::fatbin_container(20000, 100000);
  auto r = parse_fatbin_section(c, 0x1000);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("fatbin container at 0x1000"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("entry identifiers"), std::string::npos) << r.error().message;
}

TEST(Amplification, LongFatbinIdentifierIsCut) {
  auto c = te::fatbin_container(3, 10000);
  auto r = parse_fatbin_section(c, 0);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  ASSERT_EQ((*r)[0].entries.size(), 3u);
  EXPECT_EQ((*r)[0].entries[0].identifier.size(), 4096u);
}

TEST(Amplification, TooManyFatbinEntriesAreRefused) {
  auto r = parse_fatbin_section(te::fatbin_container(70000, 0), 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than 65536 entries"), std::string::npos)
      << r.error().message;
}

namespace {

// A file [64-byte entry header][payload] and an entry describing it.
struct OneEntry {
  std::vector<std::byte> file;
  FatbinEntry entry;
};

OneEntry entry_with(const std::vector<std::byte>& compressed, FatbinCompression c,
                    uint64_t declared) {
  OneEntry o;
  o.file.resize(64);
  o.file.insert(o.file.end(), compressed.begin(), compressed.end());
  o.entry.kind = 2;
  o.entry.arch = 90;
  o.entry.header_offset = 0;
  o.entry.header_size = 64;
  o.entry.stored_size = compressed.size();
  o.entry.compressed_size = compressed.size();
  o.entry.uncompressed_size = declared;
  o.entry.compression = c;
  return o;
}

// Low-entropy but not trivially compressible bytes (ratio well below 1024).
std::vector<std::byte> sample(size_t n) {
  std::vector<std::byte> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i += 32) {  // two random bits per byte, in runs of four
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    for (size_t k = 0; k < 32 && i + k < n; ++k)
      v[i + k] = std::byte{static_cast<unsigned char>((x >> (2 * (k / 4))) & 3)};
  }
  return v;
}

std::vector<std::byte> zstd_of(const std::vector<std::byte>& in) {
  std::vector<std::byte> out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 1);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::vector<std::byte> lz4_of(const std::vector<std::byte>& in) {
  std::vector<std::byte> out(LZ4_compressBound(static_cast<int>(in.size())));
  int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                               reinterpret_cast<char*>(out.data()), static_cast<int>(in.size()),
                               static_cast<int>(out.size()));
  EXPECT_GT(n, 0);
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST(Decompress, DeclaredGigabyteOfZerosIsABomb) {
  // A ZSTD frame of zeros is a few KiB: a declared 1 GiB is refused before decoding a byte.
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  // 64 MiB of zeros in the frame; the entry declares 1 GiB (a header field).
  std::vector<std::byte> zeros(1 << 20), out(1 << 20), frame;
  for (int i = 0; i < 64; ++i) {
    ZSTD_inBuffer in{zeros.data(), zeros.size(), 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      ZSTD_compressStream2(cctx, &o, &in, i == 63 ? ZSTD_e_end : ZSTD_e_continue);
      frame.insert(frame.end(), out.begin(), out.begin() + static_cast<long>(o.pos));
    }
  }
  for (;;) {
    ZSTD_inBuffer in{nullptr, 0, 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    size_t left = ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_end);
    frame.insert(frame.end(), out.begin(), out.begin() + static_cast<long>(o.pos));
    if (left == 0) break;
  }
  ZSTD_freeCCtx(cctx);
  auto e = entry_with(frame, FatbinCompression::zstd, 1ull << 30);
  auto r = verify_entry(e.file, e.entry, 1ull << 30);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("decompression bomb"), std::string::npos) << r.error().message;
}

TEST(Decompress, LargeZstdEntryIsStreamed) {
  // 40 MiB: above the one-piece limit, so this goes through the streaming path.
  auto data = sample(40u << 20);
  auto frame = zstd_of(data);
  auto e = entry_with(frame, FatbinCompression::zstd, data.size());
  auto ok = verify_entry(e.file, e.entry, 1ull << 30);
  EXPECT_TRUE(ok) << ok.error().message;
  e.entry.uncompressed_size += 1;
  auto longer = verify_entry(e.file, e.entry, 1ull << 30);
  ASSERT_FALSE(longer);
  EXPECT_NE(longer.error().message.find("does not decode to the declared"), std::string::npos);
  e.entry.uncompressed_size -= 2;
  EXPECT_FALSE(verify_entry(e.file, e.entry, 1ull << 30));
  auto cut = entry_with(std::vector<std::byte>(frame.begin(), frame.begin() + frame.size() / 2),
                        FatbinCompression::zstd, data.size());
  EXPECT_FALSE(verify_entry(cut.file, cut.entry, 1ull << 30));
}

TEST(Decompress, LargeLz4EntryIsStreamed) {
  auto data = sample(40u << 20);
  auto block = lz4_of(data);
  auto e = entry_with(block, FatbinCompression::lz4, data.size());
  auto ok = verify_entry(e.file, e.entry, 1ull << 30);
  EXPECT_TRUE(ok) << ok.error().message;
  e.entry.uncompressed_size += 1;
  EXPECT_FALSE(verify_entry(e.file, e.entry, 1ull << 30));
}

TEST(Decompress, RingDecoderAgreesWithLz4) {
  // Small blocks, intact and damaged: the 64 KiB ring decoder and liblz4 agree on the
  // length of every block liblz4 accepts, and never run past the limit.
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    auto data = sample(1 + rng() % 200000);
    auto block = lz4_of(data);
    if (round % 3) block[rng() % block.size()] = std::byte{static_cast<unsigned char>(rng())};
    std::vector<char> out(data.size());
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(block.data()), out.data(),
                                static_cast<int>(block.size()), static_cast<int>(out.size()));
    auto ours = lz4_block_decoded_size(block, data.size());
    if (n >= 0) {
      ASSERT_TRUE(ours) << "round " << round << ": " << ours.error().message;
      EXPECT_EQ(*ours, static_cast<uint64_t>(n)) << "round " << round;
    }
    if (ours) {
      EXPECT_LE(*ours, data.size());
    }
  }
  EXPECT_FALSE(lz4_block_decoded_size({}, 10));
}
