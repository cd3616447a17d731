// Resolution of common hand-made configurations to the settings they use (and the
// deliberate differences), over hand-built hosts.
#include "plan/torch_plan.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "plan/toolkit_choice.h"
#include "plan/torch_plan_render.h"
#include "support/host_reports.h"

namespace tailor::plan {
namespace {

using testing::graviton_t4g_host;
using testing::x86_cuda128_host;

TorchVariant graviton_t4g_variant() {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{12, 6};
  v.python = "3.10";
  v.arch = {"T4G"};  // guides write 7.5; the GPU name must mean the same
  return v;
}

TEST(TorchPlanGraviton, ResolvesToTheGuideSettings) {
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host());
  for (const auto& pr : p.problems) ADD_FAILURE() << pr.field << ": " << pr.message;
  ASSERT_FALSE(p.has_errors());
  const auto& e = p.env;
  EXPECT_EQ(e.at("TORCH_CUDA_ARCH_LIST"), "7.5");
  EXPECT_EQ(e.at("CUDAARCHS"), e.at("CMAKE_CUDA_ARCHITECTURES"));
  EXPECT_EQ(e.at("CMAKE_CUDA_ARCHITECTURES"), "75-real");
  EXPECT_EQ(e.at("USE_CUDA"), "1");
  EXPECT_EQ(e.at("USE_CUDNN"), "1");
  EXPECT_EQ(e.at("USE_NCCL"), "1");
  EXPECT_EQ(e.at("USE_DISTRIBUTED"), "1");
  EXPECT_EQ(e.at("USE_MKLDNN"), "0");
  EXPECT_EQ(e.at("USE_FBGEMM"), "0");
  EXPECT_EQ(e.at("USE_QNNPACK"), "1");
  EXPECT_EQ(e.at("USE_PYTORCH_QNNPACK"), "1");
  EXPECT_EQ(e.at("USE_XNNPACK"), "1");
  EXPECT_EQ(e.at("USE_KINETO"), "1");
  EXPECT_EQ(e.at("USE_PRIORITIZED_TEXT_FOR_LD"), "1");
  EXPECT_EQ(e.at("BUILD_TEST"), "0");
  EXPECT_EQ(e.at("CMAKE_GENERATOR"), "Ninja");
  // T4G exists only in AWS g5g (Graviton2): the CPU target Neoverse N1 is implied, and
  // its code runs on the newer Graviton build host too.
  EXPECT_EQ(e.at("CFLAGS"), "-g0 -mcpu=neoverse-n1");
  EXPECT_EQ(e.at("CXXFLAGS"), "-g0 -mcpu=neoverse-n1");
  EXPECT_EQ(e.at("CUDA_HOME"), "/usr/local/cuda-12.6");
  EXPECT_EQ(e.at("CUDACXX"), "/usr/local/cuda-12.6/bin/nvcc");
  EXPECT_EQ(e.at("CMAKE_CUDA_COMPILER"), "/usr/local/cuda-12.6/bin/nvcc");
  EXPECT_EQ(e.at("CUDAHOSTCXX"), "/usr/bin/g++");
  // generate_torch_version.py takes PYTORCH_BUILD_VERSION as the whole version: the
  // guide's bare "2.9.1" would lose the +cu126 label its wheel name carries.
  EXPECT_EQ(e.at("PYTORCH_BUILD_VERSION"), "2.9.1+cu126");
  EXPECT_EQ(e.at("PYTORCH_BUILD_NUMBER"), "1");
  EXPECT_EQ(e.count("FORCE_CUDA"), 0u);  // an extension-package switch, not torch's
  EXPECT_EQ(p.wheel_name, "torch-2.9.1+cu126-cp310-cp310-manylinux_2_35_aarch64.whl");
  EXPECT_EQ(p.git_tag, "v2.9.1");
  // Pins from the guide (canonicalize_version error with newer setuptools/packaging).
  for (const char* pin : {"setuptools<75", "packaging>=22,<24", "numpy<2"})
    EXPECT_NE(std::find(p.requirements.begin(), p.requirements.end(), pin), p.requirements.end())
        << pin;
}

TEST(TorchPlanGraviton, MaxJobsFromUsableMemory) {
  // 125 GiB usable - 4 GiB reserve = 121 GiB; 4.5 GiB per job with FlashAttention on ->
  // 26 jobs. The guide's 24 was a hand-picked margin on the same 128 GB (with 32 GB swap);
  // tailor derives it from what the host really has free.
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host());
  EXPECT_EQ(p.jobs, 26);
  EXPECT_EQ(p.env.at("MAX_JOBS"), "26");
  TorchVariant v = graviton_t4g_variant();
  v.features["flash-attention"] = false;
  TorchPlan q = resolve_torch_plan(v, graviton_t4g_host());
  EXPECT_EQ(q.jobs, 30);  // floor(121 / 4.0)
  EXPECT_EQ(q.env.at("USE_FLASH_ATTENTION"), "0");
  auto host = graviton_t4g_host();
  host.memory.usable = 16 * testing::k_gib;
  EXPECT_EQ(resolve_torch_plan(graviton_t4g_variant(), host).jobs, 2);
}

TEST(TorchPlanGraviton, EstimatesFollowTheMeasuredTable) {
  TorchPlan one = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host());
  EXPECT_NEAR(one.estimate.wheel_mib, 185, 1);  // measured: ~185 MB for sm_75 alone
  TorchVariant v = graviton_t4g_variant();
  v.arch = {"7.5;8.0;9.0"};
  TorchPlan three = resolve_torch_plan(v, graviton_t4g_host());
  EXPECT_NEAR(three.estimate.wheel_mib, 535, 30);  // measured: ~550 MB
  EXPECT_EQ(three.estimate.per_target_mib.size(), 3u);
  EXPECT_NEAR(one.estimate.build_hours, 48.0 / 26, 0.01);
  EXPECT_GT(three.estimate.build_hours, one.estimate.build_hours);
  EXPECT_NEAR(one.estimate.disk_gib, 36, 0.1);
  EXPECT_NE(one.estimate.wheel_formula.find("aarch64 2.9.1"), std::string::npos);
}

TEST(TorchPlanGraviton, StepsCloneTagWithSubmodulesThenVenvThenBuild) {
  ResolveOptions o;
  o.base_dir = "/home/ubuntu";  // the relative default work folder is read against it
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host(), o);
  ASSERT_EQ(p.steps.size(), 4u);
  // One clone of the tag with its submodules, run from the work folder (which exists before
  // the first step; the destination does not).
  EXPECT_EQ(p.steps[0].argv,
            (std::vector<std::string>{"git", "clone", "--recurse-submodules",
                                      "--shallow-submodules", "--depth", "1", "--branch", "v2.9.1",
                                      "https://github.com/pytorch/pytorch",
                                      "/home/ubuntu/tailor-work/pytorch"}));
  EXPECT_EQ(p.steps[0].cwd, "/home/ubuntu/tailor-work");
  EXPECT_EQ(p.steps[0].role, StepRole::clone);
  EXPECT_EQ(p.git_url, "https://github.com/pytorch/pytorch");
  EXPECT_EQ(p.steps[1].argv, (std::vector<std::string>{"/usr/bin/python3.10", "-m", "venv",
                                                       "/home/ubuntu/tailor-work/venv"}));
  // Run in the source tree: a relative interpreter path would name another file there.
  EXPECT_EQ(p.steps[2].cwd, "/home/ubuntu/tailor-work/pytorch");
  EXPECT_EQ(p.steps[2].argv.front(), "/home/ubuntu/tailor-work/venv/bin/python");
  EXPECT_EQ(p.steps[3].argv, (std::vector<std::string>{"/home/ubuntu/tailor-work/venv/bin/python",
                                                       "setup.py", "bdist_wheel"}));
  EXPECT_TRUE(p.steps[3].uses_plan_env);
  // --git: another remote, in the step and in the flags that ask for this plan again.
  TorchVariant mirror = graviton_t4g_variant();
  mirror.git_url = "file:///srv/mirror/pytorch";
  TorchPlan m = resolve_torch_plan(mirror, graviton_t4g_host(), o);
  EXPECT_EQ(m.steps[0].argv[8], "file:///srv/mirror/pytorch");
  EXPECT_NE(plan_command_flags(m).find("--git file:///srv/mirror/pytorch"), std::string::npos);
}

TEST(TorchPlan, EveryWorkPathIsAbsolute) {
  // Default (relative) work folder, relative --source, and the current folder as base.
  for (const char* source : {"", "src/pytorch", "/abs/pytorch"}) {
    TorchVariant v = graviton_t4g_variant();
    if (*source) v.source_dir = source;
    ResolveOptions o;
    o.work_dir = "w/../tailor-work/";
    TorchPlan p = resolve_torch_plan(v, graviton_t4g_host(), o);
    const std::string cwd = std::filesystem::current_path().string();
    EXPECT_EQ(p.layout.work_dir, cwd + "/tailor-work");
    EXPECT_EQ(p.layout.venv_dir, cwd + "/tailor-work/venv");
    EXPECT_EQ(p.layout.source_dir, !*source           ? cwd + "/tailor-work/pytorch"
                                   : source[0] == '/' ? std::string(source)
                                                      : cwd + "/" + source);
    EXPECT_EQ(p.layout.work_dir_given, "w/../tailor-work/");
    for (const auto& s : p.steps) {
      EXPECT_TRUE(s.cwd.empty() || s.cwd.front() == '/') << s.title << ": " << s.cwd;
      for (const auto& a : s.argv)
        EXPECT_FALSE(a.find("tailor-work") != std::string::npos && a.front() != '/')
            << s.title << ": " << a;
    }
  }
}

TEST(TorchPlan, JobsOptionSetsMaxJobs) {
  ResolveOptions o;
  o.jobs = 3;
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host(), o);
  ASSERT_FALSE(p.has_errors());
  EXPECT_EQ(p.env.at("MAX_JOBS"), "3");
  EXPECT_EQ(p.jobs, 3);
  EXPECT_EQ(p.jobs_reason.rfind("--jobs 3 (tailor's estimate: ", 0), 0u) << p.jobs_reason;
  o.jobs = 0;
  TorchPlan bad = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host(), o);
  EXPECT_EQ(bad.exit_code(), 2);
  ASSERT_FALSE(bad.problems.empty());
  EXPECT_EQ(bad.problems.back().message, "--jobs 0: must be at least 1");
}

// The toolkit is plan/toolkit_choice's: the newest installed one the release supports
// (2.9.1: CUDA 12.6, 12.8, 13.0), or the one of the CUDA asked for.
TEST(TorchPlan, ToolkitIsTheNewestInstalledTheReleaseSupportsOrTheOneAskedFor) {
  auto host = graviton_t4g_host();
  host.cuda_toolkits = {test::cuda_toolkit(12, 6), test::cuda_toolkit(13, 1),
                        test::cuda_toolkit(12, 8)};
  TorchVariant v = graviton_t4g_variant();
  v.cuda.reset();
  TorchPlan p = resolve_torch_plan(v, host);
  ASSERT_TRUE(p.cuda_version);
  EXPECT_EQ(*p.cuda_version, (cuda::CudaVersion{12, 8}));  // 13.1 is newer, but not 2.9.1's
  EXPECT_EQ(p.cuda_home, "/usr/local/cuda-12.8");
  v.cuda = cuda::CudaVersion{12, 6};
  EXPECT_EQ(resolve_torch_plan(v, host).cuda_home, "/usr/local/cuda-12.6");
  host.cuda_toolkits = {test::cuda_toolkit(13, 1)};
  v.cuda.reset();
  TorchPlan none = resolve_torch_plan(v, host);
  EXPECT_EQ(none.exit_code(), 2);
  EXPECT_FALSE(none.cuda_version);
  EXPECT_EQ(toolkit_of(host, {12, 8}), nullptr);
  const std::vector<cuda::CudaVersion> among = {{12, 8}};
  EXPECT_EQ(newest_toolkit(host, &among), nullptr);
  ASSERT_NE(newest_toolkit(host), nullptr);
  EXPECT_EQ(newest_toolkit(host)->root, "/usr/local/cuda-13.1");
}

// The compiler cache is decided in plan (decide_cache over the host report's tools); how
// PyTorch's build takes it goes into the cache's variables, never into `env`, which
// describes the build for any host.
TEST(TorchPlanCache, AutoTakesCcacheFromTheHostsToolsWithTheWorkFolderStripped) {
  auto host = graviton_t4g_host();
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.9.1", false});
  ResolveOptions o;
  o.work_dir = "/w/tailor-work";
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), host, o);
  ASSERT_FALSE(p.has_errors());
  EXPECT_EQ(p.cache.tool, cache::CacheTool::ccache);
  EXPECT_EQ(p.cache.executable, "/usr/bin/ccache");
  EXPECT_EQ(p.cache.env.at("CCACHE_BASEDIR"), "/w/tailor-work");
  EXPECT_EQ(p.cache.env.count("USE_CCACHE"), 0u);  // torch's CMake finds ccache itself
  EXPECT_EQ(p.env.count("USE_CCACHE"), 0u);
  // No tool on the host: none, and torch's own ccache lookup is switched off.
  TorchPlan none = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host(), o);
  EXPECT_EQ(none.cache.tool, cache::CacheTool::none);
  EXPECT_EQ(none.cache.env, (std::map<std::string, std::string>{{"USE_CCACHE", "0"}}));
}

TEST(TorchPlanCache, SccacheGoesInAsTheCompilerLauncher) {
  auto host = graviton_t4g_host();
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.9.1", false});
  host.tools.push_back({"sccache", "/opt/bin/sccache", "0.10.0", false});
  ResolveOptions o;
  o.environment = {{"SCCACHE_BUCKET", "builds"}};  // auto: sccache when SCCACHE_* is set
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), host, o);
  ASSERT_FALSE(p.has_errors());
  EXPECT_EQ(p.cache.tool, cache::CacheTool::sccache);
  for (const char* var : {"CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER",
                          "CMAKE_CUDA_COMPILER_LAUNCHER"}) {
    EXPECT_EQ(p.cache.env.at(var), "/opt/bin/sccache") << var;
    EXPECT_EQ(p.env.count(var), 0u) << var;
  }
  EXPECT_EQ(p.cache.env.at("USE_CCACHE"), "0");
  // --cache ccache wins over the environment.
  o.cache = cache::CacheTool::ccache;
  EXPECT_EQ(resolve_torch_plan(graviton_t4g_variant(), host, o).cache.tool,
            cache::CacheTool::ccache);
  // A build whose shared storage is down applies none.
  set_torch_cache(p, {});
  EXPECT_EQ(p.cache.tool, cache::CacheTool::none);
  EXPECT_EQ(p.cache.env, (std::map<std::string, std::string>{{"USE_CCACHE", "0"}}));
}

TEST(TorchPlanCache, AMissingOrUnfitToolIsAProblemOfTheBuildAndAWarningOfAPlan) {
  auto host = graviton_t4g_host();
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.9.1", false});
  ResolveOptions o;
  o.purpose = PlanPurpose::build_here;
  o.cache = cache::CacheTool::sccache;
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), host, o);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0].field, "cache");
  EXPECT_EQ(p.problems[0].message,
            "compiler cache sccache: sccache is not installed (not found on PATH)");
  EXPECT_EQ(p.exit_code(), 2);
  o.purpose = PlanPurpose::describe;
  TorchPlan elsewhere = resolve_torch_plan(graviton_t4g_variant(), host, o);
  EXPECT_FALSE(elsewhere.has_errors());
  ASSERT_EQ(elsewhere.problems.size(), 1u);
  EXPECT_EQ(elsewhere.problems[0].severity, ProblemSeverity::warning);
  // ccache cannot use an S3 storage.
  o.purpose = PlanPurpose::build_here;
  o.cache = cache::CacheTool::ccache;
  ASSERT_TRUE(cache::set_cache_url(o.cache_settings, "s3://bucket/prefix", "--cache-url"));
  TorchPlan s3 = resolve_torch_plan(graviton_t4g_variant(), host, o);
  ASSERT_EQ(s3.problems.size(), 1u);
  EXPECT_EQ(s3.problems[0].field, "cache");
  EXPECT_NE(s3.problems[0].message.find("ccache"), std::string::npos) << s3.problems[0].message;
  EXPECT_EQ(s3.cache.tool, cache::CacheTool::none);
}

TorchVariant nix_variant(const std::string& arch, const std::string& cpu) {
  TorchVariant v;
  v.torch = "2.9.1";
  v.python = "3.13";
  v.blas = "openblas";
  if (arch == "cpu")
    v.cpu_only = true;
  else {
    v.cuda = cuda::CudaVersion{12, 8};
    v.arch = {arch};
  }
  v.cpu_target = cpu;
  return v;
}

TEST(TorchPlanNixMatrix, Sm90Avx512) {
  TorchPlan p = resolve_torch_plan(nix_variant("9.0", "avx512"), x86_cuda128_host());
  for (const auto& pr : p.problems) ADD_FAILURE() << pr.field << ": " << pr.message;
  EXPECT_EQ(p.env.at("TORCH_CUDA_ARCH_LIST"), "9.0");
  // Matrices write TORCH_CUDA_ARCH_LIST="sm_90" with CMAKE_CUDA_ARCHITECTURES="90" (SASS +
  // PTX): tailor keeps all three spellings meaning the same set, sm_90 only.
  EXPECT_EQ(p.env.at("CMAKE_CUDA_ARCHITECTURES"), "90-real");
  // The matrix's -mavx512f -mavx512dq -mfma is the x86-64-v4 level, given to the host
  // compiler only and recorded with an ISA note.
  EXPECT_EQ(p.env.at("CXXFLAGS"), "-g0 -march=x86-64-v4 -Wa,-mx86-used-note=yes");
  EXPECT_EQ(p.env.at("BLAS"), "OpenBLAS");
  EXPECT_EQ(p.env.at("USE_FBGEMM"), "1");
  EXPECT_EQ(p.env.at("USE_MKLDNN"), "1");
  EXPECT_EQ(p.env.count("USE_PRIORITIZED_TEXT_FOR_LD"), 0u);
  EXPECT_EQ(p.env.at("TORCH_NVCC_FLAGS"), "-Xfatbin -compress-all -compress-mode=size");
  EXPECT_EQ(p.wheel_name, "torch-2.9.1+cu128-cp313-cp313-manylinux_2_35_x86_64.whl");
}

TEST(TorchPlanNixMatrix, Sm86Avx2) {
  TorchPlan p = resolve_torch_plan(nix_variant("sm_86", "avx2"), x86_cuda128_host());
  EXPECT_FALSE(p.has_errors());
  EXPECT_EQ(p.env.at("TORCH_CUDA_ARCH_LIST"), "8.6");
  EXPECT_EQ(p.env.at("CUDAARCHS"), "86-real");
  EXPECT_EQ(p.env.at("CFLAGS"), "-g0 -march=x86-64-v3 -Wa,-mx86-used-note=yes");
}

TEST(TorchPlanNixMatrix, CpuAvx2) {
  TorchPlan p = resolve_torch_plan(nix_variant("cpu", "avx2"), x86_cuda128_host());
  EXPECT_FALSE(p.has_errors());
  EXPECT_EQ(p.env.at("USE_CUDA"), "0");
  EXPECT_EQ(p.env.count("TORCH_CUDA_ARCH_LIST"), 0u);
  EXPECT_EQ(p.env.count("CUDA_HOME"), 0u);
  EXPECT_EQ(p.env.at("USE_CUDNN"), "0");
  EXPECT_EQ(p.env.at("USE_FLASH_ATTENTION"), "0");
  EXPECT_EQ(p.env.at("PYTORCH_BUILD_VERSION"), "2.9.1+cpu");
  EXPECT_EQ(p.wheel_name, "torch-2.9.1+cpu-cp313-cp313-manylinux_2_35_x86_64.whl");
  EXPECT_EQ(p.jobs, 64);  // 246 GiB / 2.5 GiB per job > 64 cores
}

TEST(TorchPlan, KeepDebugAndBuildType) {
  TorchVariant v = graviton_t4g_variant();
  v.keep_debug = true;
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  EXPECT_EQ(p.env.at("CFLAGS"), "-mcpu=neoverse-n1");  // no -g0; the CPU T4G implies stays
  v.keep_debug.reset();
  v.build_type = "relwithdebinfo";
  p = resolve_torch_plan(v, graviton_t4g_host());
  EXPECT_EQ(p.env.at("CMAKE_BUILD_TYPE"), "RelWithDebInfo");
  EXPECT_EQ(p.env.at("CFLAGS"), "-mcpu=neoverse-n1");
}

TEST(TorchPlan, PtxAndCompressionModes) {
  TorchVariant v = graviton_t4g_variant();
  v.arch = {"7.5", "8.0+PTX"};
  v.compress = "none";
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  EXPECT_EQ(p.env.at("TORCH_CUDA_ARCH_LIST"), "7.5;8.0+PTX");
  EXPECT_EQ(p.env.at("CMAKE_CUDA_ARCHITECTURES"), "75-real;80");
  EXPECT_EQ(p.env.at("TORCH_NVCC_FLAGS"), "-no-compress");  // CUDA 12.6 has no -compress-mode
  v.compress.reset();
  EXPECT_EQ(resolve_torch_plan(v, graviton_t4g_host()).env.at("TORCH_NVCC_FLAGS"),
            "-Xfatbin -compress-all");
}

TEST(TorchPlan, JsonHasEveryEnvVariable) {
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host());
  auto j = plan_to_json(p);
  ASSERT_TRUE(j["env"].is_object());
  EXPECT_EQ(j["env"].size(), p.env.size());
  for (const auto& [k, v] : p.env) EXPECT_EQ(j["env"][k], v);
  EXPECT_EQ(j["wheel_name"], p.wheel_name);
  EXPECT_FALSE(j["checked_against"].empty());
}

TEST(TorchPlan, DockerfileBaseMatchesManylinuxGlibc) {
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host());
  std::string d = render_plan_dockerfile(p);
  EXPECT_NE(d.find("FROM nvidia/cuda:12.6.3-devel-ubuntu22.04"), std::string::npos) << d;
  EXPECT_NE(d.find("ENV TORCH_CUDA_ARCH_LIST=\"7.5\""), std::string::npos);
  TorchVariant v = graviton_t4g_variant();
  v.manylinux = "2_28";
  auto host = graviton_t4g_host();
  host.os.glibc = "2.28";
  TorchPlan q = resolve_torch_plan(v, host);
  EXPECT_NE(render_plan_dockerfile(q).find("FROM nvidia/cuda:12.6.3-devel-rockylinux8"),
            std::string::npos);
}

}  // namespace
}  // namespace tailor::plan

namespace tailor::plan {
namespace {

// A torch newer than the data is said to be that, with what to do, not "unknown release".
TEST(TorchPlanVersions, NewerThanTheDataSaysSo) {
  auto v = graviton_t4g_variant();
  v.torch = "99.0.0";
  TorchPlan p = resolve_torch_plan(v, graviton_t4g_host());
  ASSERT_TRUE(p.has_errors());
  bool saw = false;
  for (const auto& pr : p.problems)
    if (pr.field == "torch") {
      saw = true;
      EXPECT_NE(pr.message.find(
                    "torch 99.0.0 is newer than tailor's data (the newest release it knows is "),
                std::string::npos)
          << pr.message;
      EXPECT_NE(pr.fix.find("--torch "), std::string::npos) << pr.fix;
    }
  EXPECT_TRUE(saw);
  v.torch = "1.0.0";  // older: one of the known ones
  TorchPlan old = resolve_torch_plan(v, graviton_t4g_host());
  for (const auto& pr : old.problems) {
    if (pr.field == "torch") {
      EXPECT_NE(pr.message.find("is not a release tailor knows"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tailor::plan

namespace tailor::plan {
namespace {

std::string notes_of(const TorchPlan& p) {
  std::string all;
  for (const auto& n : p.notes) all += n + "\n";
  return all;
}

// The aarch64 default turns oneDNN off; the plan says the official wheels build it with
// ACL and how to choose (issue 27). Not said where the user chose, nor on x86_64.
TEST(TorchPlanGraviton, OneDnnOffIsExplained) {
  TorchPlan p = resolve_torch_plan(graviton_t4g_variant(), graviton_t4g_host());
  ASSERT_EQ(p.env.at("USE_MKLDNN"), "0");
  const std::string notes = notes_of(p);
  EXPECT_NE(notes.find("official aarch64 wheels build it with ACL, the Arm Compute Library"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("USE_MKLDNN_ACL=1"), std::string::npos) << notes;
  EXPECT_NE(notes.find("--with mkldnn"), std::string::npos) << notes;
  TorchVariant chosen = graviton_t4g_variant();
  chosen.features["mkldnn"] = false;
  EXPECT_EQ(notes_of(resolve_torch_plan(chosen, graviton_t4g_host())).find("oneDNN"),
            std::string::npos);
  chosen.features["mkldnn"] = true;
  TorchPlan on = resolve_torch_plan(chosen, graviton_t4g_host());
  EXPECT_EQ(on.env.at("USE_MKLDNN"), "1");
  EXPECT_EQ(notes_of(on).find("oneDNN"), std::string::npos);
  TorchVariant x86;
  x86.torch = "2.9.1";
  x86.cuda = cuda::CudaVersion{12, 8};
  x86.arch = {"9.0"};
  EXPECT_EQ(notes_of(resolve_torch_plan(x86, x86_cuda128_host())).find("oneDNN"),
            std::string::npos);
}

}  // namespace
}  // namespace tailor::plan
