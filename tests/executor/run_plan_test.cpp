// The one builder (executor/run_plan.h) over a fake session: a fake command runner, a
// recording display, a fixed-path route and a governor start handed in, the learned
// records and the cache ledger off. The steps never run a process; the run's own log is
// written in a scratch folder. What the plan's policy says reaches the steps and the report.
#include "executor/run_plan.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/fake_host.h"
#include "support/fixtures.h"
#include "support/recording_display.h"

namespace tailor::executor {
namespace {
namespace fs = std::filesystem;
using test::ran;

class RunPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    work = (root.path / "work").string();
    fs::create_directories(fs::path(work) / "src");
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

  BuildSession session() {
    BuildSession s{runner, disk};
    s.environment = Environment(std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}});
    s.display = &display;
    s.status = nullptr;
    s.warnings = std::tmpfile();
    s.fixed_path = [this](const std::string& real, const std::string& fixed,
                          std::optional<FixedPathRoute>) {
      FixedPathChoice choice;
      choice.path = FixedPath{real, fixed, FixedPathRoute::own_namespace, "/opt/tailor/bin/tailor"};
      return choice;
    };
    s.record_cache_use = false;
    return s;
  }

  test::TempDir root{"run-plan"};
  std::string work;
  test::FakeCommandRunner runner;
  RealDiskInterface disk;
  test::RecordingDisplay display;
  plan::BuildPlan plan;
  BuildReport report;
};

TEST_F(RunPlan, RunsTheStepsAtTheFixedPathWithTheStaticCountFittedToTheBudget) {
  plan.run.jobs.budget = uint64_t{1} << 30;
  plan.run.jobs.prior_job_bytes = uint64_t{512} << 20;
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(0, "[1/1] done\n");
  };
  auto s = session();
  PlanRun run = run_plan(plan, s, report);
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
  // One log in the work folder, read back once.
  EXPECT_EQ(fs::path(report.log_path).parent_path(), fs::path(work));
  EXPECT_NE(run.log_text.find("[1/1] done"), std::string::npos) << run.log_text;
  EXPECT_EQ(report.cache_tool, cache::CacheTool::none);
}

TEST_F(RunPlan, AJobserverThatCannotStartKeepsTheStaticCountAndSaysWhy) {
  plan.run.jobs.ninja_version = "1.13.2";
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  auto s = session();
  s.start_governor = [](GovernorOptions options) -> Expected<std::unique_ptr<MemoryGovernor>> {
    EXPECT_EQ(options.max_jobs, 4u);
    return make_error("no fifo here");
  };
  PlanRun run = run_plan(plan, s, report);
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
        "[1/2] nvcc -c a.cu -o a.o\nFAILED: a.o\na.cu(3): error: identifier \"x\" is undefined\n");
  };
  auto s = session();
  PlanRun run = run_plan(plan, s, report);
  ASSERT_TRUE(run.stop);
  EXPECT_EQ(*run.stop, (StepStop{BuildStatus::build_failed, "step 'compile' failed (exit 1)"}));
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.error_block);
  EXPECT_NE(run.log_text.find("FAILED: a.o"), std::string::npos);
}

TEST_F(RunPlan, ARealWorkPathAndASandboxThatCannotBeAreSaid) {
  plan.run.work_path = plan::ExecutionPolicy::WorkPath::real;
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  auto s = session();
  PlanRun run = run_plan(plan, s, report);
  ASSERT_FALSE(run.stop) << run.stop->message;
  EXPECT_EQ(report.work_path, work);
  EXPECT_EQ(report.work_path_route, "none");
  EXPECT_EQ(runner.specs.at(0).argv.at(0), "python3");  // as the plan has it

  plan.run.work_path = plan::ExecutionPolicy::WorkPath::fixed;
  plan.run.sandbox = true;
  plan.cache.tool = cache::CacheTool::sccache;
  BuildReport second;
  second.targets = report.targets;
  run = run_plan(plan, s, second);
  ASSERT_TRUE(run.stop);
  EXPECT_EQ(run.stop->status, BuildStatus::bad_input);
  EXPECT_NE(run.stop->message.find("--sandbox with sccache"), std::string::npos);
  EXPECT_FALSE(run.outcome);
}

// The shared storage, asked once for torch and extension builds alike.
TEST(SettleCacheStorage, DownIsUncachedRefusedIsBadInputLocalIsNotAsked) {
  test::FakeCommandRunner runner;
  RealDiskInterface disk;
  BuildSession s{runner, disk};
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
}  // namespace tailor::executor
