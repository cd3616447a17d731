// The fixed work path: which text is mapped, the bubblewrap command line, and a real
// namespace where bubblewrap can make one.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "executor/fixed_path.h"
#include "support/fixtures.h"
#include "util/process.h"

namespace tailor::executor {
namespace {

namespace fs = std::filesystem;

TEST(FixedPath, NamesAFolderPerPackage) {
  EXPECT_EQ(fixed_work_path("torch-scatter"), "/tmp/.tailor-build/torch-scatter");
  EXPECT_EQ(fixed_work_path("a/../b c"), "/tmp/.tailor-build/a_.._b_c");
  EXPECT_EQ(fixed_work_path(".."), "/tmp/.tailor-build/package");
  EXPECT_EQ(fixed_work_path(""), "/tmp/.tailor-build/package");
}

TEST(FixedPath, MapsWholePathsOnly) {
  FixedPath fp{"/home/u/w/pkg-1a2b", "/tmp/.tailor-build/pkg", "bwrap"};
  EXPECT_EQ(to_fixed("/home/u/w/pkg-1a2b", fp), "/tmp/.tailor-build/pkg");
  EXPECT_EQ(to_fixed("/home/u/w/pkg-1a2b/src/build", fp), "/tmp/.tailor-build/pkg/src/build");
  EXPECT_EQ(to_fixed("-I/home/u/w/pkg-1a2b/src/csrc", fp), "-I/tmp/.tailor-build/pkg/src/csrc");
  EXPECT_EQ(to_fixed("--jobserver-auth=fifo:/home/u/w/pkg-1a2b/jobserver.fifo", fp),
            "--jobserver-auth=fifo:/tmp/.tailor-build/pkg/jobserver.fifo");
  EXPECT_EQ(to_fixed("/a/bin:/home/u/w/pkg-1a2b/compiler-wrappers:/usr/bin", fp),
            "/a/bin:/tmp/.tailor-build/pkg/compiler-wrappers:/usr/bin");
  // Longer names and paths that only end in the folder's name are other paths.
  EXPECT_EQ(to_fixed("/home/u/w/pkg-1a2b-old/x", fp), "/home/u/w/pkg-1a2b-old/x");
  EXPECT_EQ(to_fixed("/x/home/u/w/pkg-1a2b/y", fp), "/x/home/u/w/pkg-1a2b/y");
  EXPECT_EQ(to_fixed("no path here", fp), "no path here");
}

TEST(FixedPath, WrapsAStep) {
  FixedPath fp{"/w/a", "/tmp/.tailor-build/p", "/usr/bin/bwrap"};
  tailor::plan::Step st;
  st.title = "build";
  st.argv = {"python3", "/w/a/build_wheel.py", "--out", "/w/a/wheelhouse"};
  st.cwd = "/w/a/src";
  st.env = {{"MAKEFLAGS", "-j4 --jobserver-auth=fifo:/w/a/jobserver.fifo"}, {"HOME", "/home/u"}};
  tailor::plan::Step w = in_fixed_path(st, fp);
  EXPECT_EQ(w.cwd, "/w/a/src");  // bubblewrap starts in the real folder
  EXPECT_EQ(w.argv, (std::vector<std::string>{"/usr/bin/bwrap", "--dev-bind", "/", "/", "--tmpfs", "/tmp/.tailor-build",
                                               "--bind", "/w/a", "/tmp/.tailor-build/p", "--die-with-parent", "--chdir",
                                               "/tmp/.tailor-build/p/src", "--", "python3",
                                               "/tmp/.tailor-build/p/build_wheel.py", "--out",
                                               "/tmp/.tailor-build/p/wheelhouse"}));
  EXPECT_EQ(w.env["MAKEFLAGS"], "-j4 --jobserver-auth=fifo:/tmp/.tailor-build/p/jobserver.fifo");
  EXPECT_EQ(w.env["HOME"], "/home/u");
}

TEST(FixedPath, ARealNamespaceSeesTheFolderAtTheFixedPath) {
  std::string bwrap = find_in_path("bwrap");
  if (bwrap.empty()) GTEST_SKIP() << "no bwrap on PATH";
  fs::path dir = tailor::test::scratch_dir("fixed_path");
  { std::ofstream(dir / "marker") << "here\n"; }
  SystemCommandRunner runner;
  auto fp = open_fixed_path(dir.string(), fixed_work_path("fixed-path-test"), bwrap, runner);
  if (!fp) GTEST_SKIP() << "bubblewrap cannot make a namespace here: " << fp.error().message;
  CommandSpec spec;
  spec.argv = fixed_path_argv(*fp, dir.string(), {"sh", "-c", "pwd; cat marker; echo made > made-inside"});
  CommandResult r = runner.run(spec);
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_EQ(r.out, "/tmp/.tailor-build/fixed-path-test\nhere\n");
  EXPECT_TRUE(fs::exists(dir / "made-inside"));  // written through to the real folder
  EXPECT_FALSE(fs::exists("/tmp/.tailor-build/fixed-path-test/marker"));  // nothing outside the namespace
  // A folder that does not exist: one line, no namespace.
  auto missing = open_fixed_path((dir / "missing").string(), fixed_work_path("x"), bwrap, runner);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.find('\n'), std::string::npos);
  auto none = open_fixed_path(dir.string(), fixed_work_path("x"), "", runner);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "no bwrap (bubblewrap) on PATH");
}

}  // namespace
}  // namespace tailor::executor
