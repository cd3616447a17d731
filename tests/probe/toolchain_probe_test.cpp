#include <gtest/gtest.h>

#include "probe/build_tools.h"
#include "probe/probe.h"
#include "support/fake_host.h"

namespace tailor::probe {
namespace {

TEST(CompilerVersion, Gcc) {
  auto c = parse_compiler_version(
      "gcc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, CompilerKind::gcc);
  EXPECT_EQ(compiler_kind_name(c->kind), "gcc");
  EXPECT_EQ(c->version, "12.2.0");
  EXPECT_EQ(c->major, 12);
  c = parse_compiler_version("g++ (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3)\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->major, 14);
}

TEST(CompilerVersion, Clang) {
  auto c = parse_compiler_version("Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, CompilerKind::clang);
  EXPECT_EQ(compiler_kind_name(c->kind), "clang");
  EXPECT_EQ(c->version, "14.0.6");
  EXPECT_EQ(c->major, 14);
  c = parse_compiler_version("Ubuntu clang version 18.1.3 (1ubuntu1)\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->version, "18.1.3");
}

TEST(CompilerVersion, NotACompiler) { EXPECT_FALSE(parse_compiler_version("hello world\n")); }

TEST(ToolVersion, Banners) {
  EXPECT_EQ(parse_tool_version("1.13.1\n"), "1.13.1");
  EXPECT_EQ(parse_tool_version("cmake version 3.25.1\n\nCMake suite maintained by Kitware\n"),
            "3.25.1");
  EXPECT_EQ(parse_tool_version("ccache version 4.8\nFeatures: file-storage\n"), "4.8");
  EXPECT_EQ(parse_tool_version("pip 24.0 from /usr/lib/python3/dist-packages/pip (python 3.11)\n"),
            "24.0");
  EXPECT_FALSE(parse_tool_version("no digits"));
}

TEST(FindTools, NinjaJobserverFromVersionAndMissingToolsLeftOut) {
  test::FakeHostFiles f;
  f.env["PATH"] = "/a:/b";
  f.executables = {"/a/ninja", "/b/cmake", "/b/ninja"};
  test::FakeCommandRunner runner;
  runner.answer("/a/ninja", "1.13.1\n");
  runner.answer("/b/cmake", "cmake version 3.25.1\n");
  auto tools = find_tools(f, runner);
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "ninja");
  EXPECT_EQ(tools[0].path, "/a/ninja");  // first on PATH
  EXPECT_TRUE(tools[0].jobserver_client);
  EXPECT_EQ(tools[1].name, "cmake");
  EXPECT_FALSE(tools[1].jobserver_client);

  runner.answer("/a/ninja", "1.11.1\n");
  EXPECT_FALSE(find_tools(f, runner)[0].jobserver_client);
  runner.answer("/a/ninja", "2.0.0\n");
  EXPECT_TRUE(find_tools(f, runner)[0].jobserver_client);
}

TEST(BuildTools, JobserverClientsFromTheData) {
  // data/probe/build_tools.toml: the versions find_tools compares against.
  EXPECT_EQ(jobserver_client_since().ninja, "1.13");
  EXPECT_EQ(jobserver_client_since().make, "4.4");
}

TEST(FindHostCompilers, VersionedAndDeduplicated) {
  test::FakeHostFiles f;
  f.env["PATH"] = "/usr/bin";
  f.executables = {"/usr/bin/x86_64-linux-gnu-gcc-12", "/usr/bin/clang-14"};
  f.links["/usr/bin/gcc"] = "/usr/bin/x86_64-linux-gnu-gcc-12";
  f.links["/usr/bin/gcc-12"] = "/usr/bin/x86_64-linux-gnu-gcc-12";
  f.links["/usr/bin/clang"] = "/usr/bin/clang-14";
  test::FakeCommandRunner runner;
  runner.answer("/usr/bin/gcc", "gcc (Debian 12.2.0-14) 12.2.0\n");
  runner.answer("/usr/bin/clang", "Debian clang version 14.0.6\n");
  auto cs = find_host_compilers(f, runner);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].path, "/usr/bin/gcc");
  EXPECT_EQ(cs[0].major, 12);
  EXPECT_EQ(cs[1].kind, CompilerKind::clang);
}

}  // namespace
}  // namespace tailor::probe
