// The C++ runtime check with the real compiler: the system's g++ links libstdc++.so.6; the
// same g++ told to link it statically (as a relocated gcc with only libstdc++.a does) is
// caught; a compiler that does not run is "not checked", with the reason.
#include "probe/cxx_runtime.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"
#include "util/process.h"

namespace tailor::probe {
namespace {

namespace fs = std::filesystem;

TEST(CxxRuntime, TheSystemCompilerLinksItDynamicallyAStaticOneIsCaught) {
  std::string gxx = find_in_path("g++");
  if (gxx.empty()) GTEST_SKIP() << "no g++ on PATH";
  fs::path dir = tailor::test::scratch_dir("cxx_runtime");
  SystemCommandRunner runner;
  CxxRuntime ok = check_cxx_runtime(gxx, dir.string(), runner);
  ASSERT_TRUE(ok.checked) << ok.detail;
  EXPECT_TRUE(ok.dynamic);
  EXPECT_EQ(ok.runtime, "libstdc++.so.6");
  // A wrapper that links the runtime statically, as the GPU machine's CXX did.
  fs::path wrapper = dir / "static-g++";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\nexec " << gxx << " -static-libstdc++ -static-libgcc \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  CxxRuntime bad = check_cxx_runtime(wrapper.string(), dir.string(), runner);
  ASSERT_TRUE(bad.checked) << bad.detail;
  EXPECT_FALSE(bad.dynamic);
  EXPECT_NE(bad.detail.find("statically"), std::string::npos);
  // A command line works too ("ccache g++").
  CxxRuntime words = check_cxx_runtime("env " + gxx, dir.string(), runner);
  EXPECT_TRUE(words.checked && words.dynamic) << words.detail;
  // Nothing to run: not checked, one line.
  CxxRuntime missing = check_cxx_runtime((dir / "no-such-g++").string(), dir.string(), runner);
  EXPECT_FALSE(missing.checked);
  EXPECT_EQ(missing.detail.find('\n'), std::string::npos);
  EXPECT_FALSE(missing.detail.empty());
  // Nothing is left behind in the scratch folder but the wrapper.
  size_t left = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++left;
  EXPECT_EQ(left, 1u);
}

TEST(CxxRuntime, TheExtensionCompilerIsCxxElseCxxOnPath) {
  EXPECT_EQ(extension_cxx("/opt/gcc/bin/g++"), "/opt/gcc/bin/g++");
  EXPECT_EQ(extension_cxx("  ccache g++ "), "ccache g++");
  EXPECT_NE(extension_cxx(nullptr), "");
  EXPECT_EQ(extension_cxx("   "), extension_cxx(nullptr));
}

}  // namespace
}  // namespace tailor::probe
