#include "build/extension_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace tailor;
using namespace tailor::build;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("tailor_source_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
}  // namespace

TEST(ClassifySource, EveryKind) {
  fs::path dir = fresh_dir("kinds");
  std::ofstream(dir / "pkg-1.0.tar.gz") << "x";
  auto d = classify_source(dir.string(), "");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->kind, SourceKind::directory);

  auto s = classify_source((dir / "pkg-1.0.tar.gz").string(), "");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, SourceKind::sdist);
  EXPECT_EQ(s->name, "pkg");

  auto i = classify_source("causal-conv1d==1.5.2", "");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->kind, SourceKind::index);
  EXPECT_EQ(i->name, "causal-conv1d");
  EXPECT_EQ(i->version, "1.5.2");

  auto g = classify_source("git+https://github.com/Dao-AILab/causal-conv1d.git@v1.5.2", "");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->kind, SourceKind::git);
  EXPECT_EQ(g->url, "https://github.com/Dao-AILab/causal-conv1d.git");
  EXPECT_EQ(g->ref, "v1.5.2");
  EXPECT_EQ(g->name, "causal-conv1d");

  auto e = classify_source("", "/repo/examples/fused_ops");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, SourceKind::example);
  fs::remove_all(dir);
}

TEST(ClassifySource, BadInputSaysWhatItAccepts) {
  auto none = classify_source("", "");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("not tailor's repository"), std::string::npos);
  auto missing_sdist = classify_source("/nope/pkg-1.0.tar.gz", "");
  ASSERT_FALSE(missing_sdist);
  EXPECT_NE(missing_sdist.error().message.find("no such sdist"), std::string::npos);
  auto bare = classify_source("flash-attn", "");
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message.find("flash-attn==1.2.3"), std::string::npos);
  EXPECT_FALSE(classify_source("pkg>=1.0", ""));
}

TEST(GitUrl, FormsPipAccepts) {
  std::string url, ref;
  EXPECT_TRUE(split_git_url("https://github.com/a/b.git", url, ref));
  EXPECT_EQ(url, "https://github.com/a/b.git");
  EXPECT_EQ(ref, "");
  EXPECT_TRUE(split_git_url("git+https://github.com/a/b@main", url, ref));
  EXPECT_EQ(url, "https://github.com/a/b");
  EXPECT_EQ(ref, "main");
  EXPECT_TRUE(split_git_url("git@github.com:a/b.git@v1", url, ref));
  EXPECT_EQ(url, "git@github.com:a/b.git");
  EXPECT_EQ(ref, "v1");
  EXPECT_FALSE(split_git_url("https://example.com/pkg-1.0.tar.gz", url, ref));
  EXPECT_FALSE(split_git_url("./local/dir", url, ref));
}

TEST(PackageName, FromEachDeclaration) {
  fs::path dir = fresh_dir("names");
  std::ofstream(dir / "setup.py") << "setup(\n    name=\"from_setup_py\",\n    version='1')\n";
  EXPECT_EQ(detect_package_name(dir.string()), "from_setup_py");
  std::ofstream(dir / "setup.cfg") << "[metadata]\nversion = 1\nname = from-cfg\n";
  EXPECT_EQ(detect_package_name(dir.string()), "from-cfg");
  std::ofstream(dir / "pyproject.toml") << "[build-system]\nrequires=[]\n[project]\nname = \"from-pyproject\"\n";
  EXPECT_EQ(detect_package_name(dir.string()), "from-pyproject");
  std::ofstream(dir / "PKG-INFO") << "Metadata-Version: 2.1\nName: causal_conv1d\nVersion: 1.5.2\n";
  EXPECT_EQ(detect_package_name(dir.string()), "causal_conv1d");
  fs::remove_all(dir);
  EXPECT_EQ(detect_package_name(dir.string()), "");
}

TEST(WorkDir, StablePerSourceAndDistinctBetweenSources) {
  SourceSpec a{SourceKind::directory, "x", "/src/a", "", "", "", ""};
  SourceSpec b{SourceKind::directory, "x", "/src/b", "", "", "", ""};
  EXPECT_EQ(work_dir_for(a, "/w"), work_dir_for(a, "/w"));
  EXPECT_NE(work_dir_for(a, "/w"), work_dir_for(b, "/w"));
  EXPECT_EQ(work_dir_for(a, "/w").rfind("/w/a-", 0), 0u);
}

TEST(PrepareSource, CopiesWithoutOldBuildOutputs) {
  fs::path dir = fresh_dir("copy");
  fs::create_directories(dir / "pkg" / "csrc");
  fs::create_directories(dir / "pkg" / "build" / "temp");
  fs::create_directories(dir / "pkg" / "x.egg-info");
  std::ofstream(dir / "pkg" / "setup.py") << "setup(name='x')\n";
  std::ofstream(dir / "pkg" / "csrc" / "k.cu") << "__global__ void k() {}\n";
  SystemCommandRunner runner;
  auto spec = classify_source((dir / "pkg").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_TRUE(fs::exists(fs::path(*src) / "csrc" / "k.cu"));
  EXPECT_FALSE(fs::exists(fs::path(*src) / "build"));
  EXPECT_FALSE(fs::exists(fs::path(*src) / "x.egg-info"));
  // A second prepare replaces the copy (a file removed from the source disappears).
  fs::remove(dir / "pkg" / "csrc" / "k.cu");
  src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src);
  EXPECT_FALSE(fs::exists(fs::path(*src) / "csrc" / "k.cu"));
  fs::remove_all(dir);
}

TEST(PrepareSource, UnpacksARealSdist) {
  if (find_in_path("tar").empty()) GTEST_SKIP() << "tar not installed";
  fs::path dir = fresh_dir("sdist");
  fs::create_directories(dir / "pkg-1.0");
  std::ofstream(dir / "pkg-1.0" / "PKG-INFO") << "Name: pkg\nVersion: 1.0\n";
  SystemCommandRunner runner;
  CommandSpec tar;
  tar.argv = {"tar", "-czf", (dir / "pkg-1.0.tar.gz").string(), "-C", dir.string(), "pkg-1.0"};
  ASSERT_TRUE(runner.run(tar).ok());
  auto spec = classify_source((dir / "pkg-1.0.tar.gz").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_EQ(fs::path(*src).filename(), "pkg-1.0");
  EXPECT_EQ(detect_package_name(*src), "pkg");
  fs::remove_all(dir);
}

TEST(PrepareSource, BrokenSdistIsAnErrorNamingTheCommand) {
  fs::path dir = fresh_dir("broken");
  std::ofstream(dir / "bad-1.0.tar.gz") << "not a tarball";
  SystemCommandRunner runner;
  auto spec = classify_source((dir / "bad-1.0.tar.gz").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_FALSE(src);
  EXPECT_NE(src.error().message.find("tar -xf"), std::string::npos);
  fs::remove_all(dir);
}

TEST(BundledExample, FoundFromInsideTheRepository) {
  std::string example = find_bundled_example(std::string(TAILOR_SOURCE_DIR) + "/src/build");
  EXPECT_EQ(fs::path(example), fs::path(TAILOR_SOURCE_DIR) / "examples" / "fused_ops");
  EXPECT_EQ(find_bundled_example("/"), "");
}
