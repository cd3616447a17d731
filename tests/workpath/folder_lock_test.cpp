// Folder locks leave nothing behind: the holder removes its lock file as it lets go, and a
// waiter that then holds the removed file's lock takes the file at the path instead, so the
// lock still excludes (issue: ~/.cache/tailor/locks grew to 61 files after 15 builds).
#include "workpath/folder_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <thread>

namespace tailor::workpath {
namespace {

namespace fs = std::filesystem;

size_t files_in(const fs::path& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it) ++n;
  return n;
}

TEST(FolderLock, LeavesNoFileAndStillExcludes) {
  fs::path root = fs::temp_directory_path() / ("tailor-lock-" + std::to_string(::getpid()));
  fs::remove_all(root);
  ::setenv("XDG_CACHE_HOME", (root / "cache").c_str(), 1);
  const fs::path locks = root / "cache" / "tailor" / "locks";
  const std::string work = (root / "work").string();
  {
    auto first = FolderLock::acquire(work, FolderLock::Place::inside, false, nullptr);
    ASSERT_TRUE(first) << first.error().message;
    std::optional<FolderLock> a;
    a.emplace(std::move(*first));
    EXPECT_EQ(files_in(locks), 1u);
    auto busy = FolderLock::acquire(work, FolderLock::Place::inside, false, nullptr);
    ASSERT_FALSE(busy);
    EXPECT_NE(busy.error().message.find("--no-wait"), std::string::npos);
    // A waiter: it gets the lock once `a` lets go, on the file at the path.
    auto waiter = std::async(std::launch::async, [&] {
      return FolderLock::acquire(work, FolderLock::Place::inside, true, nullptr);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
    a.reset();  // lets go of the first lock
    auto b = waiter.get();
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(files_in(locks), 1u);
    EXPECT_FALSE(FolderLock::acquire(work, FolderLock::Place::inside, false, nullptr));
  }
  EXPECT_EQ(files_in(locks), 0u);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(FolderLock::acquire((root / ("w" + std::to_string(i))).string(),
                                    FolderLock::Place::inside, false, nullptr));
  EXPECT_EQ(files_in(locks), 0u);
  ::unsetenv("XDG_CACHE_HOME");
  fs::remove_all(root);
}

}  // namespace
}  // namespace tailor::workpath
