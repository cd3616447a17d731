// The deterministic zip writer: archives read back by tailor's own reader, by Python's
// zipfile and by Info-ZIP's `unzip -t`; the same input gives the same bytes whatever the
// source files' times, how the bytes arrive (memory, file, producer chunks); zip64 where
// forced and where the entry count needs it; bad input leaves no file behind.
#include "formats/zip_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

void write_file(const fs::path& p, const std::string& text, fs::perms perms = fs::perms(0644)) {
  std::ofstream(p, std::ios::binary) << text;
  fs::permissions(p, perms);
}

void set_mtime(const fs::path& p, int64_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
}

// Bytes that compress, but not to nothing: several deflate blocks.
std::string sample_text(size_t n, unsigned seed) {
  std::string s;
  s.reserve(n);
  uint32_t x = seed;
  while (s.size() < n) {
    x = x * 1103515245 + 12345;
    s += "token" + std::to_string((x >> 16) % 997) + ((x & 7) == 0 ? "\n" : " ");
  }
  s.resize(n);
  return s;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool python_has_zipfile() {
  return run_command({"python3", "-c", "import zipfile"}, std::chrono::seconds(30)).ok();
}

// Python's zipfile: testzip() (every CRC), then name, mode and sha256 of each member.
std::string python_listing(const fs::path& zip) {
  auto r =
      run_command({"python3", "-c",
                   "import hashlib, sys, zipfile\n"
                   "z = zipfile.ZipFile(sys.argv[1])\n"
                   "bad = z.testzip()\n"
                   "assert bad is None, bad\n"
                   "for i in z.infolist():\n"
                   "    print(i.filename, oct(i.external_attr >> 16), i.date_time, len(i.extra),\n"
                   "          hashlib.sha256(z.read(i)).hexdigest()[:16])\n",
                   zip.string()},
                  std::chrono::seconds(120));
  EXPECT_TRUE(r.ok()) << r.err;
  return r.out;
}

std::string sha16(const std::string& text) {
  auto d = Sha256::of(std::as_bytes(std::span(text.data(), text.size())));
  return Sha256::hex(d).substr(0, 16);
}

}  // namespace

TEST(ZipWriter, DosTimesClampToTheZipRange) {
  EXPECT_EQ(dos_date_time(0),
            (uint32_t{(0 << 9) | (1 << 5) | 1} << 16));  // before 1980: 1980-01-01
  EXPECT_EQ(dos_date_time(k_zip_earliest_time), dos_date_time(0));
  // 2023-11-14T22:13:20Z
  EXPECT_EQ(dos_date_time(1700000000),
            (uint32_t{(43 << 9) | (11 << 5) | 14} << 16) | ((22 << 11) | (13 << 5) | 10));
  // Odd seconds round down; far future stops at 2107-12-31 23:59:58.
  EXPECT_EQ(dos_date_time(1700000001), dos_date_time(1700000000));
  EXPECT_EQ(dos_date_time(int64_t{1} << 40),
            (uint32_t{(127 << 9) | (12 << 5) | 31} << 16) | ((23 << 11) | (59 << 5) | 29));
}

TEST(ZipWriter, RoundTripThroughTheReader) {
  fs::path dir = test::scratch_dir("zip_writer_test") / "roundtrip";
  fs::create_directories(dir);
  write_file(dir / "lib.so", sample_text(3 << 20, 1), fs::perms(0755));
  write_file(dir / "empty", "");
  std::string streamed = sample_text(700000, 2);
  std::vector<ZipWriteEntry> entries;
  entries.push_back({"pkg/__init__.py", std::string("print('hi')\n"), 0644});
  entries.push_back({"pkg/lib.so", ZipFileSource{(dir / "lib.so").string()}, 0755});
  entries.push_back({"pkg/empty", ZipFileSource{(dir / "empty").string()}, 0644});
  entries.push_back({"pkg/streamed.txt",
                     ZipStreamSource{streamed.size(),
                                     [&](const std::function<void(Bytes)>& sink) -> Expected<void> {
                                       for (size_t at = 0; at < streamed.size(); at += 7777)
                                         sink(std::as_bytes(std::span(
                                             streamed.data() + at,
                                             std::min<size_t>(7777, streamed.size() - at))));
                                       return {};
                                     }},
                     0644});
  entries.push_back({"pkg/ünïcode.txt", std::string("utf-8 name\n"), 0644});
  ZipWriteOptions opts;
  opts.mtime = 1700000000;
  fs::path out = dir / "out.zip";
  auto written = write_zip(out.string(), entries, opts);
  ASSERT_TRUE(written) << written.error().message;
  ASSERT_EQ(written->size(), entries.size());
  EXPECT_EQ((*written)[1].size, 3u << 20);
  EXPECT_LT((*written)[1].compressed_size, (*written)[1].size);
  EXPECT_EQ(Sha256::hex((*written)[0].sha256),
            Sha256::hex(Sha256::of(std::as_bytes(std::span("print('hi')\n", 12)))));
  EXPECT_EQ(files_in(dir),
            (std::vector<std::string>{"empty", "lib.so", "out.zip"}));  // no temporary left
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all, fs::perms(0644));

  auto mapped = MappedFile::open(out.string());
  ASSERT_TRUE(mapped);
  Bytes file = mapped->bytes();
  auto archive = parse_zip(file);
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_FALSE(archive->zip64);
  ASSERT_EQ(archive->entries.size(), entries.size());
  std::vector<std::string> want = {"print('hi')\n", test::slurp_text(dir / "lib.so"), "", streamed,
                                   "utf-8 name\n"};
  std::vector<std::byte> buffer;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& e = archive->entries[i];
    EXPECT_EQ(e.name, entries[i].name);
    EXPECT_EQ(e.method, k_zip_deflated);
    auto bytes = extract_member(file, e, buffer);
    ASSERT_TRUE(bytes) << bytes.error().message;
    EXPECT_EQ(as_chars(*bytes), want[i]) << e.name;
    // Central record: made by Unix 4.5, the DOS time asked for, no extra field or comment,
    // S_IFREG with the mode given.
    EXPECT_EQ(*read_le<uint16_t>(file, e.central_offset + 4), 0x032d);
    EXPECT_EQ(*read_le<uint16_t>(file, e.central_offset + 12), dos_date_time(1700000000) & 0xffff);
    EXPECT_EQ(*read_le<uint16_t>(file, e.central_offset + 14), dos_date_time(1700000000) >> 16);
    EXPECT_EQ(*read_le<uint16_t>(file, e.central_offset + 30), 0);
    EXPECT_EQ(*read_le<uint16_t>(file, e.central_offset + 32), 0);
    EXPECT_EQ(*read_le<uint32_t>(file, e.central_offset + 38) >> 16, 0100000u | entries[i].mode);
    EXPECT_EQ(*read_le<uint16_t>(file, e.local_header_offset + 28), 0);  // local extra
    EXPECT_EQ(*read_le<uint16_t>(file, e.local_header_offset + 6),
              e.name == "pkg/ünïcode.txt" ? 0x0800 : 0);
  }
}

TEST(ZipWriter, PythonZipfileAndUnzipAcceptIt) {
  if (!python_has_zipfile()) GTEST_SKIP() << "python3 with zipfile needed";
  fs::path dir = test::scratch_dir("zip_writer_test") / "python";
  fs::create_directories(dir);
  fs::path out = dir / "out.zip";
  std::string big = sample_text(2 << 20, 3);
  auto written = write_zip(out.string(),
                           {{"a/run.sh", std::string("#!/bin/sh\necho hi\n"), 0755},
                            {"a/big.txt", big, 0644},
                            {"a/empty", std::string(), 0644}},
                           {.mtime = 1700000000});
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(python_listing(out),
            "a/run.sh 0o100755 (2023, 11, 14, 22, 13, 20) 0 " + sha16("#!/bin/sh\necho hi\n") +
                "\n" + "a/big.txt 0o100644 (2023, 11, 14, 22, 13, 20) 0 " + sha16(big) + "\n" +
                "a/empty 0o100644 (2023, 11, 14, 22, 13, 20) 0 " + sha16("") + "\n");
  if (find_in_path("unzip").empty()) GTEST_SKIP() << "unzip not installed: `unzip -t` not run";
  auto t = run_command({"unzip", "-t", out.string()}, std::chrono::seconds(60));
  EXPECT_TRUE(t.ok()) << t.out << t.err;
  EXPECT_NE(t.out.find("No errors detected"), std::string::npos) << t.out;
}

TEST(ZipWriter, SameInputSameBytesWhateverTheFileTimesAndChunks) {
  fs::path dir = test::scratch_dir("zip_writer_test") / "same";
  fs::create_directories(dir);
  std::string text = sample_text(2'500'000, 4);
  write_file(dir / "data", text);
  auto write = [&](const std::string& name, ZipMemberSource source) {
    fs::path out = dir / name;
    auto w = write_zip(out.string(),
                       {{"x/data", std::move(source), 0644}, {"x/b", std::string("b\n"), 0755}},
                       {.mtime = 1600000000});
    EXPECT_TRUE(w) << w.error().message;
    return test::slurp_text(out);
  };
  set_mtime(dir / "data", 1000000000);
  std::string from_file = write("a.zip", ZipFileSource{(dir / "data").string()});
  set_mtime(dir / "data", 1750000000);
  ::chmod((dir / "data").c_str(), 0600);  // the file's own mode and time do not count
  std::string again = write("b.zip", ZipFileSource{(dir / "data").string()});
  std::string from_memory = write("c.zip", text);
  std::string from_chunks =
      write("d.zip",
            ZipStreamSource{
                text.size(), [&](const std::function<void(Bytes)>& sink) -> Expected<void> {
                  for (size_t at = 0, n = 1; at < text.size(); at += n, n = n * 3 % 65536 + 1)
                    sink(std::as_bytes(std::span(text.data() + at, std::min(n, text.size() - at))));
                  return {};
                }});
  EXPECT_FALSE(from_file.empty());
  EXPECT_EQ(from_file, again);
  EXPECT_EQ(from_file, from_memory);
  EXPECT_EQ(from_file, from_chunks);
  // A different time or level does change the bytes (the test can fail).
  fs::path other = dir / "e.zip";
  ASSERT_TRUE(write_zip(other.string(), {{"x/data", text, 0644}, {"x/b", std::string("b\n"), 0755}},
                        {.mtime = 1600000002}));
  EXPECT_NE(test::slurp_text(other), from_file);
}

TEST(ZipWriter, ForcedZip64IsReadByEveryReader) {
  fs::path dir = test::scratch_dir("zip_writer_test") / "zip64";
  fs::create_directories(dir);
  fs::path out = dir / "forced.zip";
  std::string text = sample_text(300000, 5);
  ZipWriteOptions opts;
  opts.force_zip64 = true;
  auto w =
      write_zip(out.string(), {{"a.txt", text, 0644}, {"b/c.txt", std::string("c"), 0644}}, opts);
  ASSERT_TRUE(w) << w.error().message;
  auto mapped = MappedFile::open(out.string());
  ASSERT_TRUE(mapped);
  auto archive = parse_zip(mapped->bytes());
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_TRUE(archive->zip64);
  ASSERT_EQ(archive->entries.size(), 2u);
  const ZipEntry& e = archive->entries[0];
  EXPECT_EQ(*read_le<uint32_t>(mapped->bytes(), e.central_offset + 24),
            0xffffffffu);  // size lives in the extra
  EXPECT_EQ(e.uncompressed_size, text.size());
  std::vector<std::byte> buffer;
  auto bytes = extract_member(mapped->bytes(), e, buffer);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(as_chars(*bytes), text);
  if (python_has_zipfile()) {
    EXPECT_NE(python_listing(out).find("a.txt 0o100644"), std::string::npos);
  }
  if (!find_in_path("unzip").empty()) {
    auto t = run_command({"unzip", "-t", out.string()}, std::chrono::seconds(60));
    EXPECT_TRUE(t.ok()) << t.out << t.err;
  }
}

TEST(ZipWriter, SixtyFiveThousandEntriesNeedTheZip64EndRecord) {
  fs::path dir = test::scratch_dir("zip_writer_test") / "count";
  fs::create_directories(dir);
  fs::path out = dir / "many.zip";
  auto writer = ZipWriter::create(out.string());
  ASSERT_TRUE(writer) << writer.error().message;
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    auto r = writer->add({"d/" + std::to_string(i), std::to_string(i), 0644});
    ASSERT_TRUE(r) << r.error().message;
  }
  ASSERT_TRUE(writer->commit());
  auto mapped = MappedFile::open(out.string());
  ASSERT_TRUE(mapped);
  auto archive = parse_zip(mapped->bytes());
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_TRUE(archive->zip64);
  ASSERT_EQ(archive->entries.size(), size_t(n));
  std::vector<std::byte> buffer;
  auto last = extract_member(mapped->bytes(), archive->entries.back(), buffer);
  ASSERT_TRUE(last);
  EXPECT_EQ(as_chars(*last), std::to_string(n - 1));
  if (python_has_zipfile()) {
    auto r = run_command({"python3", "-c",
                          "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
                          "print(len(z.infolist()), z.read('d/69999'))",
                          out.string()},
                         std::chrono::seconds(120));
    EXPECT_EQ(r.out, "70000 b'69999'\n") << r.err;
  }
}

TEST(ZipWriter, LargeSparseFileGetsZip64Sizes) {
  // 4 GiB of zeros takes a minute of deflate: run with TAILOR_SLOW_TESTS=1.
  if (!std::getenv("TAILOR_SLOW_TESTS"))
    GTEST_SKIP() << "set TAILOR_SLOW_TESTS=1 to deflate a 4 GiB sparse file";
  fs::path dir = test::scratch_dir("zip_writer_test") / "sparse";
  fs::create_directories(dir);
  fs::path big = dir / "big";
  { std::ofstream(big) << ""; }
  fs::resize_file(big, (uint64_t{4} << 30) + 12345);
  fs::path out = dir / "big.zip";
  auto w = write_zip(out.string(), {{"big", ZipFileSource{big.string()}, 0644},
                                    {"after", std::string("after"), 0644}});
  ASSERT_TRUE(w) << w.error().message;
  auto mapped = MappedFile::open(out.string());
  ASSERT_TRUE(mapped);
  auto archive = parse_zip(mapped->bytes());
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_EQ(archive->entries[0].uncompressed_size, (uint64_t{4} << 30) + 12345);
  uint64_t total = 0;
  ASSERT_TRUE(
      stream_member(mapped->bytes(), archive->entries[0], [&](Bytes c) { total += c.size(); }));
  EXPECT_EQ(total, (uint64_t{4} << 30) + 12345);
  if (!find_in_path("unzip").empty()) {
    auto t = run_command({"unzip", "-t", out.string()}, std::chrono::seconds(600));
    EXPECT_TRUE(t.ok()) << t.out << t.err;
  }
}

TEST(ZipWriter, BadInputLeavesNoFileBehind) {
  fs::path dir = test::scratch_dir("zip_writer_test") / "bad";
  fs::create_directories(dir);
  fs::path out = dir / "out.zip";
  auto expect_refused = [&](std::vector<ZipWriteEntry> entries, const std::string& why) {
    auto w = write_zip(out.string(), entries);
    ASSERT_FALSE(w) << why;
    EXPECT_NE(w.error().message.find(why), std::string::npos) << w.error().message;
    EXPECT_TRUE(files_in(dir).empty()) << "left: " << files_in(dir).front();
  };
  expect_refused({{"../evil", std::string("x"), 0644}}, "'..'");
  expect_refused({{"/abs", std::string("x"), 0644}}, "absolute");
  expect_refused({{"a\\b", std::string("x"), 0644}}, "backslash");
  expect_refused({{"dir/", std::string(), 0644}}, "directory");
  expect_refused({{"a//b", std::string(), 0644}}, "empty path component");
  expect_refused({{"a", std::string("1"), 0644}, {"a", std::string("2"), 0644}}, "added twice");
  expect_refused({{"a", ZipFileSource{(dir / "missing").string()}, 0644}}, "cannot read");
  expect_refused({{"a", ZipFileSource{dir.string()}, 0644}}, "not a regular file");
  expect_refused({{"a",
                   ZipStreamSource{10,
                                   [](const std::function<void(Bytes)>& sink) -> Expected<void> {
                                     sink(std::as_bytes(std::span("abc", 3)));
                                     return {};
                                   }},
                   0644}},
                 "10 bytes announced, 3 given");
  expect_refused({{"a",
                   ZipStreamSource{3,
                                   [](const std::function<void(Bytes)>&) -> Expected<void> {
                                     return make_error("the source broke");
                                   }},
                   0644}},
                 "the source broke");
  // An existing archive at the destination survives a failed rewrite.
  std::ofstream(out) << "old";
  auto w =
      write_zip(out.string(), {{"ok", std::string("x"), 0644}, {"../no", std::string("x"), 0644}});
  EXPECT_FALSE(w);
  EXPECT_EQ(test::slurp_text(out), "old");
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"out.zip"});
  EXPECT_FALSE(ZipWriter::create((dir / "no-such-dir" / "x.zip").string()));
}
