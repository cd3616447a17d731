#include "util/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

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
  EXPECT_NE(bad.error().message.find("b.txt.tailor-tmp: cannot write"), std::string::npos)
      << bad.error().message;
  EXPECT_EQ(read_file(dir.string()), std::nullopt);  // a folder is not a readable file
  fs::remove_all(dir);
}

TEST(Files, ErrnoTextSaysTheCommonCasesInTailorsWords) {
  EXPECT_EQ(errno_text(EACCES), "permission denied");
  EXPECT_EQ(errno_text(EPERM), "permission denied");
  EXPECT_EQ(errno_text(ENOENT), "no such file or directory");
  EXPECT_EQ(errno_text(ENOSPC), std::strerror(ENOSPC));
}

TEST(Files, WriteFileAtomicGivesTheModeAtCreation) {
  fs::path dir = fs::temp_directory_path() / ("tailor_files_mode_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string secret = (dir / "token").string();
  ASSERT_TRUE(write_file_atomic(secret, "s3cret\n", 0600));
  struct stat st {};
  ASSERT_EQ(::stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_file(secret), "s3cret\n");
  // A leftover temporary file (a link, say) is replaced, never written through.
  fs::create_symlink(dir / "elsewhere", secret + ".tailor-tmp");
  ASSERT_TRUE(write_file_atomic(secret, "again\n", 0600));
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
  EXPECT_EQ(read_file(secret), "again\n");
  fs::remove_all(dir);
}

TEST(Files, AtomicFileAppearsOnlyWhenCommitted) {
  fs::path dir = fs::temp_directory_path() / ("tailor_files_atomic_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string dest = (dir / "out.zip").string();
  auto list = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  {
    auto f = AtomicFile::beside(dest);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->dest(), dest);
    EXPECT_EQ(fs::path(f->path()).parent_path(), dir);
    EXPECT_EQ(fs::path(f->path()).filename().string().rfind(".out.zip.tailor-tmp-", 0), 0u)
        << f->path();
    ASSERT_EQ(::write(f->fd(), "half", 4), 4);
    EXPECT_EQ(list().size(), 1u);
  }  // not committed: removed
  EXPECT_TRUE(list().empty());
  {
    auto f = AtomicFile::beside(dest);
    ASSERT_TRUE(f);
    ASSERT_EQ(::write(f->fd(), "whole", 5), 5);
    AtomicFile moved = std::move(*f);  // the moved-from file removes nothing
    ASSERT_TRUE(moved.commit(0640));
    EXPECT_EQ(moved.fd(), -1);
    EXPECT_FALSE(moved.commit(0640));  // once
  }
  EXPECT_EQ(list(), std::vector<std::string>{"out.zip"});
  EXPECT_EQ(read_file(dest), "whole");
  struct stat st {};
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  auto nowhere = AtomicFile::beside((dir / "no" / "such" / "x").string());
  ASSERT_FALSE(nowhere);
  EXPECT_EQ(nowhere.error().message,
            (dir / "no" / "such" / "x").string() +
                ": cannot create a temporary file beside it: no such file or directory");
  fs::remove_all(dir);
}

namespace {
Expected<void> try_void_step(bool ok) { return ok ? Expected<void>() : make_error("step failed"); }
Expected<int> try_void_two_steps(bool first, bool second) {
  TAILOR_TRY_VOID(try_void_step(first));
  if (first) TAILOR_TRY_VOID(try_void_step(second));
  return 2;
}
}  // namespace

TEST(Files, TryVoidReturnsTheFirstError) {
  EXPECT_EQ(*try_void_two_steps(true, true), 2);
  EXPECT_EQ(try_void_two_steps(false, true).error().message, "step failed");
  EXPECT_EQ(try_void_two_steps(true, false).error().message, "step failed");
}
