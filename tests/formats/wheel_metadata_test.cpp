// Wheel names, WHEEL, RECORD and METADATA parsing; SHA-256 and urlsafe base64 checked
// against Python's hashlib and base64 on the same bytes.
#include <gtest/gtest.h>

#include <random>

#include "formats/wheel.h"
#include "util/base64.h"
#include "util/byte_reader.h"
#include "util/process.h"
#include "util/sha256.h"

using namespace tailor;
using namespace tailor::formats;

TEST(WheelName, ParsesTorchStyleNamesWithLocalLabel) {
  auto w =
      parse_wheel_filename("/tmp/dist/torch-2.11.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->distribution, "torch");
  EXPECT_EQ(w->version, "2.11.0+cu130");
  EXPECT_EQ(w->local_label, "cu130");
  EXPECT_EQ(w->build, "");
  EXPECT_EQ(w->tags(), std::vector<std::string>{"cp311-cp311-manylinux_2_28_x86_64"});
}

TEST(WheelName, ExpandsCompressedTagSetsAndBuildTag) {
  auto w = parse_wheel_filename(
      "numpy-2.0.0-1-cp311.cp312-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->build, "1");
  EXPECT_EQ(w->tags().size(), 4u);
  EXPECT_EQ(w->tags()[1], "cp311-abi3-manylinux2014_x86_64");
}

TEST(WheelName, RejectsMalformedNames) {
  for (const char* bad :
       {"torch.whl", "torch-2.0-cp311-cp311.whl", "torch-x2.0-cp311-cp311-linux_x86_64.whl",
        "torch-2.0-b-cp311-cp311-linux_x86_64.whl", "torch-2.0-cp311-cp311-linux x86.whl",
        "torch-2.0-cp311-cp311-linux_x86_64.zip", "torch-2.0+-py3-none-any.whl"}) {
    auto w = parse_wheel_filename(bad);
    EXPECT_FALSE(w) << bad;
  }
}

TEST(WheelFile, ReadsTagLines) {
  auto w = parse_wheel_file(
      "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.45.1)\nRoot-Is-Purelib: false\n"
      "Tag: cp311-cp311-manylinux_2_28_x86_64\r\nTag: cp311-cp311-linux_x86_64\n\n");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->wheel_version, "1.0");
  EXPECT_EQ(w->root_is_purelib, false);
  EXPECT_EQ(w->tags, (std::vector<std::string>{"cp311-cp311-manylinux_2_28_x86_64",
                                               "cp311-cp311-linux_x86_64"}));
  EXPECT_FALSE(parse_wheel_file("Generator: x\n"));
  EXPECT_FALSE(parse_wheel_file("Wheel-Version: 1.0\nTag: cp311-linux\n"));
}

TEST(Record, ParsesQuotedPathsAndEmptyHashes) {
  auto rows = parse_record(
      "pkg/__init__.py,sha256=AbC-_x,12\n"
      "\"pkg/with,comma.txt\",sha256=zz,3\r\n"
      "\"pkg/quote\"\"d\",,\n"
      "pkg-1.0.dist-info/RECORD,,\n");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].hash_algorithm, "sha256");
  EXPECT_EQ((*rows)[0].hash_value, "AbC-_x");
  EXPECT_EQ((*rows)[0].size, 12u);
  EXPECT_EQ((*rows)[1].path, "pkg/with,comma.txt");
  EXPECT_EQ((*rows)[2].path, "pkg/quote\"d");
  EXPECT_FALSE((*rows)[3].size.has_value());
  EXPECT_TRUE((*rows)[3].hash_algorithm.empty());
}

TEST(Record, ErrorsNameTheLine) {
  auto a = parse_record("a,sha256=x,1\nb,sha256=y\n");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("line 2"), std::string::npos) << a.error().message;
  auto b = parse_record("a,sha256=x,12z\n");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("not a number"), std::string::npos);
  EXPECT_FALSE(parse_record("\"a,sha256=x,1\n"));
  EXPECT_FALSE(parse_record("a,nohash,1\n"));
}

TEST(Metadata, ReadsHeaderFields) {
  auto m = parse_metadata(
      "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\nRequires-Python: >=3.10\n"
      "Requires-Dist: filelock\nRequires-Dist: nvidia-cuda-runtime==13.0.96; platform_system == "
      "\"Linux\"\n\n"
      "Name: not-a-header\n");
  EXPECT_EQ(m.name, "torch");
  EXPECT_EQ(m.version, "2.11.0+cu130");
  EXPECT_EQ(m.requires_dist.size(), 2u);
  EXPECT_EQ(m.requires_python, ">=3.10");
}

TEST(DistributionName, NormalizesLikePep503) {
  EXPECT_EQ(normalize_distribution_name("Flash_Attn"), "flash-attn");
  EXPECT_EQ(normalize_distribution_name("a.-_b"), "a-b");
}

namespace {
std::string python(const std::string& code) {
  auto r = run_command({"python3", "-c", code}, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.err;
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256::hex(Sha256::of(tailor::as_bytes(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex(Sha256::of(tailor::as_bytes("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex(Sha256::of(
                tailor::as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 empty;  // finishing without any update is the hash of nothing
  EXPECT_EQ(Sha256::hex(empty.finish()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, MatchesHashlibOnOddChunking) {
  // 1 MB + 37 bytes of a fixed pattern, fed in uneven pieces (and moved mid-way).
  std::string data;
  for (int i = 0; i < (1 << 20) + 37; ++i) data += static_cast<char>((i * 7 + i / 251) & 0xff);
  std::string expected = python(
      "import hashlib\n"
      "d = bytes(((i * 7 + i // 251) & 0xff) for i in range((1 << 20) + 37))\n"
      "print(hashlib.sha256(d).hexdigest())");
  Sha256 h;
  size_t at = 0, step = 1;
  while (at < data.size()) {
    size_t n = std::min(step, data.size() - at);
    h.update(tailor::as_bytes(std::string_view(data).substr(at, n)));
    at += n;
    step = step * 3 + 1;
    if (step > 100000) step = 5;
    if (at > data.size() / 2 && at - n <= data.size() / 2) {
      Sha256 moved = std::move(h);
      h = std::move(moved);
    }
  }
  EXPECT_EQ(Sha256::hex(h.finish()), expected);
  EXPECT_EQ(Sha256::hex(Sha256::of(tailor::as_bytes(data))), expected);
}

TEST(Base64, UrlSafeWithoutPaddingMatchesPython) {
  std::string expected = python(
      "import base64\n"
      "for n in range(0, 7):\n"
      "    print(base64.urlsafe_b64encode(bytes(range(250, 250 + n))).decode().rstrip('='))");
  std::string got;
  for (int n = 0; n < 7; ++n) {
    std::vector<std::byte> d;
    for (int i = 0; i < n; ++i) d.push_back(std::byte(250 + i));
    got += base64url_nopad_encode(d) + (n < 6 ? "\n" : "");
  }
  EXPECT_EQ(got, expected);
}

TEST(WheelCaps, MetadataFilesAreCappedAndNeverSplitIntoLines) {
  const WheelLimits limits;
  // A WHEEL of 16 MiB of newlines: refused by size, without splitting it into lines.
  std::string newlines(16u << 20, '\n');
  auto w = parse_wheel_file(newlines);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("over the limit of 1048576"), std::string::npos)
      << w.error().message;
  // Under the cap, leading blank lines end the header block at once.
  auto small = parse_wheel_file(std::string(1000, '\n') + "Wheel-Version: 1.0\n");
  ASSERT_FALSE(small);
  EXPECT_NE(small.error().message.find("no Wheel-Version"), std::string::npos);
  // METADATA of four million header lines: only the capped prefix is read.
  std::string many;
  many.reserve(4'000'000 * 5);
  many += "Name: demo\nVersion: 1\n";
  for (int i = 0; i < 4'000'000; ++i) many += "X: y\n";
  auto m = parse_metadata(many);
  EXPECT_EQ(m.name, "demo");
  EXPECT_EQ(m.version, "1");
  // RECORD: proportional to the member count, with a hard cap; rows past max_rows fail.
  EXPECT_EQ(limits.record_cap(0), limits.record_bytes_floor);
  EXPECT_EQ(limits.record_cap(10), limits.record_bytes_floor + 10 * limits.record_bytes_per_member);
  EXPECT_EQ(limits.record_cap(10'000'000), limits.max_record_bytes);
  std::string rows;
  for (int i = 0; i < 20; ++i) rows += "f" + std::to_string(i) + ",,\n";
  auto r = parse_record(rows, 19);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("RECORD line 20: more than 19 rows"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(parse_record(rows, 20));
}
