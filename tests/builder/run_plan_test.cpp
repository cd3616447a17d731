// The one builder (builder/run_plan.h) over a fake session: a fake command runner, an
// in-memory disk, a recording display, a fixed-path route and a governor start handed in,
// the learned records and the cache ledger off. No process runs and nothing touches the
// disk (the work folder does not exist on it). What the plan's policy says reaches the
// steps, the disk and the report.
#include "builder/run_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "plan/torch_plan.h"
#include "plan/torch_plan_render.h"
#include "support/fake_host.h"
#include "support/host_reports.h"
#include "support/memory_disk.h"
#include "support/recording_display.h"

namespace tailor::builder {
namespace {
namespace fs = std::filesystem;
using test::ran;

class RunPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(fs::exists(work));
    (void)disk.make_dirs(work + "/src");
    plan.targets = cuda::TargetSet{};
    plan.jobs = 4;
    plan.jobs_reason = "4 cores";
    plan.env = {{"MAX_JOBS", "4"}, {"TORCH_CUDA_ARCH_LIST", "7.5"}};
    plan.path_prepend = "/usr/local/cuda-13.0/bin";
    plan.steps = {plan::Step{
        .title = "compile", .argv = {"python3", "setup.py", "bdist_wheel"}, .uses_plan_env = true}};
    plan::ExecutionPolicy& run = plan.run;
    run.package = "demo";
    run.record_name = "demo";
    run.work_dir = work;
    run.build_dir = work + "/src";
    run.mapped_dir = work;
    run.ninja_root = work + "/src/build";
    run.jobs.recipe = "demo";
    run.jobs.ninja_version = "1.11.1";  // not a jobserver client: the static count
    run.jobs.max_jobs = 4;
    report.targets = {"sm_75"};
  }

  void TearDown() override { EXPECT_FALSE(fs::exists(work)) << "the run touched the real disk"; }

  BuildSession session() { return session(report); }
  BuildSession session(outputs::BuildReport& into) {
    BuildSession s{runner, disk, into};
    s.environment = Environment(std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}});
    s.display = &display;
    s.status = nullptr;
    s.warnings = std::tmpfile();
    s.fixed_path = [this](const std::string& real, const std::string& fixed,
                          std::optional<workpath::FixedPathRoute>) {
      workpath::FixedPathChoice choice;
      choice.path = workpath::FixedPath{real, fixed, workpath::FixedPathRoute::own_namespace,
                                        "/opt/tailor/bin/tailor"};
      return choice;
    };
    s.record_cache_use = false;
    return s;
  }

  const std::string work = "/nonexistent-tailor-run-plan/work";
  test::FakeCommandRunner runner;
  test::MemoryDisk disk;
  test::RecordingDisplay display;
  plan::BuildPlan plan;
  outputs::BuildReport report;
};

TEST_F(RunPlan, RunsTheStepsAtTheFixedPathWithTheStaticCountFittedToTheBudget) {
  plan.run.jobs.budget = uint64_t{1} << 30;
  plan.run.jobs.prior_job_bytes = uint64_t{512} << 20;
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(0, "[1/1] done\n");
  };
  auto s = session();
  PlanRun run = run_plan(plan, s);
  ASSERT_FALSE(run.stop) << run.stop->message;
  EXPECT_EQ(display.events, (std::vector<std::string>{"start compile 1/1", "end compile ok"}));
  ASSERT_EQ(runner.specs.size(), 1u);
  const CommandSpec& step = runner.specs[0];
  // Behind the fixed-path launcher, the work folder at /tmp/.tailor-build/demo.
  ASSERT_GE(step.argv.size(), 2u);
  EXPECT_EQ(step.argv[0], "/opt/tailor/bin/tailor");
  EXPECT_EQ(step.argv[1], "__fixed-path");
  EXPECT_EQ(report.work_path, "/tmp/.tailor-build/demo");
  EXPECT_EQ(report.work_path_route, "namespace");
  // ninja 1.11.1: the static count, and with --memory-budget 1 GiB / 512 MiB per job, 2.
  ASSERT_TRUE(report.governor);
  EXPECT_EQ(report.governor->mode, "static");
  EXPECT_NE(report.governor->reason.find("ninja 1.11.1"), std::string::npos)
      << report.governor->reason;
  EXPECT_EQ(report.jobs, 2);
  EXPECT_EQ(*step.env.at("MAX_JOBS"), "2");
  EXPECT_EQ(*step.env.at("TORCH_CUDA_ARCH_LIST"), "7.5");
  EXPECT_EQ(*step.env.at("PATH"),
            "/usr/local/cuda-13.0/bin:/usr/bin:/bin");  // the toolkit, then the caller's
  // One log in the work folder, build.log pointing at it; Ninja's steps counted as it ran.
  EXPECT_EQ(fs::path(report.log_path).parent_path(), fs::path(work));
  EXPECT_NE(disk.files.at(report.log_path).find("[1/1] done"), std::string::npos);
  EXPECT_EQ(disk.links.at(work + "/build.log"), fs::path(report.log_path).filename().string());
  ASSERT_TRUE(run.outcome);
  EXPECT_EQ(run.outcome->facts.ninja_steps, std::optional<uint64_t>(1));
  EXPECT_EQ(report.cache_tool, cache::CacheTool::none);
}

TEST_F(RunPlan, AJobserverThatCannotStartKeepsTheStaticCountAndSaysWhy) {
  plan.run.jobs.ninja_version = "1.13.2";
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  auto s = session();
  s.start_governor =
      [](governor::GovernorOptions options) -> Expected<std::unique_ptr<governor::MemoryGovernor>> {
    EXPECT_EQ(options.max_jobs, 4u);
    return make_error("no fifo here");
  };
  PlanRun run = run_plan(plan, s);
  ASSERT_FALSE(run.stop) << run.stop->message;
  ASSERT_TRUE(report.governor);
  EXPECT_EQ(report.governor->mode, "static");
  EXPECT_EQ(report.governor->reason, "the jobserver could not start: no fifo here");
  EXPECT_EQ(*runner.specs.at(0).env.at("MAX_JOBS"), "4");
}

TEST_F(RunPlan, AFailedStepIsDiagnosedFromTheLog) {
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(
        1,
        "[1/2] nvcc -c a.cu -o a.o\nFAILED: a.o\na.cu(3): error: identifier \"x\" is undefined\n"
        "nvcc fatal   : Unsupported gpu architecture 'compute_30'\n");
  };
  auto s = session();
  PlanRun run = run_plan(plan, s);
  ASSERT_TRUE(run.stop);
  EXPECT_EQ(*run.stop, (StepStop{BuildStatus::build_failed, "step 'compile' failed (exit 1)"}));
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.error_block);
  // The log's own line numbers: the step's header (two lines) and [1/2] come first.
  EXPECT_EQ(run.error_block->first_line, 4u);
  EXPECT_EQ(run.error_block->lines.front(), "FAILED: a.o");
  // Diagnosed once, from the step's last lines, with the log's line numbers.
  ASSERT_FALSE(run.diagnoses.empty());
  EXPECT_EQ(run.diagnoses.front().pattern_id, "nvcc-unsupported-arch");
  std::istringstream log(disk.files.at(report.log_path));
  std::string line;
  for (size_t n = 0; n < run.diagnoses.front().line_number; ++n) std::getline(log, line);
  EXPECT_EQ(line, run.diagnoses.front().quoted_line);
}

TEST_F(RunPlan, AFailedStepWhoseOutputOutgrewTheTailIsDiagnosedFromItsFirstError) {
  // g++ under -std=c++14 against torch 2: the #error first, then 9 MiB of errors about
  // torch's headers (more than the 8 MiB tail keeps).
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    std::string out =
        "[1/2] c++ -c a.cpp -o a.o\nFAILED: a.o\ntorch/all.h:5:2: error: #error C++17 or later "
        "compatible compiler is required to use PyTorch.\n";
    const std::string flood = "rand_ops.h:82:111: error: expected ',' or '...' before '<' token " +
                              std::string(100, 'x') + "\n";
    while (out.size() < (size_t{9} << 20)) out += flood;
    return ran(1, out);
  };
  auto s = session();
  PlanRun run = run_plan(plan, s);
  ASSERT_TRUE(run.stop);
  ASSERT_TRUE(run.error_block);
  EXPECT_EQ(run.error_block->first_line, 4u);
  EXPECT_EQ(run.error_block->lines.front(), "FAILED: a.o");
  ASSERT_GE(run.error_block->lines.size(), 2u);
  EXPECT_NE(run.error_block->lines[1].find("C++17 or later"), std::string::npos);
  ASSERT_TRUE(run.outcome);
  EXPECT_GT(run.outcome->facts.tail.first_line, 4u);  // the tail alone no longer has it
}

TEST_F(RunPlan, ARealWorkPathAndASandboxThatCannotBeAreSaid) {
  plan.run.work_path = plan::ExecutionPolicy::WorkPath::real;
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  auto s = session();
  PlanRun run = run_plan(plan, s);
  ASSERT_FALSE(run.stop) << run.stop->message;
  EXPECT_EQ(report.work_path, work);
  EXPECT_EQ(report.work_path_route, "none");
  EXPECT_EQ(report.work_path_note, "the plan builds at the real path");  // no warning's fix
  EXPECT_EQ(runner.specs.at(0).argv.at(0), "python3");                   // as the plan has it

  plan.run.work_path = plan::ExecutionPolicy::WorkPath::fixed;
  plan.run.sandbox = true;
  plan.cache.tool = cache::CacheTool::sccache;
  outputs::BuildReport second;
  second.targets = report.targets;
  auto s2 = session(second);
  run = run_plan(plan, s2);
  ASSERT_TRUE(run.stop);
  EXPECT_EQ(run.stop->status, BuildStatus::bad_input);
  EXPECT_NE(run.stop->message.find("--sandbox with sccache"), std::string::npos);
  EXPECT_FALSE(run.outcome);
}

// Resume, the job timeline and the unit times, all through the session's disk: the first
// run saves the fingerprint and Ninja's total; a second run with the same configuration
// keeps the build tree and counts what it reused; the .ninja_log lines this run appended
// are its job timeline; the recipe's measured unit times are handed to the driver.
TEST_F(RunPlan, ResumeTimelineAndUnitTimesGoThroughTheSessionsDisk) {
  plan.run.resume = true;
  plan.run.unit_times_recipe = "flash-attn";  // data/build/unit_times.toml has it
  plan.run.unit_times_profile = "minimal";
  const std::string ninja_log = work + "/src/build/temp.linux/.ninja_log";
  int runs = 0;
  runner.handler = [&](const CommandSpec&) -> std::optional<CommandResult> {
    // Each run's Ninja compiles what it has to and appends to its log (the first run starts
    // on a fresh tree: resume removed the build folder it did not know).
    ++runs;
    if (runs == 1) {
      EXPECT_FALSE(disk.exists(work + "/src/build"));
      (void)disk.make_dirs(work + "/src/build/temp.linux");
      disk.files[ninja_log] = "# ninja log v5\n";
    }
    disk.files[ninja_log] +=
        runs == 1 ? "0\t1500\t0\ta.o\tff\n0\t2500\t0\tb.o\tff\n" : "0\t700\t0\tb.o\tff\n";
    return ran(0, runs == 1 ? "[1/3] a\n[2/3] b\n[3/3] link\n" : "[1/1] b\n");
  };
  (void)disk.make_dirs(work + "/src/build");  // an earlier tree of unknown configuration
  auto s = session();
  PlanRun first = run_plan(plan, s);
  ASSERT_FALSE(first.stop) << first.stop->message;
  EXPECT_FALSE(first.tree_kept);
  ASSERT_EQ(report.job_timeline.size(), 2u);
  EXPECT_EQ(report.job_timeline[1].end_ms, 2500u);
  ASSERT_TRUE(disk.files.count(work + "/.tailor-resume.json"));
  EXPECT_NE(disk.files.at(work + "/.tailor-resume.json").find("\"ninja_total\": 3"),
            std::string::npos);
  EXPECT_GT(report.units_known, 20u);
  ASSERT_TRUE(disk.files.count(work + "/unit-times.json"));
  EXPECT_NE(disk.files.at(work + "/unit-times.json").find("flash_fwd_split_hdim128"),
            std::string::npos);
  EXPECT_EQ(*runner.specs.at(0).env.at("TAILOR_UNIT_TIMES"),
            "/tmp/.tailor-build/demo/unit-times.json");

  outputs::BuildReport again;
  again.targets = report.targets;
  auto s2 = session(again);
  PlanRun second = run_plan(plan, s2);
  ASSERT_FALSE(second.stop) << second.stop->message;
  EXPECT_TRUE(second.tree_kept);
  ASSERT_EQ(again.job_timeline.size(), 1u) << "only what this run appended";
  EXPECT_EQ(again.units_total, 3u);
  EXPECT_EQ(again.units_reused, 2u);
}

// The torch build's plan, resolved for the aarch64 T4G host from a --source tree, through
// the same builder over the same fake session: its command runs behind the fixed-path
// launcher with the reproducibility settings of its policy (the epoch, the prefix map, nvcc's
// seed), under the job policy the plan decided, and its log and resume state go to the
// session's disk.
TEST(RunTorchPlan, TheTorchPlanRunsThroughTheSameBuilderWithNoDisk) {
  const std::string root = "/nonexistent-tailor-run-plan/torch";
  plan::TorchVariant variant;
  variant.torch = "2.9.1";
  variant.cuda = cuda::CudaVersion{12, 6};
  variant.python = "3.10";
  variant.arch = {"T4G"};
  variant.source_dir = root + "/src";
  plan::ResolveOptions options;
  options.purpose = plan::PlanPurpose::build_here;
  options.work_dir = root + "/work";
  options.cache = cache::CacheTool::none;
  options.environment = {{"PATH", "/usr/bin:/bin"}};
  plan::TorchPlan plan = plan::resolve_torch_plan(variant, test::graviton_t4g_host(), options);
  ASSERT_FALSE(plan.has_errors()) << plan::render_problems(plan);
  // What the torch workflow sets once the source's identity is known.
  plan.run.reproducible = plan::Reproducibility{1700000000, root + "/src", true, plan.cuda_version};

  test::FakeCommandRunner runner;
  test::MemoryDisk disk;
  (void)disk.make_dirs(root + "/src");
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(0, "[1/1] Linking CXX shared library lib/libtorch_cuda.so\n");
  };
  outputs::BuildReport report;
  report.targets = plan.targets.names();
  BuildSession s{runner, disk, report};
  s.environment = Environment(std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}});
  test::RecordingDisplay display;
  s.display = &display;
  s.status = nullptr;
  s.warnings = std::tmpfile();
  s.record_cache_use = false;
  s.fixed_path = [](const std::string& real, const std::string& fixed,
                    std::optional<workpath::FixedPathRoute>) {
    workpath::FixedPathChoice choice;
    choice.path = workpath::FixedPath{real, fixed, workpath::FixedPathRoute::own_namespace,
                                      "/opt/tailor/bin/tailor"};
    return choice;
  };
  PlanRun run = run_plan(plan, s);
  ASSERT_FALSE(run.stop) << run.stop->message;
  ASSERT_FALSE(runner.specs.empty());
  const CommandSpec& build = runner.specs.back();
  EXPECT_EQ(build.argv.at(1), "__fixed-path");
  EXPECT_EQ(report.work_path_route, "namespace");
  EXPECT_EQ(report.work_path.rfind("/tmp/.tailor-build/", 0), 0u) << report.work_path;
  // The source tree is seen at the fixed path, where setup.py runs with the plan's variables
  // and the job count the builder settled on.
  const std::vector<std::string> bind = {"--bind", root + "/src", "/tmp/.tailor-build/torch"};
  EXPECT_NE(std::search(build.argv.begin(), build.argv.end(), bind.begin(), bind.end()),
            build.argv.end());
  EXPECT_EQ(build.argv.back(), "bdist_wheel");
  EXPECT_EQ(*build.env.at("CUDAARCHS"), "75-real");
  EXPECT_EQ(*build.env.at("MAX_JOBS"), std::to_string(report.jobs));
  EXPECT_EQ(*build.env.at("SOURCE_DATE_EPOCH"), "1700000000");
  const std::string nvcc_flags = *build.env.at("NVCC_APPEND_FLAGS");
  // The source folder as the steps see it, at the fixed path.
  EXPECT_NE(nvcc_flags.find("-Xcompiler=-ffile-prefix-map=/tmp/.tailor-build/torch=."),
            std::string::npos)
      << nvcc_flags;
  // nvcc 12.6 takes no fixed cudafe++ seed (data/build/reproducible.toml: 12.9 and newer).
  EXPECT_EQ(nvcc_flags.find("--frandom-seed"), std::string::npos) << nvcc_flags;
  EXPECT_NE(nvcc_flags.find("-objtemp"), std::string::npos) << nvcc_flags;
  // The report records the variables as the plan has them, outside the fixed path.
  EXPECT_EQ(report.env.at("NVCC_APPEND_FLAGS"),
            "-objtemp -Xcompiler=-ffile-prefix-map=" + root + "/src=.");
  ASSERT_TRUE(report.governor);
  EXPECT_FALSE(report.governor->reason.empty());
  EXPECT_TRUE(disk.files.count(report.log_path));
  EXPECT_TRUE(disk.files.count(plan.run.work_dir + "/.tailor-resume.json"));
  EXPECT_FALSE(fs::exists(root));
}

// The shared storage, asked once for torch and extension builds alike.
TEST(SettleCacheStorage, DownIsUncachedRefusedIsBadInputLocalIsNotAsked) {
  test::FakeCommandRunner runner;
  test::MemoryDisk disk;
  outputs::BuildReport report;
  BuildSession s{runner, disk, report};
  s.warnings = std::tmpfile();
  int asked = 0;
  Expected<cache::StorageCheck> answer =
      cache::StorageCheck{false, "nothing answers at 127.0.0.1:6390"};
  s.check_storage = [&](const cache::CacheSettings&) {
    ++asked;
    return answer;
  };
  cache::CacheSettings shared;
  ASSERT_TRUE(cache::set_cache_url(shared, "redis://127.0.0.1:6390", "--cache-url"));
  std::optional<cache::CacheTool> tool;
  EXPECT_EQ(settle_cache_storage(shared, tool, s), std::nullopt);
  EXPECT_EQ(tool, cache::CacheTool::none);
  answer = make_error("AUTH failed: WRONGPASS");
  tool.reset();
  auto stop = settle_cache_storage(shared, tool, s);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->status, BuildStatus::bad_input);
  EXPECT_NE(stop->message.find("AUTH failed: WRONGPASS"), std::string::npos);
  EXPECT_EQ(asked, 2);
  cache::CacheSettings local;
  EXPECT_EQ(settle_cache_storage(local, tool, s), std::nullopt);
  tool = cache::CacheTool::none;
  EXPECT_EQ(settle_cache_storage(shared, tool, s), std::nullopt);
  EXPECT_EQ(asked, 2);
}

}  // namespace
}  // namespace tailor::builder
