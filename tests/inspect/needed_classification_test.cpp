// How needed libraries are classified and how a set of libraries sets the wheel's tag.
#include <gtest/gtest.h>

#include "inspect/cuda_providers.h"
#include "inspect/library_classifier.h"
#include "target_codes.h"

using namespace tailor::inspect;

namespace {
LibraryReport lib(const std::string& path, std::vector<std::string> needed, std::string glibc) {
  LibraryReport r;
  r.path = path;
  r.machine = "x86_64";
  r.needed = std::move(needed);
  r.version_needs = {{"libc.so.6", {"GLIBC_2.2.5", "GLIBC_" + glibc}}};
  return r;
}
}  // namespace

TEST(NeededClassification, EveryKind) {
  auto l = classify_library(lib("torch/lib/libtorch_cuda.so",
                                {"libc10.so", "libcudart.so.13", "libcuda.so.1", "libm.so.6",
                                 "libfoo.so.1", "ld-linux-x86-64.so.2"},
                                "2.17"),
                            {"libc10.so"});
  ASSERT_EQ(l.needed_libraries.size(), 6u);
  EXPECT_EQ(l.needed_libraries[0].kind, NeededKind::bundled);
  EXPECT_EQ(l.needed_libraries[1].kind, NeededKind::cuda_runtime);
  EXPECT_EQ(l.needed_libraries[1].wheels, std::vector<std::string>{"nvidia-cuda-runtime"});
  EXPECT_EQ(l.needed_libraries[1].systems, std::vector<std::string>{"cuda-cudart-13-*"});
  EXPECT_EQ(l.needed_libraries[2].kind, NeededKind::cuda_driver);
  EXPECT_EQ(l.needed_libraries[3].kind, NeededKind::whitelisted);
  EXPECT_EQ(l.needed_libraries[4].kind, NeededKind::system);
  EXPECT_EQ(l.needed_libraries[5].kind, NeededKind::whitelisted);
  EXPECT_EQ(l.manylinux.tag, "manylinux_2_17_x86_64");
  EXPECT_EQ(needed_kind_key(NeededKind::whitelisted), "manylinux-whitelist");
}

TEST(NeededClassification, SetFitIsTheLeastStrictAndSystemLibrariesLowerIt) {
  std::vector<InspectedLibrary> libs{classify_library(lib("a.so", {"libc.so.6"}, "2.17"), {}),
                                     classify_library(lib("b.so", {"libc.so.6"}, "2.28"), {})};
  auto fit = fit_of_set(libs);
  EXPECT_EQ(fit.tag, "manylinux_2_28_x86_64");
  EXPECT_EQ(fit.glibc_minor, 28);
  ASSERT_FALSE(fit.limiting.empty());
  EXPECT_EQ(fit.limiting[0], "b.so: GLIBC_2.28 (libc.so.6)");
  libs.push_back(classify_library(lib("c.so", {"libopenblas.so.0"}, "2.17"), {}));
  auto lowered = fit_of_set(libs);
  EXPECT_EQ(lowered.tag, "linux_x86_64");
  EXPECT_NE(lowered.limiting.back().find("c.so: needs libopenblas.so.0 from the system"),
            std::string::npos);
  EXPECT_EQ(fit_of_set({}).tag, "");
}

TEST(TargetTotals, SumAcrossLibrariesInCanonicalOrder) {
  auto a = classify_library(lib("a.so", {}, "2.17"), {});
  a.targets = with_codes({{"sm_80", 2, 100, 100, {"none"}}, {"compute_80", 1, 10, 40, {"zstd"}}});
  auto b = classify_library(lib("b.so", {}, "2.17"), {});
  b.targets = with_codes({{"sm_75", 1, 50, 50, {"none"}}, {"sm_80", 1, 30, 30, {"lz4"}}});
  auto totals = target_totals({a, b}, {}, 1000);
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[0].name, "sm_75");
  EXPECT_EQ(totals[1].name, "sm_80");
  EXPECT_EQ(totals[2].name, "compute_80");
  EXPECT_EQ(totals[1].libraries, 2u);
  EXPECT_EQ(totals[1].entries, 3u);
  EXPECT_EQ(totals[1].stored_bytes, 130u);
  EXPECT_EQ(totals[1].compression, (std::set<std::string>{"lz4", "none"}));
  EXPECT_DOUBLE_EQ(totals[1].share, 0.13);
}

// A claim problem names the versions that break the claim, highest first, and never the
// ones the claimed policy allows (CXXABI_1.3.9 and GLIBCXX_3.4.21 are fine for 2_28).
TEST(ManylinuxClaim, NamesOnlyTheVersionsTheClaimedPolicyRefuses) {
  LibraryReport r = lib("pkg/_C.so", {"libc.so.6", "libstdc++.so.6"}, "2.34");
  r.version_needs = {
      {"libstdc++.so.6", {"CXXABI_1.3.9", "GLIBCXX_3.4.21", "GLIBCXX_3.4.25", "GLIBCXX_3.4.29"}},
      {"libc.so.6", {"GLIBC_2.2.5", "GLIBC_2.32", "GLIBC_2.34"}}};
  std::vector<InspectedLibrary> libs{classify_library(r, {}),
                                     classify_library(lib("pkg/b.so", {}, "2.34"), {})};
  auto fit = fit_of_set(libs);
  ASSERT_EQ(fit.tag, "manylinux_2_34_x86_64");
  auto check = check_manylinux_claim({"manylinux_2_28_x86_64"}, fit, libs);
  EXPECT_FALSE(check.ok);
  EXPECT_EQ(check.problem,
            "claims manylinux_2_28_x86_64 but the libraries need manylinux_2_34_x86_64 (needs "
            "GLIBC_2.34 (libc.so.6, "
            "needed by pkg/_C.so and 1 more), GLIBC_2.32 (libc.so.6, needed by pkg/_C.so), "
            "GLIBCXX_3.4.29 "
            "(libstdc++.so.6, needed by pkg/_C.so), GLIBCXX_3.4.25 (libstdc++.so.6, needed by "
            "pkg/_C.so))");
  EXPECT_EQ(check.problem.find("CXXABI"), std::string::npos);
  EXPECT_EQ(check.problem.find("3.4.21"), std::string::npos);
  EXPECT_TRUE(check_manylinux_claim({"manylinux_2_34_x86_64"}, fit, libs).ok);
  EXPECT_TRUE(check_manylinux_claim({"linux_x86_64"}, fit, libs).ok);
  EXPECT_EQ(check_manylinux_claim({"manylinux_2_28_aarch64"}, fit, libs).problem,
            "claims manylinux_2_28_aarch64 but the libraries are x86_64");
}

// When the versions fit the claim and a system library breaks it, the system library is
// the reason given, not what kept a library from an older policy.
TEST(ManylinuxClaim, ASystemNeedIsTheReasonWhenTheVersionsFit) {
  LibraryReport r = lib("pkg/_C.so", {"libopenblas.so.0"}, "2.17");
  r.version_needs.push_back({"libstdc++.so.6", {"CXXABI_1.3.9", "GLIBCXX_3.4.21"}});
  std::vector<InspectedLibrary> libs{classify_library(r, {})};
  auto fit = fit_of_set(libs);
  ASSERT_EQ(fit.tag, "linux_x86_64");
  auto check = check_manylinux_claim({"manylinux_2_28_x86_64"}, fit, libs);
  EXPECT_EQ(
      check.problem,
      "claims manylinux_2_28_x86_64 but the libraries fit no manylinux policy (pkg/_C.so: needs "
      "libopenblas.so.0 from the system)");
}

// A library that links torch's libraries needs torch's C++ runtime too; without it, it
// carries a static copy of its own, and the first exception torch throws crashes it.
TEST(NeededClassification, TorchLinkedWithoutLibstdcxxIsARuntimeWarning) {
  // What g++ -static-libstdc++ (or a compiler that finds only libstdc++.a) leaves.
  auto static_runtime = classify_library(
      lib("fused_ops/_C.so", {"libc10.so", "libtorch.so", "libgcc_s.so.1", "libc.so.6"}, "2.17"),
      {});
  ASSERT_EQ(static_runtime.runtime_warnings.size(), 1u);
  EXPECT_NE(static_runtime.runtime_warnings[0].find(
                "links torch (libc10.so) but does not need libstdc++.so.6"),
            std::string::npos)
      << static_runtime.runtime_warnings[0];
  auto dynamic_runtime = classify_library(
      lib("fused_ops/_C.so",
          {"libc10.so", "libtorch.so", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"}, "2.17"),
      {});
  EXPECT_TRUE(dynamic_runtime.runtime_warnings.empty());
  // No torch library needed: a plain C library, or a C++ one that owns its runtime.
  auto plain = classify_library(
      lib("bnb/libbitsandbytes_cuda130.so", {"libcudart.so.13", "libc.so.6"}, "2.17"), {});
  EXPECT_TRUE(plain.runtime_warnings.empty());
  // A libc10.so bundled in the wheel is the wheel's own, not torch's: no warning here.
  auto bundled =
      classify_library(lib("x/_C.so", {"libc10.so", "libc.so.6"}, "2.17"), {"libc10.so"});
  EXPECT_TRUE(bundled.runtime_warnings.empty());
}

// data/manylinux/other_gpu_runtimes.toml: a library that needs ROCm's or oneAPI's runtime is
// that platform's backend, whatever the runtime's version; Intel's compiler runtime alone
// (CPU code needs it too) is not.
TEST(OtherGpuPlatform, ByTheRuntimeItNeeds) {
  EXPECT_EQ(other_gpu_platform(classify_library(
                lib("b/libb_rocm64.so", {"libhipblas.so.2", "libhipblaslt.so.0"}, "2.17"), {})),
            "ROCm");
  EXPECT_EQ(other_gpu_platform(
                classify_library(lib("b/libb_rocm72.so", {"libhipblas.so.3"}, "2.17"), {})),
            "ROCm");
  EXPECT_EQ(other_gpu_platform(
                classify_library(lib("b/libb_xpu.so", {"libsvml.so", "libsycl.so.8"}, "2.32"), {})),
            "oneAPI (XPU)");
  EXPECT_FALSE(other_gpu_platform(
      classify_library(lib("b/libb_cpu.so", {"libsvml.so", "libgomp.so.1"}, "2.17"), {})));
  EXPECT_FALSE(
      other_gpu_platform(classify_library(lib("b/libb_cuda.so", {"libcudart.so.13"}, "2.17"), {})));
  EXPECT_EQ(OtherGpuRuntimes::get().platform_of("libamdhip64.so.6"), "ROCm");
  EXPECT_FALSE(OtherGpuRuntimes::get().platform_of("libhipblas"));
}

// bitsandbytes 0.50.2 in small: its XPU backend needs GLIBC_2.32 and libsycl from the system,
// its ROCm one libhipblas; the CUDA library fits manylinux_2_24, so the tag holds for it.
TEST(ManylinuxClaim, JudgedAgainWithoutAnotherGpuPlatformsLibraries) {
  WheelReport w;
  w.libraries = {classify_library(lib("b/libb_cuda130.so", {"libcudart.so.13"}, "2.17"), {}),
                 classify_library(lib("b/libb_rocm64.so", {"libhipblas.so.2"}, "2.17"), {}),
                 classify_library(lib("b/libb_xpu2025.so", {"libsycl.so.8"}, "2.32"), {})};
  check_wheel_claim(w, {"manylinux_2_24_x86_64"});
  EXPECT_FALSE(w.claim_ok);
  EXPECT_TRUE(w.claim_ok_without_other_gpu) << w.claim_problem_without_other_gpu;
  ASSERT_EQ(w.other_gpu_libraries.size(), 2u);
  EXPECT_EQ(w.other_gpu_libraries[1].platform, "oneAPI (XPU)");
  // A CPU library needing libgomp.so.1 from the system breaks the tag for the libraries
  // that do load on a CUDA machine.
  w.libraries.push_back(classify_library(lib("b/libb_cpu.so", {"libgomp.so.1"}, "2.17"), {}));
  check_wheel_claim(w, {"manylinux_2_24_x86_64"});
  EXPECT_FALSE(w.claim_ok_without_other_gpu);
  EXPECT_EQ(w.claim_problem_without_other_gpu,
            "claims manylinux_2_24_x86_64 but the libraries fit no manylinux policy "
            "(b/libb_cpu.so: needs libgomp.so.1 "
            "from the system)");
}
