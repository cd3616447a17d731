// The zip reader over archives made in the test by Python's zipfile (the same writer
// pip's wheel tools use), then damaged byte by byte where a test needs hostile input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "formats/zip.h"
#include "util/mapped_file.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::formats;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  static fs::path dir = [] {
    auto d = fs::temp_directory_path() / ("tailor_zip_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Runs a Python snippet with `out` (a path) as sys.argv[1]; returns the file's bytes.
std::vector<std::byte> make_with_python(const std::string& name, const std::string& script) {
  fs::path out = temp_dir() / name;
  fs::path py = temp_dir() / (name + ".py");
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
  for (auto [name, why] : {std::pair{"../evil", "'..'"}, {"a/../../evil", "'..'"}, {"/etc/passwd", "absolute"},
                           {"a\\\\b", "backslash"}}) {
    auto bytes = make_with_python("evil.zip", std::string("with zipfile.ZipFile(out, 'w') as z:\n"
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
    EXPECT_NE(r.error().message.find("past its declared size"), std::string::npos) << r.error().message;
    EXPECT_LE(buffer.size(), 1000u);
    auto s = stream_member(bad, a->entries[1], [](Bytes) {});
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("past its declared size"), std::string::npos) << s.error().message;
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
