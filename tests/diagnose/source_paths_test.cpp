// A compile error names the user's own file and quotes the compiler (issue 27): the path
// nvcc prints relative to ninja's build folder, in the copy tailor built inside its
// fixed-path namespace, maps back through the log's own step header.
#include "diagnose/source_paths.h"

#include <gtest/gtest.h>

#include "diagnose/diagnosis.h"
#include "diagnose/log_lines.h"

namespace tailor::diagnose {
namespace {

// The shape of a real log (tests/e2e/data/tiny_ext with a planted error, built by tailor).
const char* k_log =
    "### tailor step 1/1: build the generic wheel (PEP 517) (2026-11-27T15:19:14Z)\n"
    "### cd /home/u/.cache/tailor/extensions/broken-c2ca712be245/src && unset MAX_JOBS; "
    "CC=/tmp/.tailor-build/tiny_ext/"
    "compiler-wrappers/gcc /usr/bin/bwrap --dev-bind / / --tmpfs /tmp/.tailor-build --bind "
    "/home/u/.cache/tailor/extensions/broken-c2ca712be245 /tmp/.tailor-build/tiny_ext "
    "--die-with-parent --chdir "
    "/tmp/.tailor-build/tiny_ext/src -- python3 -u "
    "/tmp/.tailor-build/tiny_ext/tailor-build-wheel.py\n"
    "running build_ext\n"
    "[1/2] /tmp/.tailor-build/tiny_ext/compiler-wrappers/g++ -c "
    "/tmp/.tailor-build/tiny_ext/src/csrc/module.cpp -o "
    "/tmp/.tailor-build/tiny_ext/src/build/temp.linux-x86_64-cpython-311/csrc/module.o\n"
    "FAILED: [code=2] "
    "/tmp/.tailor-build/tiny_ext/src/build/temp.linux-x86_64-cpython-311/csrc/scale.o \n"
    "/usr/bin/ccache /usr/local/cuda-13.0/bin/nvcc -MD -c -c "
    "/tmp/.tailor-build/tiny_ext/src/csrc/scale.cu -o "
    "/tmp/.tailor-build/tiny_ext/src/build/temp.linux-x86_64-cpython-311/csrc/scale.o "
    "-gencode=arch=compute_75,code=sm_75\n"
    "../../csrc/scale.cu(10): error: identifier \"undefined_factor\" is undefined\n"
    "    if (i < n) x[i] *= undefined_factor;\n"
    "                       ^\n"
    "\n"
    "1 error detected in the compilation of \"../../csrc/scale.cu\".\n"
    "ninja: build stopped: subcommand failed.\n";

TEST(SourcePaths, ReadsTheStepHeader) {
  const auto lines = split_log_lines(k_log);
  BuildPaths p = read_build_paths(lines, lines.size());
  EXPECT_EQ(p.step_dir, "/home/u/.cache/tailor/extensions/broken-c2ca712be245/src");
  ASSERT_EQ(p.binds.size(), 1u);
  EXPECT_EQ(p.binds[0].first, "/tmp/.tailor-build/tiny_ext");
  EXPECT_EQ(p.binds[0].second, "/home/u/.cache/tailor/extensions/broken-c2ca712be245");
  EXPECT_TRUE(read_build_paths(lines, 1).step_dir.empty());  // nothing above the header
}

TEST(SourcePaths, NinjaRelativePathMapsToTheCopyAndTheUsersFile) {
  const auto lines = split_log_lines(k_log);
  const BuildPaths p = read_build_paths(lines, 6);
  SourcePath s = map_source_path("../../csrc/scale.cu", lines, 6, p, "");
  EXPECT_EQ(s.build_file, "/home/u/.cache/tailor/extensions/broken-c2ca712be245/src/csrc/scale.cu");
  EXPECT_EQ(s.relative, "csrc/scale.cu");
  EXPECT_EQ(s.shown(), "csrc/scale.cu in the package's source");
  EXPECT_EQ(map_source_path("../../csrc/scale.cu", lines, 6, p, "/home/u/broken/").shown(),
            "/home/u/broken/csrc/scale.cu");
  // An absolute path inside the namespace, and one outside the package (a header of torch).
  EXPECT_EQ(map_source_path("/tmp/.tailor-build/tiny_ext/src/csrc/module.cpp", lines, 6, p,
                            "/home/u/broken")
                .shown(),
            "/home/u/broken/csrc/module.cpp");
  SourcePath header =
      map_source_path("/usr/include/c++/11/bits/std_function.h", lines, 6, p, "/home/u/broken");
  EXPECT_TRUE(header.relative.empty());
  EXPECT_EQ(header.shown(), "/usr/include/c++/11/bits/std_function.h");
}

TEST(SourcePaths, TheDiagnosisQuotesTheCompilerAndNamesTheUsersFile) {
  auto d = diagnose_log(k_log, DiagnoseOptions{"/home/u/broken"});
  ASSERT_GE(d.size(), 2u);
  EXPECT_EQ(d[0].pattern_id, "nvcc-compile-error");
  EXPECT_EQ(d[0].line_number, 7u);
  EXPECT_EQ(d[0].quoted_line,
            "../../csrc/scale.cu(10): error: identifier \"undefined_factor\" is undefined");
  EXPECT_EQ(d[0].fix,
            "Correct line 10 of /home/u/broken/csrc/scale.cu (the build compiled its copy, "
            "/home/u/.cache/tailor/extensions/broken-c2ca712be245/src/csrc/scale.cu), where the "
            "compiler says: identifier "
            "\"undefined_factor\" is undefined; then build again (later errors in the log often "
            "follow from this first one).");
  EXPECT_TRUE(d[0].generic());  // tailor does not know why the code is wrong
  // Without the source folder: the path inside the package.
  auto plain = diagnose_log(k_log);
  EXPECT_NE(
      plain[0].cause.find(
          "line 10 of csrc/scale.cu in the package's source: identifier \"undefined_factor\" is "
          "undefined"),
      std::string::npos)
      << plain[0].cause;
  // No diagnosis sends the user to run `tailor explain` on the log they are reading.
  for (const auto& x : plain)
    EXPECT_EQ(x.fix.find("tailor explain"), std::string::npos) << x.pattern_id << ": " << x.fix;
}

TEST(SourcePaths, GccErrorInAHandWrittenLog) {
  auto d = diagnose_log(
      "FAILED: b.o\n/src/b.cpp:7:3: error: 'frobnicate' was not declared in this scope\n"
      "ninja: build stopped: subcommand failed.\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].pattern_id, "cxx-compile-error");
  EXPECT_NE(d[0].fix.find("Correct line 7 of /src/b.cpp, where the compiler says: 'frobnicate' was "
                          "not declared in this "
                          "scope;"),
            std::string::npos)
      << d[0].fix;
  EXPECT_EQ(d[1].pattern_id, "ninja-build-stopped");
}

}  // namespace
}  // namespace tailor::diagnose
