// Every validation problem, and that they are all collected in one pass.
#include <gtest/gtest.h>

#include "plan/torch_plan.h"
#include "support/host_reports.h"

namespace tailor::plan {
namespace {

using testing::graviton_t4g_host;
using testing::x86_cuda128_host;

TorchVariant base() {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{12, 6};
  v.python = "3.10";
  v.arch = {"7.5"};
  return v;
}

const PlanProblem* find(const TorchPlan& p, const std::string& field) {
  for (const auto& pr : p.problems)
    if (pr.field == field) return &pr;
  return nullptr;
}

ResolveOptions here() {
  ResolveOptions o;
  o.purpose = PlanPurpose::build_here;
  return o;
}

TEST(TorchValidation, TargetThatNvccCannotProduce) {
  TorchVariant v = base();
  v.cuda = cuda::CudaVersion{13, 0};
  v.arch = {"6.0"};
  auto host = graviton_t4g_host();
  TorchPlan p = resolve_torch_plan(v, host);
  const PlanProblem* pr = find(p, "arch");
  ASSERT_NE(pr, nullptr);
  EXPECT_NE(pr->message.find("sm_60"), std::string::npos) << pr->message;
  EXPECT_EQ(p.exit_code(), 2);
}

TEST(TorchValidation, HostGccNewerThanNvccAccepts) {
  auto host = graviton_t4g_host();
  host.compilers = {{"/usr/bin/g++-14", probe::CompilerKind::gcc, "14.2.0", 14}};
  TorchPlan p = resolve_torch_plan(base(), host, here());
  const PlanProblem* pr = find(p, "host.compiler");
  ASSERT_NE(pr, nullptr);
  EXPECT_EQ(pr->severity, ProblemSeverity::error);
  EXPECT_NE(pr->message.find("up to 13"), std::string::npos) << pr->message;
  EXPECT_EQ(p.exit_code(), 1);
  // Several compilers: the newest that fits is chosen.
  host.compilers.push_back({"/usr/bin/g++-12", probe::CompilerKind::gcc, "12.3.0", 12});
  TorchPlan q = resolve_torch_plan(base(), host, here());
  EXPECT_EQ(find(q, "host.compiler"), nullptr);
  EXPECT_EQ(q.env.at("CUDAHOSTCXX"), "/usr/bin/g++-12");
}

// The limit is the installed toolkit's own (probe::toolkit_accepts_compiler over its
// host_config.h), and the data's for that CUDA only when the probe read none.
TEST(TorchValidation, TheInstalledToolkitsHostCompilerLimitWinsOverTheData) {
  auto host = graviton_t4g_host();  // CUDA 12.6: the data says GCC <= 13
  host.compilers = {{"/usr/bin/g++-13", probe::CompilerKind::gcc, "13.2.0", 13},
                    {"/usr/bin/g++-12", probe::CompilerKind::gcc, "12.3.0", 12}};
  host.cuda_toolkits[0].max_gcc_major = 12;
  TorchPlan p = resolve_torch_plan(base(), host, here());
  EXPECT_EQ(find(p, "host.compiler"), nullptr);
  EXPECT_EQ(p.env.at("CUDAHOSTCXX"), "/usr/bin/g++-12");
  EXPECT_EQ(p.max_gcc, 12);
  host.cuda_toolkits[0].max_gcc_major.reset();
  TorchPlan q = resolve_torch_plan(base(), host, here());
  EXPECT_EQ(q.env.at("CUDAHOSTCXX"), "/usr/bin/g++-13");
  EXPECT_EQ(q.max_gcc, 13);
}

TEST(TorchValidation, PythonNotSupportedByTorch) {
  TorchVariant v = base();
  v.python = "3.9";
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  bool found = false;
  for (const auto& pr : p.problems)
    found =
        found ||
        (pr.field == "python" &&
         pr.message ==
             "torch 2.9.1 does not support Python 3.9 (it supports 3.10, 3.11, 3.12, 3.13, 3.14)");
  EXPECT_TRUE(found);
  EXPECT_EQ(p.exit_code(), 2);
}

TEST(TorchValidation, CudaNotSupportedByTorch) {
  TorchVariant v = base();
  v.cuda = cuda::CudaVersion{11, 8};
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  const PlanProblem* pr = find(p, "cuda");
  ASSERT_NE(pr, nullptr);
  EXPECT_NE(pr->message.find("CUDA 11.8"), std::string::npos) << pr->message;
}

TEST(TorchValidation, Avx512OnAarch64) {
  TorchVariant v = base();
  v.cpu_target = "avx512";
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  const PlanProblem* pr = find(p, "cpu_target");
  ASSERT_NE(pr, nullptr);
  EXPECT_NE(pr->message.find("x86-64-v4 is for x86_64, not aarch64"), std::string::npos)
      << pr->message;
  EXPECT_NE(pr->fix.find("neoverse-v2"), std::string::npos);
  v.cpu_target = "neoverse-v2";
  TorchPlan q = resolve_torch_plan(v, graviton_t4g_host());
  EXPECT_EQ(q.env.at("CXXFLAGS"), "-g0 -mcpu=neoverse-v2");
}

TEST(TorchValidation, CudnnAskedButMissing) {
  auto host = graviton_t4g_host();
  host.cuda_toolkits[0].cudnn_version.clear();
  TorchVariant v = base();
  v.features["cudnn"] = true;
  TorchPlan p = resolve_torch_plan(v, host, here());
  const PlanProblem* pr = find(p, "features");
  ASSERT_NE(pr, nullptr);
  EXPECT_NE(pr->message.find("cuDNN is asked for but was not found"), std::string::npos)
      << pr->message;
  v.features["cudnn"] = false;
  EXPECT_EQ(find(resolve_torch_plan(v, host, here()), "features"), nullptr);
}

TEST(TorchValidation, HostGlibcNewerThanManylinuxWanted) {
  TorchVariant v = base();
  v.manylinux = "2_28";
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host(), here());
  const PlanProblem* pr = find(p, "manylinux");
  ASSERT_NE(pr, nullptr);
  EXPECT_NE(pr->message.find("glibc 2.35 is newer than manylinux_2_28"), std::string::npos)
      << pr->message;
  EXPECT_NE(pr->fix.find("rockylinux8"), std::string::npos) << pr->fix;
  EXPECT_EQ(pr->severity, ProblemSeverity::error);
  // `plan` describes it for the glibc 2.28 image its fix names: a warning, and a plan.
  TorchPlan describe = resolve_torch_plan(v, graviton_t4g_host());
  ASSERT_NE(find(describe, "manylinux"), nullptr);
  EXPECT_EQ(find(describe, "manylinux")->severity, ProblemSeverity::warning);
  EXPECT_EQ(describe.manylinux, "2_28");
  v.manylinux = "manylinux_2_35";
  EXPECT_EQ(find(resolve_torch_plan(v, graviton_t4g_host(), here()), "manylinux"), nullptr);
}

TEST(TorchValidation, CrossPlatformSaysWhichHost) {
  TorchVariant v = base();  // an aarch64 build planned from an x86_64 machine
  auto host = x86_cuda128_host();
  host.cuda_toolkits[0].release.minor = 6;
  TorchPlan build = resolve_torch_plan(overlay(v,
                                               [] {
                                                 TorchVariant t;
                                                 t.platform = "aarch64";
                                                 return t;
                                               }()),
                                       host, here());
  const PlanProblem* pr = find(build, "platform");
  ASSERT_NE(pr, nullptr);
  EXPECT_EQ(pr->severity, ProblemSeverity::error);
  EXPECT_NE(pr->message.find("cannot cross-compile"), std::string::npos);
  EXPECT_NE(pr->message.find("aarch64 machine"), std::string::npos) << pr->message;
  // `plan` may still describe it (to write the script for that host): a warning.
  TorchVariant w = v;
  w.platform = "arm64";
  TorchPlan describe = resolve_torch_plan(w, host);
  ASSERT_NE(find(describe, "platform"), nullptr);
  EXPECT_EQ(find(describe, "platform")->severity, ProblemSeverity::warning);
  EXPECT_EQ(describe.env.at("USE_PRIORITIZED_TEXT_FOR_LD"), "1");
  EXPECT_FALSE(describe.has_errors());
}

TEST(TorchValidation, EveryProblemIsCollected) {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{13, 0};
  v.python = "3.8";
  v.arch = {"6.0"};
  v.cpu_target = "avx512";
  v.features["flashattention"] = true;
  v.blas = "mkl";
  auto host = graviton_t4g_host();
  TorchPlan p = resolve_torch_plan(v, host, here());
  for (const char* field : {"python", "arch", "cpu_target", "features", "blas", "cuda"})
    EXPECT_NE(find(p, field), nullptr) << field;
  EXPECT_NE(find(p, "features")->message.find("did you mean flash-attention"), std::string::npos);
  EXPECT_GE(p.problems.size(), 6u);
  EXPECT_EQ(p.exit_code(), 2);
}

TEST(TorchValidation, UnknownReleaseAndNoTarget) {
  TorchVariant v = base();
  v.torch = "1.13.1";
  v.arch.clear();
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  ASSERT_NE(find(p, "torch"), nullptr);
  ASSERT_NE(find(p, "arch"), nullptr);
  EXPECT_NE(find(p, "arch")->message.find("no GPU found and no target given"), std::string::npos);
  // With a GPU on the host, its CC is the default target.
  auto host = graviton_t4g_host();
  host.gpus.push_back({0, "NVIDIA T4G", cuda::ComputeCapability{7, 5}, 16 * testing::k_gib, ""});
  TorchVariant w = base();
  w.arch.clear();
  EXPECT_EQ(resolve_torch_plan(w, host).env.at("TORCH_CUDA_ARCH_LIST"), "7.5");
}

// --gpu is GPUs, as on every command (cuda::resolve_target_request): each one's SASS,
// repeats one union; a bad one is filed under "gpu", an --arch one under "arch".
TEST(TorchValidation, GpuIsEachGpusSassAndRepeats) {
  TorchVariant v = base();
  v.arch.clear();
  v.gpu = {"8.0+PTX", "A10G"};
  TorchPlan p = resolve_torch_plan(v, x86_cuda128_host());
  EXPECT_EQ(p.targets.names(), (std::vector<std::string>{"sm_80", "sm_86"}));
  EXPECT_EQ(p.env.at("TORCH_CUDA_ARCH_LIST"), "8.0;8.6");
  v.gpu = {"hoper"};
  TorchPlan bad = resolve_torch_plan(v, x86_cuda128_host());
  ASSERT_NE(find(bad, "gpu"), nullptr);
  EXPECT_EQ(find(bad, "gpu")->message, "unknown CUDA target 'hoper' (did you mean: Hopper, H100?)");
  TorchVariant a = base();
  a.arch = {"8.0+PTX", "A10G"};
  EXPECT_EQ(resolve_torch_plan(a, x86_cuda128_host()).targets.names(),
            (std::vector<std::string>{"sm_80", "compute_80", "sm_86"}));
  // A --gpu that implies a platform implies it here too.
  TorchVariant t4g = base();
  t4g.arch.clear();
  t4g.gpu = {"T4G"};
  EXPECT_EQ(resolve_torch_plan(t4g, x86_cuda128_host()).platform, "aarch64");
}

TEST(TorchValidation, MissingToolkitIsWarningForPlanErrorForBuild) {
  TorchVariant v = base();
  v.cuda = cuda::CudaVersion{12, 8};
  TorchPlan d = resolve_torch_plan(v, graviton_t4g_host());
  ASSERT_NE(find(d, "cuda"), nullptr);
  EXPECT_EQ(find(d, "cuda")->severity, ProblemSeverity::warning);
  EXPECT_EQ(d.env.at("CUDA_HOME"), "/usr/local/cuda-12.8");
  TorchPlan b = resolve_torch_plan(v, graviton_t4g_host(), here());
  EXPECT_EQ(find(b, "cuda")->severity, ProblemSeverity::error);
}

}  // namespace
}  // namespace tailor::plan
