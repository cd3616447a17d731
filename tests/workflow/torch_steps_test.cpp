// The steps of `tailor build torch` (workflow/torch_steps.h) over a fake host (the aarch64
// build machine of support/host_reports.h), a fake command runner, a fake cache storage
// and a scratch folder holding a --source tree: their order, what each decides and stops
// on, resume, the lock, an interrupt, a shared storage that is down. The whole chain with
// the real nvcc is tests/e2e/build_torch.sh and build_torch_interrupt.sh.
#include "workflow/torch_steps.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/fake_host.h"
#include "support/fixtures.h"
#include "support/host_reports.h"
#include "support/recording_display.h"
#include "util/interrupt.h"

namespace tailor::workflow {
namespace torch_steps_test {

namespace fs = std::filesystem;
using test::ran;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// What was written to a stream made by std::tmpfile().
std::string text_of(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

/// torch 2.9.1 for T4G (sm_75) with CUDA 12.6 and Python 3.10 on the aarch64 build machine,
/// from a --source tree with one filled submodule, built with the Python as it is
/// (--no-venv), the work and out folders in a scratch folder.
class TorchSteps : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(root.path / "src" / "setup.py", "# a torch source tree\n");
    write_text(root.path / "src" / "third_party" / "sleef" / "CMakeLists.txt", "# sleef\n");
    variant.torch = "2.9.1";
    variant.cuda = cuda::CudaVersion{12, 6};
    variant.python = "3.10";
    variant.arch = {"T4G"};
    variant.source_dir = (root.path / "src").string();
    host = test::graviton_t4g_host();
    o.out_dir = (root.path / "out").string();
    o.no_venv = true;
    o.wait_for_lock = false;
    environment = {{"PATH", "/usr/bin:/bin"}, {"SOURCE_DATE_EPOCH", "1700000000"}};
  }
  void TearDown() override {
    std::fclose(out);
    std::fclose(err);
  }
  TorchBuildContext context() {
    TorchBuildContext c{{runner}};
    c.environment = environment;
    c.check_storage = [this](const cache::CacheSettings&) {
      ++storage_checks;
      return storage;
    };
    c.display = &display;
    c.out = out;
    c.err = err;
    return c;
  }
  TorchBuildState state() {
    TorchBuildState s;
    s.variant = variant;
    s.host = host;
    s.resolve.work_dir = (root.path / "work").string();
    return s;
  }
  /// The build's own steps among the commands run (not the compiler cache's statistics).
  std::vector<CommandSpec> build_steps() const {
    std::vector<CommandSpec> out;
    for (const auto& spec : runner.specs)
      if (spec.argv.size() < 2 || spec.argv[1] != "--print-stats") out.push_back(spec);
    return out;
  }
  /// The spec of the command whose argv starts with `first` and `second`, or null.
  const CommandSpec* ran_command(const std::string& first, const std::string& second) const {
    for (const auto& spec : runner.specs)
      if (spec.argv.size() > 1 && spec.argv[0] == first && spec.argv[1] == second) return &spec;
    return nullptr;
  }

  test::TempDir root{"torch-steps"};
  test::FakeCommandRunner runner;
  test::RecordingDisplay display;
  plan::TorchVariant variant;
  probe::HostReport host;
  std::map<std::string, std::string> environment;
  Expected<cache::StorageCheck> storage = cache::StorageCheck{};
  int storage_checks = 0;
  TorchBuildOptions o;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
};

TEST(TorchBuildSteps, RunInTheOrderOfABuild) {
  std::vector<std::string> names;
  for (const auto& step : torch_build_steps()) names.push_back(step.name);
  EXPECT_EQ(names, (std::vector<std::string>{"plan", "lock", "source", "build", "verify", "import",
                                             "smoke", "publish"}));
}

TEST_F(TorchSteps, TheChainRunsThePlansCommandWithItsEnvironmentThenStopsWhereNoWheelWasLeft) {
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.9.1", false});
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(0, "[1/1] compiled\n");
  };
  auto c = context();
  auto s = state();
  TorchBuildResult r = build_torch(o, c, s);
  const std::string dist = (root.path / "src" / "dist").string();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.message, "the build produced no wheel in " + dist);
  EXPECT_NE(text_of(err).find("tailor: error: the build produced no wheel in " + dist),
            std::string::npos);
  // The one command the plan has with --source and --no-venv, with the Python as it is.
  EXPECT_EQ(display.events,
            (std::vector<std::string>{"start build wheel 1/1", "end build wheel ok"}));
  // ccache's counts are read before the build (its statistics are the build's).
  EXPECT_NE(ran_command("/usr/bin/ccache", "--print-stats"), nullptr);
  ASSERT_EQ(build_steps().size(), 1u);
  const CommandSpec build = build_steps()[0];
  EXPECT_EQ(build.argv,
            (std::vector<std::string>{"/usr/bin/python3.10", "setup.py", "bdist_wheel"}));
  EXPECT_EQ(build.cwd, (root.path / "src").string());
  ASSERT_TRUE(build.env.count("TORCH_CUDA_ARCH_LIST"));
  EXPECT_EQ(*build.env.at("TORCH_CUDA_ARCH_LIST"), "7.5");
  EXPECT_EQ(*build.env.at("SOURCE_DATE_EPOCH"), "1700000000");  // the caller's wins over the tree's
  // The plan's compiler cache (ccache from the host's tools), with the work folder stripped.
  EXPECT_EQ(s.plan.cache.tool, cache::CacheTool::ccache);
  EXPECT_EQ(*build.env.at("CCACHE_BASEDIR"), s.work);
  EXPECT_EQ(build.env.count("USE_CCACHE"), 0u);
  EXPECT_FALSE(fs::exists(o.out_dir));
  EXPECT_TRUE(fs::exists(s.log_path));
}

TEST_F(TorchSteps, AFailingCommandStopsTheRunWithItsStepAndTheFirstError) {
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(
        1,
        "[1/2] nvcc -c a.cu -o a.o\nFAILED: a.o\na.cu(3): error: identifier \"x\" is undefined\n");
  };
  auto c = context();
  auto s = state();
  TorchBuildResult r = build_torch(o, c, s);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.message, "step 'build wheel' failed; full log: " + s.log_path);
  const std::string e = text_of(err);
  EXPECT_NE(e.find("First error (log lines"), std::string::npos) << e;
  EXPECT_NE(e.find("FAILED: a.o"), std::string::npos) << e;
  EXPECT_EQ(e.find("no wheel"), std::string::npos) << e;  // verification never started
  EXPECT_EQ(build_steps().size(), 1u);
  // What the run measured stays in the work folder as its report; nothing is published.
  const std::string last = s.work + "/last-run.report.json";
  ASSERT_TRUE(fs::exists(last));
  auto j = nlohmann::json::parse(std::ifstream(last), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["inputs"]["package"], "torch");
  EXPECT_FALSE(fs::exists(o.out_dir));
}

// --configure-only reaches PyTorch's setup.py as its own argument, --cmake-only: it reads no
// CMAKE_ONLY variable (2.6.0's, met on the real tree), so a configure-only run compiled
// everything.
TEST_F(TorchSteps, ConfigureOnlyIsSetupPysCmakeOnlyArgument) {
  o.configure_only = true;
  auto c = context();
  auto s = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, s));
  ASSERT_FALSE(torch_steps::check_source(o, c, s));
  const plan::Step& build = s.steps.back();
  EXPECT_EQ(build.argv, (std::vector<std::string>{"/usr/bin/python3.10", "setup.py", "--cmake-only",
                                                  "bdist_wheel"}));
}

TEST_F(TorchSteps, PlanProblemsStopBeforeAnythingIsLockedOrRun) {
  variant.cuda = cuda::CudaVersion{13, 0};
  variant.arch = {"6.0"};
  auto c = context();
  auto s = state();
  TorchBuildResult r = build_torch(o, c, s);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.message, "the variant cannot be built here (problems listed above)");
  EXPECT_NE(text_of(err).find("sm_60"), std::string::npos);
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_FALSE(fs::exists(root.path / "work"));
}

TEST_F(TorchSteps, AnEmptySubmoduleOfTheSourceTreeStopsTheRun) {
  fs::create_directories(root.path / "src" / "third_party" / "cutlass");
  auto c = context();
  auto s = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, s));
  EXPECT_EQ(
      torch_steps::check_source(o, c, s),
      (StepStop{BuildStatus::preflight_failed,
                (root.path / "src").string() + ": empty submodules (third_party/cutlass); run git "
                                               "submodule update --init --recursive"}));
  variant.source_dir = (root.path / "nowhere").string();
  auto s2 = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, s2));
  EXPECT_EQ(torch_steps::check_source(o, c, s2),
            (StepStop{BuildStatus::bad_input,
                      (root.path / "nowhere").string() + ": no such source tree"}));
}

// An interrupt during the build: the run ends with "interrupted" (the CLI says it once),
// never with the step's failure, and nothing after it starts.
TEST_F(TorchSteps, AnInterruptedRunSaysInterruptedAndNeitherFailedNorAnError) {
  install_interrupt_handlers();
  reset_interrupt_for_testing();
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    ::raise(SIGTERM);  // the terminal's signal while the build runs; its child then dies of it
    CommandResult r = ran(143, "[1/9] nvcc -c a.cu -o a.o\n");
    r.interrupted = true;
    return r;
  };
  auto c = context();
  auto s = state();
  TorchBuildResult r = build_torch(o, c, s);
  const int sig = interrupt_signal();
  reset_interrupt_for_testing();
  EXPECT_EQ(sig, SIGTERM);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.message, "interrupted");
  const std::string e = text_of(err);
  EXPECT_EQ(e.find("error"), std::string::npos) << e;
  EXPECT_EQ(e.find("failed"), std::string::npos) << e;
  EXPECT_EQ(build_steps().size(), 1u);
  EXPECT_FALSE(fs::exists(o.out_dir));
}

TEST_F(TorchSteps, AnInterruptBeforeAStepEndsTheRunBeforeIt) {
  install_interrupt_handlers();
  reset_interrupt_for_testing();
  ::raise(SIGTERM);
  auto c = context();
  auto s = state();
  TorchBuildResult r = build_torch(o, c, s);
  reset_interrupt_for_testing();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.message, "interrupted");
  EXPECT_EQ(text_of(err), "");
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_FALSE(fs::exists(root.path / "work"));  // not even the plan's folders
}

// Without --source the clone is tailor's own step (source/source_clone.h), run from the
// work folder, which exists before it (the clone's destination does not); it reuses a clone
// already made, so a resumed build runs it again and learns the source's identity first.
TEST_F(TorchSteps, TheCloneIsTailorsOwnStepRunFromTheWorkFolder) {
  variant.source_dir.reset();
  auto c = context();
  auto fresh = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, fresh));
  ASSERT_FALSE(torch_steps::check_source(o, c, fresh));
  auto titles = [](const TorchBuildState& s) {
    std::vector<std::string> out;
    for (const auto& st : s.steps) out.push_back(st.title);
    return out;
  };
  EXPECT_EQ(titles(fresh), (std::vector<std::string>{"clone source", "build wheel"}));
  const plan::Step& clone = fresh.steps.front();
  ASSERT_GE(clone.argv.size(), 8u);
  EXPECT_EQ(clone.argv[1], "__clone-source");
  EXPECT_EQ(clone.argv[3], "https://github.com/pytorch/pytorch");
  EXPECT_EQ(clone.argv[5], fresh.plan.git_tag);
  EXPECT_EQ(clone.argv[7], (root.path / "work" / "pytorch").string());
  EXPECT_EQ(clone.cwd, (root.path / "work").string());
  EXPECT_EQ(clone.role, plan::StepRole::clone);
  EXPECT_FALSE(fresh.identity);  // known after the clone
  fs::create_directories(root.path / "work" / "pytorch" / ".git");
  runner.handler = [](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 3 && spec.argv[0] == "git" && spec.argv[3] == "rev-parse")
      return ran(0, "0123abcd\n");
    if (spec.argv.size() > 3 && spec.argv[0] == "git" && spec.argv[3] == "log")
      return ran(0, "1690000000\n");
    return std::nullopt;
  };
  environment.erase("SOURCE_DATE_EPOCH");
  auto c2 = context();
  auto resumed = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c2, resumed));
  auto st = torch_steps::check_source(o, c2, resumed);
  ASSERT_FALSE(st) << st->message;
  EXPECT_EQ(titles(resumed), (std::vector<std::string>{"clone source", "build wheel"}));
  ASSERT_TRUE(resumed.identity);
  EXPECT_EQ(resumed.identity->digest, "0123abcd");
  // The commit's time, in the policy the builder applies to the steps' variables.
  ASSERT_TRUE(resumed.plan.run.reproducible);
  EXPECT_EQ(resumed.plan.run.reproducible->source_date_epoch, 1690000000);
}

TEST_F(TorchSteps, ASecondBuildOfTheSameWorkFolderIsRefusedWhileTheFirstHoldsIt) {
  auto c = context();
  auto first = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, first));
  ASSERT_FALSE(torch_steps::lock_folders(o, c, first));
  auto second = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, second));
  auto st = torch_steps::lock_folders(o, c, second);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, BuildStatus::build_failed);
  EXPECT_NE(st->message.find("is in use by tailor build pid " + std::to_string(getpid())),
            std::string::npos)
      << st->message;
  // The whole run stops there too, having run nothing.
  auto third = state();
  TorchBuildResult r = build_torch(o, c, third);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(runner.calls.empty());
  first.work_lock.reset();
  first.out_lock.reset();
  auto fourth = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, fourth));
  EXPECT_FALSE(torch_steps::lock_folders(o, c, fourth));
}

// A shared storage nothing answers at must not stop builds: a warning, and the build goes
// on without a compiler cache. One that answers and refuses is a setting to fix.
TEST_F(TorchSteps, ASharedStorageThatIsDownFallsBackToUncached) {
  host.tools.push_back({"sccache", "/usr/bin/sccache", "0.10.0", false});
  o.cache_url = "redis://127.0.0.1:6390";
  storage = cache::StorageCheck{false, "nothing answers at 127.0.0.1:6390 (Connection refused)"};
  auto c = context();
  auto s = state();
  // Asked once, before the plan decides the cache: auto would take sccache for a shared
  // storage, and takes none.
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, s));
  ASSERT_FALSE(torch_steps::check_source(o, c, s));
  EXPECT_EQ(storage_checks, 1);
  EXPECT_EQ(s.plan.cache.tool, cache::CacheTool::none);
  EXPECT_EQ(
      text_of(err),
      "tailor: warning: compiler cache redis://127.0.0.1:6390: nothing answers at 127.0.0.1:6390 "
      "(Connection refused); building without a compiler cache\n");
  // The build runs uncached: no sccache server, no launcher, torch's own ccache off.
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  ASSERT_TRUE(torch_steps::lock_folders(o, c, s) == std::nullopt);
  ASSERT_EQ(torch_steps::run_build(o, c, s), std::nullopt);
  EXPECT_EQ(ran_command("/usr/bin/sccache", "--start-server"), nullptr);
  ASSERT_EQ(runner.specs.size(), 1u);  // no cache: no statistics read
  EXPECT_EQ(*runner.specs[0].env.at("USE_CCACHE"), "0");
  EXPECT_EQ(runner.specs[0].env.count("CMAKE_CXX_COMPILER_LAUNCHER"), 0u);
  EXPECT_EQ(runner.specs[0].env.count("SCCACHE_REDIS_ENDPOINT"), 0u);

  storage = make_error("AUTH failed: WRONGPASS");
  auto c2 = context();
  auto refused = state();
  EXPECT_EQ(torch_steps::resolve_plan(o, c2, refused),
            (StepStop{BuildStatus::bad_input,
                      "compiler cache redis://127.0.0.1:6390: AUTH failed: WRONGPASS (fix the "
                      "storage's settings, "
                      "or build with --cache none)"}));
  // A local storage is not asked.
  o.cache_url.clear();
  auto local = state();
  const int before = storage_checks;
  ASSERT_FALSE(torch_steps::resolve_plan(o, c2, local));
  EXPECT_EQ(storage_checks, before);
}

TEST_F(TorchSteps, TheCacheFlagAndTheEnvironmentReachThePlan) {
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.9.1", false});
  o.cache = cache::CacheTool::sccache;  // not installed here
  auto c = context();
  auto s = state();
  auto st = torch_steps::resolve_plan(o, c, s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, BuildStatus::bad_input);
  EXPECT_NE(text_of(err).find("compiler cache sccache: sccache is not installed"),
            std::string::npos);
  // TAILOR_CACHE_URL from the caller's environment is the storage (and asks for sccache).
  o.cache.reset();
  environment["TAILOR_CACHE_URL"] = "redis://127.0.0.1:6391";
  host.tools.push_back({"sccache", "/usr/bin/sccache", "0.10.0", false});
  auto c2 = context();
  auto s2 = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c2, s2));
  EXPECT_TRUE(s2.cache_settings.shared());
  EXPECT_EQ(s2.plan.cache.tool, cache::CacheTool::sccache);
  EXPECT_EQ(s2.plan.cache.env.at("SCCACHE_REDIS_ENDPOINT"), "redis://127.0.0.1:6391");
}

TEST_F(TorchSteps, TheImportCheckWantsTheNewWheelsTorchWithEveryTarget) {
  auto c = context();
  auto s = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, s));
  s.work = (root.path / "work").string();
  s.renamed = s.work + "/torch-2.9.1+cu126-cp310-cp310-manylinux_2_35_aarch64.whl";
  const std::string venv = s.work + "/verify-venv";
  std::string answer;
  runner.handler = [&](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 1 && spec.argv[1] == "-c") return ran(0, answer);
    return ran(0);
  };
  answer =
      R"({"file": ")" + venv +
      R"(/lib/python3.10/site-packages/torch/__init__.py", "version": "2.9.1+cu126", "arch_list": ["sm_75"]})";
  EXPECT_EQ(torch_steps::import_check(o, c, s), std::nullopt);
  ASSERT_EQ(runner.calls.size(), 3u);
  EXPECT_EQ(runner.calls[0], (std::vector<std::string>{"/usr/bin/python3.10", "-m", "venv",
                                                       "--system-site-packages", venv}));
  EXPECT_EQ(runner.calls[1].back(), s.renamed);
  answer = R"({"file": ")" + venv +
           R"(/torch/__init__.py", "version": "2.9.1+cu126", "arch_list": ["sm_80"]})";
  EXPECT_EQ(torch_steps::import_check(o, c, s),
            (StepStop{BuildStatus::check_failed,
                      R"(torch.cuda.get_arch_list() lacks sm_75: ["sm_80"])"}));
  answer =
      R"({"file": "/usr/lib/python3/dist-packages/torch/__init__.py", "version": "2.9.1", "arch_list": ["sm_75"]})";
  EXPECT_EQ(torch_steps::import_check(o, c, s),
            (StepStop{BuildStatus::check_failed,
                      "import check: torch came from "
                      "/usr/lib/python3/dist-packages/torch/__init__.py, not the new wheel"}));
}

TEST_F(TorchSteps, TheSmokeTestRunsOnlyOnAGpuTheTargetsCover) {
  auto c = context();
  auto s = state();
  ASSERT_FALSE(torch_steps::resolve_plan(o, c, s));  // sm_75
  EXPECT_EQ(torch_steps::smoke_test(o, c, s), std::nullopt);
  EXPECT_EQ(s.smoke, "skipped (no GPU)");
  s.host.gpus = {{0, "NVIDIA H100 80GB HBM3", cuda::ComputeCapability{9, 0}, 80ull << 30, ""}};
  EXPECT_EQ(torch_steps::smoke_test(o, c, s), std::nullopt);
  EXPECT_EQ(s.smoke, "skipped (NVIDIA H100 80GB HBM3 (CC 9.0) is not among the targets)");
  EXPECT_TRUE(runner.calls.empty());
  s.host.gpus = {{0, "NVIDIA T4G", cuda::ComputeCapability{7, 5}, 16ull << 30, ""}};
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(1, "no kernel image\n");
  };
  EXPECT_EQ(torch_steps::smoke_test(o, c, s),
            (StepStop{BuildStatus::check_failed, "GPU smoke test failed: no kernel image\n"}));
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  EXPECT_EQ(torch_steps::smoke_test(o, c, s), std::nullopt);
  EXPECT_EQ(s.smoke, "ok");
}

}  // namespace torch_steps_test
}  // namespace tailor::workflow
