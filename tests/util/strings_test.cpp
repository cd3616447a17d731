#include "util/strings.h"

#include <gtest/gtest.h>

#include "util/byte_reader.h"
#include "util/process.h"

namespace tailor {

TEST(Strings, SplitAnyDropsEmptyPieces) {
  EXPECT_EQ(split_any("7.5;8.0 ;; 9.0", "; "), (std::vector<std::string>{"7.5", "8.0", "9.0"}));
}

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("hoper", "hopper"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Strings, HumanBytes) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
}

TEST(Strings, ShellQuote) {
  EXPECT_EQ(shell_quote("8.0;9.0"), "'8.0;9.0'");
  EXPECT_EQ(shell_quote("plain"), "plain");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(ByteReader, RejectsOutOfRange) {
  std::byte buf[8]{};
  Bytes b(buf, 8);
  EXPECT_TRUE(read_le<uint32_t>(b, 4).has_value());
  EXPECT_FALSE(read_le<uint32_t>(b, 5).has_value());
  EXPECT_FALSE(read_le<uint64_t>(b, UINT64_MAX - 2).has_value());
  EXPECT_FALSE(strict_substr(b, 4, UINT64_MAX).has_value());
}

TEST(Process, RunsAndTimesOut) {
  auto r = run_command({"sh", "-c", "echo hi; exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "hi\n");
  auto t = run_command({"sleep", "5"}, std::chrono::milliseconds(200));
  EXPECT_TRUE(t.timed_out);
  auto missing = run_command({"surely-not-a-program-tailor"});
  EXPECT_FALSE(missing.started);
}

TEST(Strings, ParseWholeNumberTakesTheWholeTrimmedTextOnly) {
  EXPECT_EQ(parse_whole_number<uint64_t>("  42\n"), 42u);
  EXPECT_EQ(parse_whole_number<long>("-1"), -1);
  EXPECT_EQ(parse_whole_number<uint64_t>("-1"), std::nullopt);
  EXPECT_EQ(parse_whole_number<uint64_t>("42 kB"), std::nullopt);
  EXPECT_EQ(parse_whole_number<uint64_t>("max"), std::nullopt);
  EXPECT_EQ(parse_whole_number<uint64_t>(""), std::nullopt);
  EXPECT_EQ(parse_whole_number<int>("99999999999"), std::nullopt);  // out of range
}

// One hex of bytes for digests and signatures (sha256 and the S3 signature had one each).
TEST(Strings, HexBytesIsTwoLowercaseDigitsPerByte) {
  EXPECT_EQ(hex_bytes(std::string_view("\x00\x0f\xa0\xff", 4)), "000fa0ff");
  EXPECT_EQ(hex_bytes(""), "");
}

}  // namespace tailor
