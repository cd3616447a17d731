// The bounded, non-blocking reader of user paths: FIFOs and devices are refused without
// waiting, sizes are bounded before reading, unreadable files say "permission denied".
#include "util/user_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/mapped_file.h"

namespace tailor {
namespace {

namespace fs = std::filesystem;

class UserFile : public testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("tailor_user_file_" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(m_dir, fs::perms::owner_all, ec);
    fs::remove_all(m_dir, ec);
  }
  std::string write(const std::string& name, const std::string& content) {
    std::string p = (m_dir / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  fs::path m_dir;
};

TEST_F(UserFile, ReadsARegularFile) {
  auto text = read_text_file(write("a.txt", "hello\n"), 100);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "hello\n");
}

TEST_F(UserFile, FifoIsRefusedWithoutBlocking) {
  // No writer ever opens this FIFO: a blocking open() would hang the test forever.
  std::string fifo = (m_dir / "x.so").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto text = read_text_file(fifo, 100);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, fifo + ": not a regular file (a FIFO)");
  auto mapped = MappedFile::open(fifo);
  ASSERT_FALSE(mapped);
  EXPECT_NE(mapped.error().message.find("a FIFO"), std::string::npos);
  EXPECT_FALSE(read_file_head(fifo, 4));
}

TEST_F(UserFile, DevicesAndDirectoriesAreRefused) {
  auto zero = read_text_file("/dev/zero", 1 << 20);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message, "/dev/zero: not a regular file (a character device)");
  auto dir = read_text_file(m_dir.string(), 100);
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message.find("a directory"), std::string::npos);
}

TEST_F(UserFile, SizeIsBoundedBeforeReading) {
  std::string big = write("big.log", std::string(5000, 'x'));
  auto text = read_text_file(big, 4096);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("larger than the 4.0 KiB tailor reads"), std::string::npos)
      << text.error().message;
  EXPECT_TRUE(read_text_file(big, 5000));
}

TEST_F(UserFile, BinaryDataIsRefusedEarly) {
  std::string zeros = write("zeros.log", std::string(200000, '\0'));
  auto text = read_text_file(zeros, 1 << 20, BinaryData::refused);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("NUL byte at offset 0x0"), std::string::npos)
      << text.error().message;
  std::string late = write("late.log", "ok\n" + std::string(1, '\0'));
  auto t2 = read_text_file(late, 100, BinaryData::refused);
  ASSERT_FALSE(t2);
  EXPECT_NE(t2.error().message.find("offset 0x3"), std::string::npos);
  EXPECT_TRUE(read_text_file(late, 100, BinaryData::allowed));
}

TEST_F(UserFile, MissingFile) {
  auto text = read_text_file((m_dir / "nope").string(), 100);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("no such file or directory"), std::string::npos);
}

TEST_F(UserFile, UnreadableFileSaysPermissionDenied) {
  std::string p = write("secret.so",
                        "\x7f"
                        "ELF");
  fs::permissions(p, fs::perms::none);
  if (::geteuid() == 0)
    GTEST_SKIP() << "running as root: mode 000 files are readable, nothing to check";
  auto head = read_file_head(p, 4);
  ASSERT_FALSE(head);
  EXPECT_EQ(head.error().message, p + ": permission denied");
}

TEST_F(UserFile, HeadOfAShortFile) {
  auto head = read_file_head(write("short", "ab"), 4);
  ASSERT_TRUE(head);
  EXPECT_EQ(*head, "ab");
}

}  // namespace
}  // namespace tailor
