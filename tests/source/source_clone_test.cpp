// tailor's own clone step (source/source_clone.h) with the real git over local
// repositories made here: a tag with a submodule, reuse, refusal, no half-made tree.
#include "source/source_clone.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/fixtures.h"
#include "util/process.h"

namespace fs = std::filesystem;
using namespace tailor;
using namespace tailor::source;

namespace {

void run_git(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"git",
                                   "-c",
                                   "protocol.file.allow=always",
                                   "-c",
                                   "user.name=t",
                                   "-c",
                                   "user.email=t@t",
                                   "-c",
                                   "init.defaultBranch=main"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandSpec spec;
  spec.argv = argv;
  spec.cwd = dir.string();
  spec.timeout = std::chrono::seconds(60);
  SystemCommandRunner runner;
  auto r = runner.run(spec);
  ASSERT_TRUE(r.ok()) << "git " << args[0] << ": " << r.err << r.out;
}

void write_clone_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A "pytorch" repository with tag v2.9.1 and third_party/sub, a submodule of its own.
struct CloneRepos {
  test::TempDir tmp{"clone"};
  fs::path sub, top, work;
  std::string url;
  bool have_git = !find_in_path("git").empty();
  CloneRepos() {
    if (!have_git) return;
    sub = tmp.path / "sub";
    top = tmp.path / "pytorch";
    work = tmp.path / "work";
    fs::create_directories(sub);
    fs::create_directories(top);
    run_git(sub, {"init", "-q"});
    write_clone_file(sub / "README", "submodule\n");
    run_git(sub, {"add", "README"});
    run_git(sub, {"commit", "-qm", "sub"});
    run_git(top, {"init", "-q"});
    write_clone_file(top / "version.txt", "2.9.1a0\n");
    run_git(top, {"add", "version.txt"});
    run_git(top, {"submodule", "add", "-q", "file://" + sub.string(), "third_party/sub"});
    run_git(top, {"commit", "-qm", "release"});
    run_git(top, {"tag", "v2.9.1"});
    write_clone_file(top / "version.txt", "2.10.0a0\n");
    run_git(top, {"commit", "-qam", "after the release"});
    run_git(top, {"tag", "v2.10.0"});
    url = "file://" + top.string();
  }
  CloneRequest request(const std::string& tag = "v2.9.1") const {
    return {url, tag, (work / "pytorch").string()};
  }
};

std::string clone_head_of(const fs::path& dir) {
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"git", "-C", dir.string(), "rev-parse", "HEAD"};
  auto r = runner.run(spec);
  return r.ok() ? r.out : "";
}

}  // namespace

TEST(SourceClone, ParsesItsArgumentsAndRefusesWhatGitWouldReadAsAnOption) {
  auto ok = parse_clone_args({"--url", "file:///r", "--tag", "v1", "--dest", "/w/p"});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->url, "file:///r");
  EXPECT_EQ(ok->tag, "v1");
  EXPECT_EQ(ok->dest, "/w/p");
  EXPECT_EQ(clone_command_argv("/bin/tailor", *ok),
            (std::vector<std::string>{"/bin/tailor", "__clone-source", "--url", "file:///r",
                                      "--tag", "v1", "--dest", "/w/p"}));
  EXPECT_FALSE(parse_clone_args({"--url", "file:///r", "--tag", "v1"}));
  EXPECT_FALSE(parse_clone_args({"--url", "--upload-pack=x", "--tag", "v1", "--dest", "/w"}));
  EXPECT_FALSE(parse_clone_args({"--url", "u", "--tag", "v1", "--dest", "relative"}));
  EXPECT_FALSE(parse_clone_args({"--bogus", "x"}));
  EXPECT_FALSE(parse_clone_args({"--url"}));
}

TEST(SourceClone, ClonesTheTagWithItsSubmoduleThenReusesIt) {
  CloneRepos r;
  if (!r.have_git) GTEST_SKIP() << "no git";
  SystemCommandRunner runner;
  auto first = clone_source(r.request(), runner, stderr);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->reused);
  const fs::path dest = r.work / "pytorch";
  EXPECT_EQ(test::slurp_text((dest / "version.txt").string()), "2.9.1a0\n");  // the tag, not main
  EXPECT_EQ(test::slurp_text((dest / "third_party/sub/README").string()), "submodule\n");
  EXPECT_FALSE(fs::exists(r.work / "pytorch.partial"));
  EXPECT_EQ(first->commit + "\n", clone_head_of(dest));

  // The same tag again: reused, nothing cloned (a file of the clone survives).
  write_clone_file(dest / "build" / "kept.o", "object");
  auto second = clone_source(r.request(), runner, stderr);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->reused);
  EXPECT_EQ(second->commit, first->commit);
  EXPECT_TRUE(fs::exists(dest / "build" / "kept.o"));

  // An emptied submodule (an interrupted init) is brought back when reused.
  fs::remove_all(dest / "third_party/sub");
  fs::create_directories(dest / "third_party/sub");
  ASSERT_TRUE(clone_source(r.request(), runner, stderr));
  EXPECT_EQ(test::slurp_text((dest / "third_party/sub/README").string()), "submodule\n");

  // Another release asked of that clone: refused, naming both, the clone left as it is.
  auto other = clone_source(r.request("v2.10.0"), runner, stderr);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("not v2.10.0"), std::string::npos) << other.error().message;
  EXPECT_NE(other.error().message.find(first->commit.substr(0, 12)), std::string::npos);
  EXPECT_TRUE(fs::exists(dest / "build" / "kept.o"));
}

TEST(SourceClone, AFailedCloneLeavesNothingAtTheDestination) {
  CloneRepos r;
  if (!r.have_git) GTEST_SKIP() << "no git";
  SystemCommandRunner runner;
  CloneRequest missing = r.request();
  missing.url = "file://" + (r.tmp.path / "no-such-repository").string();
  auto c = clone_source(missing, runner, stderr);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("fatal:"), std::string::npos) << c.error().message;
  EXPECT_FALSE(fs::exists(r.work / "pytorch"));
  EXPECT_FALSE(fs::exists(r.work / "pytorch.partial"));
  // A tag the remote lacks: git's words say so.
  auto tag = clone_source(r.request("v9.9.9"), runner, stderr);
  ASSERT_FALSE(tag);
  EXPECT_NE(tag.error().message.find("v9.9.9"), std::string::npos) << tag.error().message;
  EXPECT_FALSE(fs::exists(r.work / "pytorch"));
  // A folder of something else is never taken for a clone, nor removed.
  write_clone_file(r.work / "pytorch" / "notes.txt", "mine");
  auto busy = clone_source(r.request(), runner, stderr);
  ASSERT_FALSE(busy);
  EXPECT_NE(busy.error().message.find("is not a clone"), std::string::npos);
  EXPECT_TRUE(fs::exists(r.work / "pytorch" / "notes.txt"));
}
