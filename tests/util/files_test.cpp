#include "util/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

using namespace tailor;
namespace fs = std::filesystem;

TEST(Files, WriteThenReadBackAndReplaceAtomically) {
  fs::path dir = fs::temp_directory_path() / ("tailor_files_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "a.txt").string();
  EXPECT_EQ(read_file(path), std::nullopt);
  ASSERT_TRUE(write_file_atomic(path, std::string("one\0two", 7)));
  EXPECT_EQ(read_file(path), std::string("one\0two", 7));
  ASSERT_TRUE(write_file_atomic(path, "three"));
  EXPECT_EQ(read_file(path), "three");
  EXPECT_FALSE(fs::exists(path + ".tailor-tmp"));
  auto bad = write_file_atomic((dir / "no" / "such" / "b.txt").string(), "x");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("b.txt.tailor-tmp: cannot write"), std::string::npos) << bad.error().message;
  EXPECT_EQ(read_file(dir.string()), std::nullopt);  // a folder is not a readable file
  fs::remove_all(dir);
}
