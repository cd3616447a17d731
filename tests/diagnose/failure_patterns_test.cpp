// The failure table is tested from the data itself: every example line must be
// diagnosed as its own pattern first, so a new row cannot shadow an old one unnoticed.
#include <gtest/gtest.h>

#include <set>

#include "diagnose/diagnosis.h"
#include "diagnose/failure_pattern.h"

namespace tailor::diagnose {
namespace {

TEST(FailurePatterns, BuiltInTableLoadsWithEveryRowComplete) {
  const auto& table = failure_patterns();
  ASSERT_GE(table.size(), 17u);  // at least one row per line of failures.md
  std::set<std::string> ids;
  for (const auto& p : table) {
    EXPECT_TRUE(ids.insert(p.id).second) << "duplicate id " << p.id;
    EXPECT_FALSE(p.needle.empty()) << p.id << ": built-in rows need a needle";
    EXPECT_FALSE(p.examples.empty()) << p.id << ": needs real example lines";
    for (const auto& e : p.examples)
      EXPECT_NE(e.find(p.needle), std::string::npos) << p.id << ": needle not in example " << e;
  }
}

class PatternExamples : public ::testing::TestWithParam<size_t> {};

TEST_P(PatternExamples, EachExampleIsDiagnosedAsItsOwnPatternFirst) {
  const auto& p = failure_patterns()[GetParam()];
  for (const auto& example : p.examples) {
    auto found = diagnose_log(example + "\n");
    ASSERT_FALSE(found.empty()) << p.id << " did not match: " << example;
    EXPECT_EQ(found.front().pattern_id, p.id) << example;
    EXPECT_EQ(found.front().line_number, 1u);
    // Every placeholder that names a group was filled from the line.
    EXPECT_EQ(found.front().fix.find("{1}"), std::string::npos);
    EXPECT_EQ(found.front().cause.find("{2"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(AllRows, PatternExamples,
                         ::testing::Range<size_t>(0, failure_patterns().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name = failure_patterns()[info.param].id;
                           for (auto& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(FailurePatterns, FixCarriesTheConcreteValuesFromTheLog) {
  auto d = diagnose_log("nvcc fatal   : Unsupported gpu architecture 'compute_100a'\n");
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].fix.find("compute_100a"), std::string::npos) << d[0].fix;

  d = diagnose_log(
      "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found (required "
      "by /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so)\n");
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].cause.find("libtorch_cpu.so"), std::string::npos) << d[0].cause;
  EXPECT_NE(d[0].fix.find("2.38"), std::string::npos) << d[0].fix;

  d = diagnose_log(
      "OSError: libnvrtc.so.13: cannot open shared object file: No such file or directory\n");
  ASSERT_FALSE(d.empty());
  EXPECT_NE(d[0].fix.find("libnvrtc.so.13"), std::string::npos);
}

TEST(FailurePatterns, WrappedMessageIsMatchedAcrossTheLineBreak) {
  // cpp_extension's message wraps after "compile"; the versions are on two lines.
  auto d = diagnose_log(
      "RuntimeError:\n"
      "The detected CUDA version (12.8) mismatches the version that was used to compile\n"
      "PyTorch (13.0). Please make sure to use the same CUDA versions.\n");
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].pattern_id, "cuda-version-mismatch");
  EXPECT_EQ(d[0].line_number, 2u);
  EXPECT_NE(d[0].fix.find("CUDA 13.0 toolkit"), std::string::npos) << d[0].fix;
  EXPECT_NE(d[0].fix.find("CUDA 12.8"), std::string::npos) << d[0].fix;
}

TEST(FailurePatterns, MissingOptionalGroupUsesTheTemplateDefault) {
  auto d = diagnose_log("version `GLIBC_2.39' not found\n");
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].cause.rfind("This library", 0), 0u) << d[0].cause;
}

TEST(FailurePatterns, SpecificBeforeGenericAndOneDiagnosisPerCause) {
  std::string log =
      "[1/3] c++ -c a.cpp\n"
      "FAILED: a.o\n"
      "c++: fatal error: Killed signal terminated program cc1plus\n"
      "compilation terminated.\n"
      "ninja: build stopped: subcommand failed.\n"
      "  File \"/venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py\", line 2, in "
      "_get_cuda_arch_flags\n"
      "    arch_list[-1] += '+PTX'\n"
      "IndexError: list index out of range\n";
  auto d = diagnose_log(log);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].pattern_id, "oom-compiler-killed");
  EXPECT_EQ(d[0].line_number, 3u);
  EXPECT_EQ(d[1].pattern_id, "arch-list-unset-no-gpu");
  EXPECT_EQ(d[1].line_number, 7u);  // the source line, not the frame above it
  EXPECT_EQ(d[2].pattern_id, "ninja-build-stopped");
  EXPECT_NE(d[2].fix.find("line 2"), std::string::npos) << d[2].fix;
}

TEST(FailurePatterns, CleanLogHasNoDiagnosis) {
  EXPECT_TRUE(diagnose_log("[1/2] c++ -c a.cpp\n[2/2] c++ -shared a.o -o a.so\n").empty());
  EXPECT_TRUE(diagnose_log("").empty());
}

TEST(FailurePatterns, ParserNamesTheRowAndFieldOfABrokenTable) {
  auto r = parse_failure_patterns(
      "[[pattern]]\nid = \"x\"\nsymptom = \"(\"\ncause = \"c\"\nfix = \"f\"\n", "t.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(
      r.error().message.rfind("t.toml: pattern[0].symptom: not a valid regex (pattern 'x')", 0), 0u)
      << r.error().message;

  r = parse_failure_patterns("[[pattern]]\nid = \"x\"\nsymptom = \"a\"\nfix = \"f\"\n", "t.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "t.toml: pattern[0].cause: missing (expected a string)");

  r = parse_failure_patterns("[[pattern]\n", "t.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("t.toml:1", 0), 0u) << r.error().message;
}

// A clone that cannot reach its remote is tailor's clone step failing, never the package's
// build: a diagnosis that knows the failed step uses only that step's rows, and says it once.
TEST(FailurePatterns, TheFailedStepChoosesTheRows) {
  const std::string log =
      "### tailor step 1/2: clone source\n"
      "tailor: clone: cannot clone v2.12.1 from https://github.com/pytorch/pytorch: fatal: "
      "unable to access 'https://github.com/pytorch/pytorch/': Could not resolve host: "
      "github.com\n";
  DiagnoseOptions clone;
  clone.step = "clone";
  auto d = diagnose_log(log, clone);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].pattern_id, "clone-unreachable");
  EXPECT_EQ(d[0].cause.find("package's choice"), std::string::npos) << d[0].cause;
  DiagnoseOptions build;
  build.step = "build";
  for (const auto& b : diagnose_log(log, build))
    EXPECT_NE(b.pattern_id.rfind("clone-", 0), 0u) << b.pattern_id;
  // The package's own build that cannot reach a host is still the package's choice.
  auto pkg = diagnose_log(
      "fatal: unable to access 'https://github.com/x/y.git/': Could not resolve host: github.com\n",
      build);
  ASSERT_FALSE(pkg.empty());
  EXPECT_EQ(pkg[0].pattern_id, "build-needs-network");
  EXPECT_FALSE(parse_failure_patterns(
      "[[pattern]]\nid = \"x\"\nsymptom = \"x\"\ncause = \"c\"\nfix = \"f\"\nsteps = [\"venv\"]\n",
      "t.toml"));
}

}  // namespace
}  // namespace tailor::diagnose
