// What fails an inspect run and what only warns (inspect_outcome.h), over reports made in
// the test: each failure is one line that names the report line to read.
#include "inspect/inspect_outcome.h"

#include <gtest/gtest.h>

namespace tailor::inspect {
namespace {

WheelReport sound_wheel(const std::string& path) {
  WheelReport w;
  w.path = path;
  w.record.present = true;
  w.record.ok = 3;
  return w;
}

LibraryVerdict gpu_verdict(const std::string& library, bool pass) {
  LibraryVerdict v;
  v.check = VerdictCheck::gpu;
  v.library = library;
  v.device = {9, 0};
  v.pass = pass;
  v.mode = pass ? "native" : "none";
  return v;
}

TEST(InspectOutcome, EverythingHoldsIsNoFailure) {
  InspectReport report;
  report.wheels.push_back(sound_wheel("/d/demo-1.0-py3-none-linux_x86_64.whl"));
  Verdicts verdicts;
  verdicts.items.push_back(gpu_verdict("/d/demo.whl!demo/k.so", true));
  auto outcome = judge(report, &verdicts);
  EXPECT_FALSE(outcome.failed());
  EXPECT_TRUE(outcome.warnings.empty());
}

TEST(InspectOutcome, FailedGpuVerdictNamesTheDeviceAndTheLibrary) {
  InspectReport report;
  Verdicts verdicts;
  verdicts.items.push_back(gpu_verdict("/d/demo.whl!demo/a.so", false));
  verdicts.items.push_back(gpu_verdict("/d/demo.whl!demo/b.so", true));
  auto outcome = judge(report, &verdicts);
  ASSERT_TRUE(outcome.failed());
  EXPECT_EQ(
      outcome.failure_line(),
      "--gpu 9.0: 1 of 2 libraries does not run on it (demo/a.so) (see the verdict FAIL lines)");
}

TEST(InspectOutcome, ExactAndRequireSayWhatDiffers) {
  InspectReport report;
  Verdicts verdicts;
  LibraryVerdict exact;
  exact.check = VerdictCheck::exact;
  exact.library = "/d/libk.so";
  exact.missing = {"sm_86"};
  exact.extra = {"compute_90", "compute_120"};
  verdicts.items.push_back(exact);
  LibraryVerdict require = exact;
  require.check = VerdictCheck::require;
  require.extra.clear();
  verdicts.items.push_back(require);
  auto outcome = judge(report, &verdicts);
  ASSERT_EQ(outcome.failures.size(), 2u);
  EXPECT_EQ(outcome.failures[0],
            "--exact: 1 of 1 library differs from the spec (/d/libk.so lacks sm_86; has extra "
            "compute_90 compute_120) "
            "(see the verdict FAIL lines)");
  EXPECT_EQ(outcome.failures[1],
            "--require: 1 of 1 library lacks required targets (/d/libk.so lacks sm_86) (see the "
            "verdict FAIL lines)");
}

TEST(InspectOutcome, RecordAndManylinuxFailuresNameTheWheel) {
  InspectReport report;
  auto w = sound_wheel("/d/demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  w.record.mismatches.push_back({"demo/p.so", "sha256 differs"});
  w.claim_ok = w.claim_ok_without_other_gpu = false;
  w.claim_problem = w.claim_problem_without_other_gpu =
      "claims manylinux_2_17_x86_64 but the libraries need manylinux_2_34_x86_64 (needs GLIBC_2.34 "
      "(libc.so.6, needed by demo/fast.so))";
  report.wheels.push_back(w);
  auto outcome = judge(report, nullptr);
  ASSERT_EQ(outcome.failures.size(), 2u);
  EXPECT_EQ(outcome.failures[0],
            "demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl: RECORD check failed: 1 mismatched, 0 "
            "unlisted, 0 missing "
            "(see the RECORD line)");
  EXPECT_EQ(outcome.failures[1],
            "demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl: its manylinux tag is wrong: " +
                w.claim_problem + " (see the manylinux line)");
}

// Issue 27: bitsandbytes 0.50.2 passed every --gpu H100 verdict and still exited 1, silently,
// because its ROCm and XPU backends need their vendor's runtime from the system.
TEST(InspectOutcome, ManylinuxWrongOnlyForAnotherGpuPlatformWarns) {
  InspectReport report;
  auto w = sound_wheel("/d/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl");
  w.manylinux_claimed = "manylinux_2_24_x86_64";
  w.claim_ok = false;
  w.claim_problem = "claims manylinux_2_24_x86_64 but the libraries fit no manylinux policy";
  w.other_gpu_libraries = {{"bitsandbytes/libbitsandbytes_rocm64.so", "ROCm"},
                           {"bitsandbytes/libbitsandbytes_xpu2025.so", "oneAPI (XPU)"}};
  report.wheels.push_back(w);
  Verdicts verdicts;
  verdicts.items.push_back(gpu_verdict("bnb.whl!bitsandbytes/libbitsandbytes_cuda130.so", true));
  auto outcome = judge(report, &verdicts);
  EXPECT_FALSE(outcome.failed()) << outcome.failure_line();
  ASSERT_EQ(outcome.warnings.size(), 1u);
  EXPECT_EQ(outcome.warnings[0],
            "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl: its manylinux tag "
            "manylinux_2_24_x86_64 holds for the "
            "CUDA and CPU libraries but not for the ROCm and oneAPI (XPU) libraries "
            "(bitsandbytes/libbitsandbytes_rocm64.so and 1 more), which load only on those GPUs: a "
            "warning, not a failure "
            "(see the manylinux line)");
}

TEST(InspectOutcome, MismatchedWheelTagsAndSkippedFilesWarn) {
  InspectReport report;
  auto w = sound_wheel("/d/demo-1.0-py3-none-linux_x86_64.whl");
  w.tags_consistent = false;
  report.wheels.push_back(w);
  report.skipped.push_back("/d/x: permission denied");
  auto outcome = judge(report, nullptr);
  EXPECT_FALSE(outcome.failed());
  EXPECT_EQ(outcome.warnings.size(), 2u);
}

// A torch-linked wheel that lets pip pick any torch (the issue's `torch>=2.0.0`, or no torch
// requirement at all) warns; a pinned one, and a wheel that does not link torch, do not.
TEST(InspectOutcome, TorchLinkedWheelWithoutAPinWarns) {
  auto with = [](std::vector<std::string> requires_dist, NeededKind kind) {
    InspectReport report;
    auto w = sound_wheel("/d/demo-1.0-cp311-cp311-linux_x86_64.whl");
    InspectedLibrary lib;
    lib.path = "demo/_C.so";
    lib.needed_libraries.push_back({"libc10.so", kind, {}, {}, "", "", "", ""});
    w.libraries.push_back(lib);
    w.requires_dist = std::move(requires_dist);
    report.wheels.push_back(w);
    return judge(report, nullptr);
  };
  auto loose = with({"numpy", "torch>=2.0.0"}, NeededKind::torch);
  EXPECT_FALSE(loose.failed());
  ASSERT_EQ(loose.warnings.size(), 1u);
  EXPECT_EQ(loose.warnings[0],
            "demo-1.0-cp311-cp311-linux_x86_64.whl: demo/_C.so links torch (libc10.so) but the "
            "wheel does not pin the torch it was built against (METADATA: Requires-Dist: "
            "torch>=2.0.0): pip and uv may install another torch beside it, whose symbols it "
            "lacks");
  auto none = with({}, NeededKind::torch);
  ASSERT_EQ(none.warnings.size(), 1u);
  EXPECT_NE(none.warnings[0].find("(METADATA: no torch requirement)"), std::string::npos);
  EXPECT_TRUE(with({"torch==2.11.0"}, NeededKind::torch).warnings.empty());
  EXPECT_TRUE(with({"torch>=2.0.0"}, NeededKind::bundled).warnings.empty());
}

TEST(InspectOutcome, FailureLineKeepsToOneLine) {
  InspectOutcome outcome;
  outcome.failures = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(outcome.failure_line(), "a; b; c (and 2 more)");
  Verdicts verdicts;
  verdicts.problems.push_back("no library carries CUDA device code");
  auto judged = judge(InspectReport{}, &verdicts);
  EXPECT_EQ(judged.failure_line(),
            "verdict: no library carries CUDA device code (see the verdict FAIL line)");
}

}  // namespace
}  // namespace tailor::inspect
