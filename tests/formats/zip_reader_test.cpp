// The zip reader over archives made in the test by Python's zipfile (the same writer
// pip's wheel tools use), then damaged byte by byte where a test needs hostile input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "formats/zip.h"
#include "support/fixtures.h"
#include "util/mapped_file.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::formats;
namespace fs = std::filesystem;

namespace {

// Runs a Python snippet with `out` (a path) as sys.argv[1]; returns the file's bytes.
std::vector<std::byte> make_with_python(const std::string& name, const std::string& script) {
  fs::path out = test::scratch_dir("zip_test") / name;
  fs::path py = test::scratch_dir("zip_test") / (name + ".py");
  std::ofstream(py) << "import sys, zipfile, zlib, struct\nout = sys.argv[1]\n" << script;
  auto r = run_command({"python3", py.string(), out.string()}, std::chrono::seconds(120));
  EXPECT_TRUE(r.ok()) << r.err;
  std::ifstream in(out, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::byte> bytes(s.size());
  std::memcpy(bytes.data(), s.data(), s.size());
  return bytes;
}

const char* k_simple = R"(
with zipfile.ZipFile(out, 'w') as z:
    z.writestr(zipfile.ZipInfo('pkg/__init__.py'), b'print(1)\n')
    z.writestr('pkg/data.bin', bytes(range(256)) * 1000, compress_type=zipfile.ZIP_DEFLATED)
    z.writestr('pkg/empty', b'', compress_type=zipfile.ZIP_DEFLATED)
    z.writestr('pkg/sub/', b'')
)";

std::string error_of(Bytes file) {
  auto r = parse_zip(file);
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(ZipReader, ReadsStoredAndDeflatedMembers) {
  auto bytes = make_with_python("simple.zip", k_simple);
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive) << archive.error().message;
  ASSERT_EQ(archive->entries.size(), 4u);
  EXPECT_EQ(archive->entries[0].name, "pkg/__init__.py");
  EXPECT_EQ(archive->entries[0].method, k_zip_stored);
  EXPECT_EQ(archive->entries[1].method, k_zip_deflated);
  EXPECT_EQ(archive->entries[1].uncompressed_size, 256000u);
  EXPECT_LT(archive->entries[1].compressed_size, 10000u);
  EXPECT_TRUE(archive->entries[3].is_directory());

  std::vector<std::byte> buffer;
  auto init = extract_member(bytes, archive->entries[0], buffer);
  ASSERT_TRUE(init);
  EXPECT_EQ(as_chars(*init), "print(1)\n");
  auto data = extract_member(bytes, archive->entries[1], buffer);
  ASSERT_TRUE(data) << data.error().message;
  ASSERT_EQ(data->size(), 256000u);
  EXPECT_EQ(static_cast<int>((*data)[257]), 1);
  auto empty = extract_member(bytes, archive->entries[2], buffer);
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->empty());
}

TEST(ZipReader, StreamingGivesTheSameBytes) {
  auto bytes = make_with_python("simple.zip", k_simple);
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive);
  std::string streamed;
  auto r = stream_member(bytes, archive->entries[1], [&](Bytes c) { streamed += as_chars(c); });
  ASSERT_TRUE(r) << r.error().message;
  std::vector<std::byte> buffer;
  auto whole = extract_member(bytes, archive->entries[1], buffer);
  ASSERT_TRUE(whole);
  EXPECT_EQ(streamed, as_chars(*whole));
}

TEST(ZipReader, Zip64EndRecordAndExtraFields) {
  // Lowering the file-count limit makes zipfile write the zip64 end record and locator;
  // force_zip64 puts the sizes into a zip64 extra field.
  auto bytes = make_with_python("zip64.zip", R"(
zipfile.ZIP_FILECOUNT_LIMIT = 1
with zipfile.ZipFile(out, 'w', compression=zipfile.ZIP_DEFLATED) as z:
    with z.open('big.txt', 'w', force_zip64=True) as f:
        f.write(b'hello zip64\n' * 100)
    z.writestr('b.txt', b'second')
)");
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_TRUE(archive->zip64);
  ASSERT_EQ(archive->entries.size(), 2u);
  std::vector<std::byte> buffer;
  auto big = extract_member(bytes, archive->entries[0], buffer);
  ASSERT_TRUE(big) << big.error().message;
  EXPECT_EQ(big->size(), 1200u);
}

TEST(ZipReader, RefusesNamesThatEscape) {
  for (auto [name, why] : {std::pair{"../evil", "'..'"},
                           {"a/../../evil", "'..'"},
                           {"/etc/passwd", "absolute"},
                           {"a\\\\b", "backslash"}}) {
    auto bytes =
        make_with_python("evil.zip", std::string("with zipfile.ZipFile(out, 'w') as z:\n"
                                                 "    z.writestr(zipfile.ZipInfo('ok.txt'), b'x')\n"
                                                 "    z.writestr(zipfile.ZipInfo('") +
                                         name + "'), b'evil')\n");
    auto err = error_of(bytes);
    EXPECT_NE(err.find(why), std::string::npos) << name << ": " << err;
    EXPECT_NE(err.find("offset 0x"), std::string::npos) << err;
  }
}

TEST(ZipReader, RefusesTruncatedArchives) {
  auto bytes = make_with_python("simple.zip", k_simple);
  for (size_t cut : {size_t(0), size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    std::vector<std::byte> part(bytes.begin(), bytes.begin() + cut);
    EXPECT_FALSE(error_of(part).empty()) << "cut at " << cut;
  }
}

TEST(ZipReader, RefusesOffsetsAndSizesOutsideTheFile) {
  auto bytes = make_with_python("simple.zip", k_simple);
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive);
  uint64_t cd = archive->entries[1].central_offset;
  {
    auto bad = bytes;  // local header offset far past the end
    uint32_t off = 0x7fffff00;
    std::memcpy(bad.data() + cd + 42, &off, 4);
    auto err = error_of(bad);
    EXPECT_NE(err.find("local header offset 0x7fffff00"), std::string::npos) << err;
  }
  {
    auto bad = bytes;  // compressed size running into the central directory
    uint32_t size = 0x00ffffff;
    std::memcpy(bad.data() + cd + 20, &size, 4);
    auto err = error_of(bad);
    EXPECT_NE(err.find("runs past"), std::string::npos) << err;
  }
  {
    auto bad = bytes;  // central directory offset in the end record past the file
    uint64_t eocd = bytes.size() - 22;
    uint32_t off = 0xfffffff0;
    std::memcpy(bad.data() + eocd + 16, &off, 4);
    EXPECT_FALSE(error_of(bad).empty());
  }
}

TEST(ZipReader, DetectsCorruptDataAndLyingSizes) {
  auto bytes = make_with_python("simple.zip", k_simple);
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive);
  std::vector<std::byte> buffer;
  {
    auto bad = bytes;  // flip a stored byte: CRC-32 must catch it
    bad[archive->entries[0].data_offset] ^= std::byte{0x20};
    auto a = parse_zip(bad);
    ASSERT_TRUE(a);
    auto r = extract_member(bad, a->entries[0], buffer);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("CRC-32"), std::string::npos) << r.error().message;
  }
  {
    auto bad = bytes;  // declare a smaller size than the stream inflates to
    uint32_t small = 1000;
    std::memcpy(bad.data() + archive->entries[1].central_offset + 24, &small, 4);
    auto a = parse_zip(bad);
    ASSERT_TRUE(a);
    auto r = extract_member(bad, a->entries[1], buffer);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("past its declared size"), std::string::npos)
        << r.error().message;
    EXPECT_LE(buffer.size(), 1000u);
    auto s = stream_member(bad, a->entries[1], [](Bytes) {});
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("past its declared size"), std::string::npos)
        << s.error().message;
  }
}

TEST(ZipReader, RefusesAZipBombWithoutInflatingIt) {
  // 1 GiB of zeros deflates to about 1 MiB: refused from the directory alone.
  auto bytes = make_with_python("bomb.zip", R"(
with zipfile.ZipFile(out, 'w', compression=zipfile.ZIP_DEFLATED) as z:
    with z.open('zeros.bin', 'w', force_zip64=True) as f:
        chunk = bytes(1 << 24)
        for _ in range(64):
            f.write(chunk)
)");
  ASSERT_LT(bytes.size(), 4u << 20);
  auto err = error_of(bytes);
  EXPECT_NE(err.find("zip bomb"), std::string::npos) << err;
  EXPECT_NE(err.find("zeros.bin"), std::string::npos) << err;
}

TEST(ZipReader, RefusesOverlappingMembers) {
  // Member a's stored bytes are member b's whole local record: each name is valid and
  // matches its local header, but the bytes are shared (the "overlapping files" bomb).
  auto bytes = make_with_python("overlap.zip", R"(
def local(name, data):
    return struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0, zlib.crc32(data), len(data), len(data), len(name), 0) + name + data
def central(name, data, off):
    return struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0, zlib.crc32(data), len(data), len(data), len(name), 0, 0, 0, 0, 0, off) + name
b = local(b'b.txt', b'B' * 100)
a = local(b'a.txt', b)
cd = central(b'a.txt', b, 0) + central(b'b.txt', b'B' * 100, 30 + 5)
eocd = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 2, 2, len(cd), len(a), 0)
open(out, 'wb').write(a + cd + eocd)
)");
  auto err = error_of(bytes);
  EXPECT_NE(err.find("overlaps"), std::string::npos) << err;
}

TEST(ZipReader, RefusesDuplicateNamesAndUnsupportedMethods) {
  auto dup = make_with_python("dup.zip", R"(
import warnings
warnings.simplefilter('ignore')
with zipfile.ZipFile(out, 'w') as z:
    z.writestr('a.txt', b'1')
    z.writestr('a.txt', b'2')
)");
  EXPECT_NE(error_of(dup).find("appears twice"), std::string::npos) << error_of(dup);
  auto bz = make_with_python("bz2.zip", R"(
with zipfile.ZipFile(out, 'w', compression=zipfile.ZIP_BZIP2) as z:
    z.writestr('a.txt', b'hello' * 10)
)");
  EXPECT_NE(error_of(bz).find("compression method 12"), std::string::npos) << error_of(bz);
}

namespace {

// Two members of 3 chunks and 17 bytes of a fixed pseudo-random pattern, stored and
// deflated: more than one chunk each, and an odd tail.
const char* k_big = R"(
import random
r = random.Random(7)
n = 3 * 256 * 1024 + 17
data = bytes(r.getrandbits(8) if i % 3 else i & 0xff for i in range(n))
with zipfile.ZipFile(out, 'w') as z:
    z.writestr('big/stored.bin', data, compress_type=zipfile.ZIP_STORED)
    z.writestr('big/deflated.bin', data, compress_type=zipfile.ZIP_DEFLATED)
)";

// A raw zip of `n` empty stored members, written without zipfile (fast for 200,001).
std::string many_members_script(uint64_t n) {
  return "n = " + std::to_string(n) + R"(
crc = zlib.crc32(b'')
body, cd = bytearray(), bytearray()
for i in range(n):
    name = b'm/%07d' % i
    off = len(body)
    body += struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0, crc, 0, 0, len(name), 0) + name
    cd += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0, crc, 0, 0, len(name), 0, 0, 0, 0, 0, off) + name
z64 = struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, n, n, len(cd), len(body))
loc = struct.pack('<IIQI', 0x07064b50, 0, len(body) + len(cd), 1)
eocd = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 0xffff, 0xffff, len(cd), len(body), 0)
open(out, 'wb').write(bytes(body) + bytes(cd) + z64 + loc + eocd)
)";
}

}  // namespace

TEST(ZipStreaming, MembersLargerThanAChunkGiveTheSameBytesStoredAndDeflated) {
  auto bytes = make_with_python("big.zip", k_big);
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive) << archive.error().message;
  ASSERT_EQ(archive->entries.size(), 2u);
  std::vector<std::byte> buffer;
  auto whole = extract_member(bytes, archive->entries[1], buffer);
  ASSERT_TRUE(whole);
  const std::string expected(as_chars(*whole));
  ASSERT_EQ(expected.size(), 3u * k_zip_stream_chunk + 17);
  for (const auto& e : archive->entries) {
    std::string streamed;
    size_t chunks = 0;
    uint64_t consumed_from = e.data_offset, consumed_bytes = 0;
    auto r = stream_member(
        bytes, e,
        [&](Bytes c) {
          EXPECT_LE(c.size(), k_zip_stream_chunk);
          streamed += as_chars(c);
          ++chunks;
        },
        {},
        [&](uint64_t offset, uint64_t size) {
          EXPECT_EQ(offset, consumed_from) << "consumed ranges are contiguous";
          consumed_from = offset + size;
          consumed_bytes += size;
        });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(streamed, expected) << e.name;
    EXPECT_GT(chunks, 1u) << e.name;
    EXPECT_EQ(consumed_bytes, e.compressed_size)
        << "every input byte is handed back once: " << e.name;
    auto head = peek_member(bytes, e, 5);
    ASSERT_TRUE(head);
    EXPECT_EQ(*head, expected.substr(0, 5));
  }
}

TEST(ZipStreaming, CrcMismatchIsFoundAtTheEndOfTheStream) {
  auto bytes = make_with_python("big_crc.zip", k_big);
  auto archive = parse_zip(bytes);
  ASSERT_TRUE(archive);
  for (size_t i = 0; i < 2; ++i) {
    auto bad = bytes;  // the central directory's CRC-32 of the member, off by one bit
    bad[archive->entries[i].central_offset + 16] ^= std::byte{1};
    auto a = parse_zip(bad);
    ASSERT_TRUE(a);
    uint64_t seen = 0;
    auto r = stream_member(bad, a->entries[i], [&](Bytes c) { seen += c.size(); });
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("CRC-32"), std::string::npos) << r.error().message;
    EXPECT_EQ(seen, a->entries[i].uncompressed_size) << "every chunk passed before the check";
  }
  {
    auto bad = bytes;  // a flipped byte deep inside the stored member
    bad[archive->entries[0].data_offset + 2 * k_zip_stream_chunk + 5] ^= std::byte{0x40};
    auto a = parse_zip(bad);
    ASSERT_TRUE(a);
    auto r = stream_member(bad, a->entries[0], [](Bytes) {});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("CRC-32"), std::string::npos) << r.error().message;
  }
}

TEST(ZipCaps, TooManyMembersAreRefusedFromTheEndRecord) {
  ZipLimits defaults;
  EXPECT_EQ(defaults.max_entries, 200'000u);
  auto bytes = make_with_python("many.zip", many_members_script(defaults.max_entries + 1));
  auto err = error_of(bytes);
  EXPECT_NE(err.find("200001 entries exceed the limit of 200000"), std::string::npos) << err;
  // Under the cap the same layout reads.
  auto fine = make_with_python("some.zip", many_members_script(1000));
  auto a = parse_zip(fine);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->entries.size(), 1000u);
}

TEST(ZipCaps, ManySmallZeroBombsAreRefusedByTheInflateBudget) {
  // 1,000 members of 16 MiB of zeros (each under the per-member ratio floor) in a 16 MB
  // archive: 16 GiB declared, a thousand times the archive.
  auto bytes = make_with_python("zeros.zip", R"(
c = zlib.compressobj(9, zlib.DEFLATED, -15)
raw = c.compress(bytes(16 << 20)) + c.flush()
crc = zlib.crc32(bytes(16 << 20))
body, cd = bytearray(), bytearray()
for i in range(1000):
    name = b'z/%04d.bin' % i
    off = len(body)
    body += struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 8, 0, 0, crc, len(raw), 16 << 20, len(name), 0) + name + raw
    cd += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 8, 0, 0, crc, len(raw), 16 << 20, len(name), 0, 0, 0, 0, 0, off) + name
eocd = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 1000, 1000, len(cd), len(body), 0)
open(out, 'wb').write(bytes(body) + bytes(cd) + eocd)
)");
  ASSERT_LT(bytes.size(), 32u << 20);
  auto err = error_of(bytes);
  EXPECT_NE(err.find("refused as a zip bomb before inflating anything"), std::string::npos) << err;
  // The absolute budget: a lower cap refuses by the running total of declared sizes.
  ZipLimits tight;
  tight.max_total_bytes = uint64_t{100} << 20;
  auto r = parse_zip(bytes, tight);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("inflate budget"), std::string::npos) << r.error().message;
}
