#include "builder/preflight.h"

#include <gtest/gtest.h>

using namespace tailor::builder;
namespace cuda = tailor::cuda;

namespace {
PreflightFacts healthy() {
  PreflightFacts f;
  f.nvcc_path = "/usr/local/cuda-13.0/bin/nvcc";
  f.nvcc_version = "13.0.88";
  f.nvcc_major = 13;
  f.host_compiler = "gcc 12.2.0 (/usr/bin/g++)";
  f.host_compiler_accepted = true;
  f.python = "/usr/bin/python3";
  f.python_runs = true;
  f.torch_version = "2.11.0+cu130";
  f.torch_cuda = cuda::CudaVersion{13, 0};
  f.build_dir = "/tmp";
  f.disk_free_bytes = uint64_t{100} << 30;
  f.disk_needed_bytes = uint64_t{4} << 30;
  return f;
}
const PreflightCheck* find(const PreflightReport& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return &c;
  return nullptr;
}
}  // namespace

TEST(Preflight, HealthyHostPasses) {
  auto r = run_preflight(healthy());
  EXPECT_TRUE(r.ok()) << render_preflight(r, PreflightVerbosity::all);
  EXPECT_TRUE(r.problems().empty());
  ASSERT_TRUE(find(r, "cuda-match"));
}

TEST(Preflight, CudaMajorMismatchIsTheTorchRuntimeError) {
  auto f = healthy();
  f.nvcc_version = "12.6.85";
  f.nvcc_major = 12;
  auto r = run_preflight(f);
  ASSERT_FALSE(r.ok());
  auto* c = find(r, "cuda-match");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->ok);
  EXPECT_NE(c->problem.find("mismatches the version that was used to compile PyTorch"),
            std::string::npos);
  EXPECT_NE(c->fix.find("CUDA 13.x toolkit"), std::string::npos);
}

TEST(Preflight, CollectsEveryProblemAtOnce) {
  auto f = healthy();
  f.unsupported_targets = {"CUDA 13.0 cannot target sm_60; its lowest is 7.5 (sm_75)"};
  f.host_compiler_accepted = false;
  f.host_compiler_limit = "gcc <= 11";
  f.torch_version.clear();
  f.torch_cuda.reset();
  f.disk_free_bytes = uint64_t{1} << 30;
  auto r = run_preflight(f);
  std::vector<std::string> names;
  for (auto* p : r.problems()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"targets", "torch", "host-compiler", "disk"}));
  for (auto* p : r.problems()) EXPECT_FALSE(p->fix.empty()) << p->name;
  std::string text = render_preflight(r, PreflightVerbosity::problems);
  EXPECT_NE(text.find("sm_60"), std::string::npos);
  EXPECT_NE(text.find("gcc <= 11"), std::string::npos);
  EXPECT_NE(text.find("1.0 GiB free"), std::string::npos);
}

TEST(Preflight, MissingNvccAndPython) {
  PreflightFacts f;
  f.python = "/nope/python";
  auto r = run_preflight(f);
  std::vector<std::string> names;
  for (auto* p : r.problems()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"nvcc", "python"}));
}

TEST(Preflight, CpuOnlyTorchCannotBuildCudaExtensions) {
  auto f = healthy();
  f.torch_cuda.reset();
  auto r = run_preflight(f);
  auto* c = find(r, "torch");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->ok);
  EXPECT_NE(c->problem.find("CPU-only"), std::string::npos);
}

TEST(Preflight, TorchNotRequiredForTorchBuilds) {
  auto f = healthy();
  f.torch_required = false;
  f.torch_version.clear();
  f.torch_cuda.reset();
  EXPECT_TRUE(run_preflight(f).ok());
}

namespace {

TEST(PreflightCxxRuntime, AStaticRuntimeStopsTheBuildBeforeAnyCompile) {
  tailor::builder::PreflightFacts f;
  f.cxx_runtime_compiler = "/opt/gcc/bin/g++";
  f.cxx_runtime_dynamic = false;
  f.cxx_runtime_detail =
      "/opt/gcc/bin/g++ links the C++ runtime statically (its test library needs no "
      "libstdc++.so.6)";
  auto r = tailor::builder::run_preflight(f);
  EXPECT_FALSE(r.ok());
  bool saw = false;
  for (const auto* c : r.problems())
    if (c->name == "cxx-runtime") {
      saw = true;
      EXPECT_NE(c->problem.find("crashes on the first exception torch throws"), std::string::npos);
      EXPECT_NE(c->fix.find("CXX"), std::string::npos);
    }
  EXPECT_TRUE(saw);
  f.cxx_runtime_dynamic = true;
  f.cxx_runtime_detail = "g++ links libstdc++.so.6 as a shared library";
  // (The report outlives the loop: problems() points into it.)
  const auto dynamic = tailor::builder::run_preflight(f);
  for (const auto* c : dynamic.problems()) EXPECT_NE(c->name, "cxx-runtime");
  f.cxx_runtime_dynamic.reset();  // could not link a test library: the build will say why
  const auto unknown = tailor::builder::run_preflight(f);
  for (const auto* c : unknown.problems()) EXPECT_NE(c->name, "cxx-runtime");
}

}  // namespace
