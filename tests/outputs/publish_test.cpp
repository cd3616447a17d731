#include "outputs/publish.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"

using namespace tailor::outputs;
namespace fs = std::filesystem;

namespace {
fs::path publish_fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() /
               ("tailor_publish_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
size_t entries(const fs::path& p) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(p)) ++n;
  return n;
}
}  // namespace

TEST(Publish, NothingAppearsUntilCommit) {
  fs::path root = publish_fresh_dir("commit");
  fs::path out = root / "dist";
  {
    auto s = PublishStaging::create(out.string());
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(fs::path(s->dir()).parent_path(), root);  // beside the output: same file system
    ASSERT_TRUE(s->add_text("x.whl.report.json", "{}\n"));
    ASSERT_TRUE(s->add_text("x.whl", "wheel bytes"));
    EXPECT_FALSE(fs::exists(out));
    auto published = s->commit({"x.whl.report.json", "x.whl"});
    ASSERT_TRUE(published) << published.error().message;
    ASSERT_EQ(published->size(), 2u);
    EXPECT_EQ(fs::path(published->back()).filename(), "x.whl");  // the wheel comes last
  }
  EXPECT_EQ(tailor::test::slurp_text(out / "x.whl"), "wheel bytes");
  EXPECT_EQ(entries(root), 1u);  // the staging folder is gone
  fs::remove_all(root);
}

TEST(Publish, AbandonedStagingLeavesTheOutputAsItWas) {
  fs::path root = publish_fresh_dir("abandon");
  fs::path out = root / "dist";
  fs::create_directories(out);
  std::ofstream(out / "old.whl") << "old";
  {
    auto s = PublishStaging::create(out.string());
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->add_text("new.whl", "half a wheel"));
    // a failure happens here: no commit
  }
  EXPECT_EQ(entries(out), 1u);
  EXPECT_EQ(tailor::test::slurp_text(out / "old.whl"), "old");
  EXPECT_EQ(entries(root), 1u);
  fs::remove_all(root);
}

TEST(Publish, MissingOutputFolderIsNotCreatedOnFailure) {
  fs::path root = publish_fresh_dir("missing");
  {
    auto s = PublishStaging::create((root / "dist").string());
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->add_text("a.whl", "x"));
  }
  EXPECT_FALSE(fs::exists(root / "dist"));
  fs::remove_all(root);
}

TEST(Publish, ReplacesAnOlderWheelOfTheSameName) {
  fs::path root = publish_fresh_dir("replace");
  fs::path out = root / "dist";
  fs::create_directories(out);
  std::ofstream(out / "a.whl") << "old";
  auto s = PublishStaging::create(out.string());
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->add_text("a.whl", "new"));
  ASSERT_TRUE(s->commit({"a.whl"}));
  EXPECT_EQ(tailor::test::slurp_text(out / "a.whl"), "new");
  fs::remove_all(root);
}

TEST(Publish, RejectsBadNamesAndFileAsFolder) {
  fs::path root = publish_fresh_dir("bad");
  std::ofstream(root / "file") << "x";
  EXPECT_FALSE(PublishStaging::create((root / "file").string()));
  auto s = PublishStaging::create((root / "dist").string());
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->add_text("../escape", "x"));
  EXPECT_FALSE(s->add_text("", "x"));
  EXPECT_FALSE(s->add_copy((root / "no-such-file").string(), "x"));
  fs::remove_all(root);
}

TEST(Publish, CommitFailureLeavesNoTrace) {
  fs::path root = publish_fresh_dir("rollback");
  fs::path out = root / "dist";
  {
    auto s = PublishStaging::create(out.string());
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->add_text("a.whl", "x"));
    // Something else takes the output path meanwhile: the commit must fail cleanly.
    std::ofstream(out) << "not a folder";
    auto r = s->commit({"a.whl"});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("dist"), std::string::npos);
  }
  EXPECT_TRUE(fs::is_regular_file(out));
  EXPECT_EQ(entries(root), 1u);  // staging removed
  fs::remove_all(root);
}
