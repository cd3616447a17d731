// The one resolution of --arch / --gpu (cuda::resolve_target_request): every spelling
// combination, repeats, neither (the detected default), both, and the messages.
#include "cuda/target_request.h"

#include <gtest/gtest.h>

#include "cuda/gpu_platform.h"
#include "cuda/nvcc_capabilities.h"

namespace tailor::cuda {
namespace {

using Names = std::vector<std::string>;

TargetRequest arch(Names specs) {
  TargetRequest r;
  r.arch = std::move(specs);
  return r;
}

TargetRequest gpu(Names specs) {
  TargetRequest r;
  r.gpu = std::move(specs);
  return r;
}

Names names(const TargetRequest& r, const ArchSpecContext& ctx = {}) {
  auto t = resolve_target_request(r, ctx);
  EXPECT_TRUE(t) << t.error().message;
  return t ? t->targets.names() : Names{};
}

std::string error(const TargetRequest& r, const ArchSpecContext& ctx = {}) {
  auto t = resolve_target_request(r, ctx);
  EXPECT_FALSE(t) << "resolved to " << (t ? t->described : "");
  return t ? "" : t.error().message;
}

/// A detect function over fixed GPUs that counts its calls.
std::function<std::vector<DetectedGpu>()> gpus(std::vector<DetectedGpu> found, int* calls) {
  return [found, calls] {
    ++*calls;
    return found;
  };
}

TEST(TargetRequest, ArchTakesEverySpelling) {
  EXPECT_EQ(names(arch({"8.0;8.6+PTX"})), (Names{"sm_80", "sm_86", "compute_86"}));
  EXPECT_EQ(names(arch({"86"})), (Names{"sm_86", "compute_86"}));  // CMake's meaning
  EXPECT_EQ(names(arch({"sm_90a"})), Names{"sm_90a"});
  EXPECT_EQ(names(arch({"Turing"})), (Names{"sm_75", "compute_75"}));
  EXPECT_EQ(names(arch({"T4G"})), Names{"sm_75"});
  EXPECT_EQ(names(arch({"-gencode arch=compute_90,code=sm_90"})), Names{"sm_90"});
  EXPECT_EQ(names(arch({"8.0,9.0"})), (Names{"sm_80", "sm_90"}));
}

TEST(TargetRequest, RepeatedFlagsAreOneUnion) {
  auto t = resolve_target_request(arch({"8.0", "9.0+PTX", "8.0"}));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->targets.names(), (Names{"sm_80", "sm_90", "compute_90"}));
  EXPECT_EQ(t->source, TargetSource::arch);
  EXPECT_EQ(t->described, "--arch 8.0 --arch 9.0+PTX --arch 8.0");
  EXPECT_EQ(t->named, (Names{"8.0", "9.0+PTX", "8.0"}));
  EXPECT_EQ(t->devices, (std::vector<ComputeCapability>{{8, 0}, {9, 0}}));
  // The same as one flag with a list.
  EXPECT_EQ(names(arch({"8.0;9.0+PTX"})), t->targets.names());
  EXPECT_EQ(names(gpu({"T4G", "H100"})), names(gpu({"T4G;H100"})));
}

// A GPU runs its own SASS: --gpu never adds PTX or an a/f variant, whatever the spelling.
TEST(TargetRequest, GpuIsEachGpusSass) {
  EXPECT_EQ(names(gpu({"T4G"})), Names{"sm_75"});
  EXPECT_EQ(names(gpu({"g5g.xlarge"})), Names{"sm_75"});
  EXPECT_EQ(names(gpu({"8.6"})), Names{"sm_86"});
  EXPECT_EQ(names(gpu({"86"})), Names{"sm_86"});
  EXPECT_EQ(names(gpu({"8.0+PTX"})), Names{"sm_80"});
  EXPECT_EQ(names(gpu({"sm_90a"})), Names{"sm_90"});
  EXPECT_EQ(names(gpu({"Turing"})), Names{"sm_75"});
  EXPECT_EQ(names(gpu({"NVIDIA H100 80GB HBM3"})), Names{"sm_90"});
  auto t = resolve_target_request(gpu({"T4G", "A10G"}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->source, TargetSource::gpu);
  EXPECT_EQ(t->described, "--gpu T4G --gpu A10G");
  EXPECT_EQ(t->devices, (std::vector<ComputeCapability>{{7, 5}, {8, 6}}));
}

TEST(TargetRequest, ArchWithGpuIsAnError) {
  EXPECT_EQ(error([] {
              TargetRequest r;
              r.arch = {"8.0"};
              r.gpu = {"T4G"};
              return r;
            }()),
            "use --arch or --gpu, not both");
  TargetRequest slim;
  slim.arch = {"sm_90"};
  slim.gpu = {"H100"};
  slim.arch_flag = "--keep";
  EXPECT_EQ(error(slim), "use --keep or --gpu, not both");
}

TEST(TargetRequest, NeitherWithoutADefaultIsAnError) {
  EXPECT_EQ(
      error(TargetRequest{}),
      "no GPU target given; name one with --arch (e.g. --arch 8.6) or --gpu (e.g. --gpu A10G)");
  TargetRequest slim;
  slim.arch_flag = "--keep";
  EXPECT_EQ(
      error(slim),
      "no GPU target given; name one with --keep (e.g. --keep 8.6) or --gpu (e.g. --gpu A10G)");
}

TEST(TargetRequest, NeitherTakesTheDetectedGpus) {
  int calls = 0;
  TargetRequest r;
  r.detect = gpus({{0, "NVIDIA H100 80GB HBM3", ComputeCapability{9, 0}},
                   {1, "NVIDIA A10G", ComputeCapability{8, 6}},
                   {2, "NVIDIA H100 80GB HBM3", ComputeCapability{9, 0}}},
                  &calls);
  auto t = resolve_target_request(r);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(t->source, TargetSource::detected);
  EXPECT_EQ(t->targets.names(), (Names{"sm_86", "sm_90"}));  // SASS only, no PTX
  EXPECT_EQ(t->devices, (std::vector<ComputeCapability>{{8, 6}, {9, 0}}));
  EXPECT_EQ(t->described,
            "detected GPU 0: NVIDIA H100 80GB HBM3 (9.0), GPU 1: NVIDIA A10G (8.6), GPU 2: NVIDIA "
            "H100 80GB HBM3 (9.0)");
  EXPECT_EQ(t->named.size(), 3u);
  // A flag given: nothing is probed.
  r.arch = {"8.0"};
  EXPECT_EQ(names(r), Names{"sm_80"});
  EXPECT_EQ(calls, 1);
}

TEST(TargetRequest, NoGpuFoundOrNoCcIsAnErrorNeverAllArchitectures) {
  int calls = 0;
  TargetRequest r;
  r.detect = gpus({}, &calls);
  EXPECT_EQ(error(r),
            "no GPU found and no target given; name one with --arch (e.g. --arch 8.6) or --gpu "
            "(e.g. --gpu A10G)");
  r.detect = gpus({{0, "Tesla T4", std::nullopt}}, &calls);
  EXPECT_EQ(error(r),
            "GPU 0 (Tesla T4) reports no compute capability; name the target with --arch or --gpu");
}

TEST(TargetRequest, NativeIsTheDetectedGpus) {
  int calls = 0;
  TargetRequest r = arch({"native;8.0"});
  r.detect = gpus({{0, "NVIDIA A10G", ComputeCapability{8, 6}}}, &calls);
  EXPECT_EQ(names(r), (Names{"sm_80", "sm_86"}));
  EXPECT_EQ(calls, 1);
  r.arch.clear();
  r.gpu = {"native"};
  EXPECT_EQ(names(r), Names{"sm_86"});
  // The context's devices win; nothing probed.
  ArchSpecContext ctx;
  ctx.native_devices = {ComputeCapability{9, 0}};
  EXPECT_EQ(names(r, ctx), Names{"sm_90"});
  EXPECT_EQ(calls, 2);
  // No default and no GPU: the keyword's own message, after the flag.
  EXPECT_EQ(error(arch({"native"})),
            "--arch: 'native' needs the GPUs of this machine, and none was detected (name the GPU "
            "instead, e.g. H100 or 9.0)");
}

TEST(TargetRequest, AllNeedsTheContextsNvcc) {
  EXPECT_EQ(error(arch({"all"})),
            "--arch: 'all' depends on the CUDA version: pass --nvcc VERSION or install nvcc");
  ArchSpecContext ctx;
  ctx.nvcc = *nvcc_capabilities_from_table("12.8");
  auto all = resolve_target_request(arch({"all"}), ctx);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_TRUE(all->targets.contains(sass({8, 0})));
  EXPECT_TRUE(all->targets.contains(sass({9, 0})));
}

TEST(TargetRequest, BadSpecIsOneLineNamingTheFlag) {
  EXPECT_EQ(error(arch({"8.0", "hoper"})),
            "--arch: unknown CUDA target 'hoper' (did you mean: Hopper, H100?)");
  EXPECT_EQ(error(gpu({"hoper"})),
            "--gpu: unknown CUDA target 'hoper' (did you mean: Hopper, H100?)");
  EXPECT_EQ(error(arch({""})), "--arch: empty CUDA target list");
  EXPECT_EQ(error(gpu({" ; "})), "--gpu: empty CUDA target list");
  EXPECT_EQ(error(arch({","})), "--arch: no CUDA target in ','");
  // The caller's names: slim's --keep, inspect's --require (no --gpu of its own).
  TargetRequest require = arch({"sm_9x9"});
  require.arch_flag = "--require";
  require.gpu_flag = "";
  EXPECT_EQ(error(require).rfind("--require: unknown CUDA target 'sm_9x9'", 0), 0u);
  require.arch.clear();
  EXPECT_EQ(error(require), "no GPU target given; name one with --require (e.g. --require 8.6)");
  // Where the caller names the input itself (plan's problem field, arch's positionals).
  TargetRequest plain = arch({"hoper"});
  plain.prefix_errors = false;
  EXPECT_EQ(error(plain), "unknown CUDA target 'hoper' (did you mean: Hopper, H100?)");
  // A bad spec among repeats: its own message, one line.
  EXPECT_EQ(error(gpu({"8.0", "bogus-gpu"})).find('\n'), std::string::npos);
}

// What names the targets feeds the one platform rule (cuda/gpu_platform).
TEST(TargetRequest, NamedFeedsThePlatformRule) {
  auto t = resolve_target_request(gpu({"T4G", "8.6"}));
  ASSERT_TRUE(t);
  auto implied = implied_platform(t->named);
  ASSERT_TRUE(implied && *implied);
  EXPECT_EQ((*implied)->platform, "aarch64");
  auto both = resolve_target_request(arch({"T4G", "g4dn.xlarge"}));
  ASSERT_TRUE(both);  // targets resolve; the platforms conflict, which the command reports
  EXPECT_FALSE(implied_platform(both->named));
}

}  // namespace
}  // namespace tailor::cuda
