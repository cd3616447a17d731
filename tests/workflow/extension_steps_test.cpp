// The steps of `tailor build` (workflow/extension_steps.h), one at a time, over a fake host,
// a fake command runner and a temporary work root: what each step decides, records and
// stops on. The whole chain with the real nvcc is tests/e2e/build_*.sh.
#include "workflow/extension_steps.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "diagnose/diagnosis.h"
#include "formats/zip_writer.h"
#include "support/fake_host.h"
#include "support/fixtures.h"
#include "support/host_reports.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/strings.h"
#include "workflow/extension_helpers.h"

using namespace tailor;
using namespace tailor::workflow;
using namespace tailor::cache;
namespace fs = std::filesystem;

namespace {

using test::ran;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// A source folder declaring `demo-ops`, a host with CUDA 13.0 and 13.1 (13.0 found
/// first), a Python with torch for CUDA 13.0, no GPU.
class ExtensionSteps : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() /
           ("tailor_steps_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    write(root / "pkg" / "setup.py", "from setuptools import setup\nsetup(name='demo-ops')\n");
    write(root / "pkg" / "tests" / "test_ops.py", "print('1 passed')\n");
    host.cpu.logical_cores = 2;
    host.cuda_toolkits = {test::cuda_toolkit(13, 0), test::cuda_toolkit(13, 1)};
    python = test::python_with_torch("13.0", "/venv/bin/python", "3.11.7");
    environment = {{"PATH", "/usr/bin:/bin"}};
    o.source = (root / "pkg").string();
    o.arch = {"8.0"};
    o.python = "/venv/bin/python";
    o.work_root = (root / "work").string();
    o.out_dir = (root / "out").string();
    o.status_out = nullptr;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  ExtensionBuildContext context() {
    ExtensionBuildContext c{{runner}};
    c.probe_host = [this](const probe::ProbeOptions&) { return host; };
    c.probe_python = [this](const std::string&, bool) { return python; };
    c.environment = environment;
    c.display = &display;
    return c;
  }
  /// Steps 1..3 as build_extension runs them.
  void resolve_and_prepare(ExtensionBuildContext& c) {
    ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
    auto st = prepare_build(o, c, s);
    ASSERT_FALSE(st) << st->message;
    // The built wheel the import check reads its module names from (the runner is a fake:
    // nothing else reads it).
    s.wheel = (root / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string();
    auto written = formats::write_zip(
        s.wheel, {{"demo_ops/__init__.py", std::string()},
                  {"demo_ops/_C.cpython-311-x86_64-linux-gnu.so", std::string("x")},
                  {"demo_ops-0.1.dist-info/RECORD", std::string()}});
    ASSERT_TRUE(written) << written.error().message;
  }

  class RecordingDisplay : public builder::ProgressDisplay {
   public:
    std::vector<std::string> events;
    void step_started(const tailor::plan::Step& step, size_t i, size_t n) override {
      events.push_back("start " + step.title + " " + std::to_string(i + 1) + "/" +
                       std::to_string(n));
    }
    void progress(const builder::BuildProgress&) override {}
    void step_finished(const builder::StepOutcome& out) override {
      events.push_back("end " + out.title + (out.ok() ? " ok" : " failed"));
    }
  };

  fs::path root;
  test::FakeCommandRunner runner;
  probe::HostReport host;
  std::optional<probe::PythonInstall> python;
  std::map<std::string, std::string> environment;
  RecordingDisplay display;
  ExtensionBuildOptions o;
  ExtensionBuildState s;
};

}  // namespace

TEST_F(ExtensionSteps, ResolveInputsTakesPlansToolkitAndTheContextsEnvironment) {
  environment["SCCACHE_BUCKET"] = "b";
  auto c = context();
  ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
  ASSERT_NE(s.toolkit, nullptr);
  EXPECT_EQ(s.toolkit->root, "/usr/local/cuda-13.1");  // newest 13.x, not the first found
  EXPECT_EQ(s.result.report.toolchain["nvcc"], "13.1.1 (/usr/local/cuda-13.1/bin/nvcc)");
  EXPECT_EQ(s.request.environment, environment);
  EXPECT_EQ(s.result.report.targets, std::vector<std::string>{"sm_80"});
  EXPECT_EQ(s.result.report.targets_spec, "--arch 8.0");
  EXPECT_EQ(s.package, "demo-ops");
  EXPECT_EQ(s.request.out_dir, (fs::path(s.work_dir) / "wheelhouse").string());
  EXPECT_EQ(s.result.report.python, "/venv/bin/python");
}

TEST_F(ExtensionSteps, PrepareBuildBridgesRemovedApisInTheCopyOnly) {
  // A package without a recipe that still uses AT_CHECK (gone since torch 1.5): the copy
  // gets TORCH_CHECK, the user's file stays, the report lists the change with its line,
  // and the build's environment names the changes (a build tree of other changes is not
  // reused); --keep-package-source leaves the copy as the package is.
  const std::string text = "#include <torch/extension.h>\nvoid f(int x) { AT_CHECK(x, \"x\"); }\n";
  write(root / "pkg" / "csrc" / "ops.cpp", text);
  auto c = context();
  resolve_and_prepare(c);
  const auto& rep = s.result.report;
  ASSERT_EQ(rep.compat_changes.size(), 1u);
  EXPECT_EQ(rep.compat_changes[0].text,
            "csrc/ops.cpp:2: AT_CHECK -> TORCH_CHECK (removed in torch 1.5)");
  EXPECT_NE(tailor::read_file((fs::path(s.source_dir) / "csrc" / "ops.cpp").string())
                ->find("TORCH_CHECK(x"),
            std::string::npos);
  EXPECT_EQ(*tailor::read_file((root / "pkg" / "csrc" / "ops.cpp").string()), text);
  EXPECT_EQ(rep.env.count("TAILOR_SOURCE_COMPAT"), 1u);
  EXPECT_NE(outputs::render_summary(rep).find(
                "package   csrc/ops.cpp:2: AT_CHECK -> TORCH_CHECK (removed in torch 1.5)"),
            std::string::npos);
}

TEST_F(ExtensionSteps, KeepPackageSourceBuildsTheSourceAsItIs) {
  const std::string text = "#include <torch/extension.h>\nvoid f(int x) { AT_CHECK(x, \"x\"); }\n";
  write(root / "pkg" / "csrc" / "ops.cpp", text);
  auto c = context();
  o.keep_package_source = true;
  resolve_and_prepare(c);
  EXPECT_TRUE(s.result.report.compat_changes.empty());
  EXPECT_EQ(*tailor::read_file((fs::path(s.source_dir) / "csrc" / "ops.cpp").string()), text);
  EXPECT_EQ(s.result.report.env.count("TAILOR_SOURCE_COMPAT"), 0u);
}

TEST_F(ExtensionSteps, AKnownRemovalAfterALongRunOfWarningsIsStillNamed) {
  // maskrcnn-benchmark's ROIAlign_cpu.cpp as it is: 80 lines of `.type()` deprecation notes
  // fill the failed unit's first 40 lines; its error at x.type() in AT_DISPATCH comes after.
  std::string log =
      "[1/3] c++ -c csrc/ROIAlign_cpu.cpp\nFAILED: [code=1] ROIAlign_cpu.o\n"
      "c++ -c csrc/ROIAlign_cpu.cpp -o ROIAlign_cpu.o\n";
  for (int i = 0; i < 40; ++i)
    log +=
        "csrc/ROIAlign_cpu.cpp:227:25: warning: 'type()' is deprecated\n"
        "  227 |   AT_ASSERTM(!input.type().is_cuda(), \"input must be a CPU tensor\");\n";
  const size_t error_line = 3 + 80 + 1;
  log +=
      "torch/headeronly/core/Dispatch.h:36:63: error: cannot convert "
      "\u2018const at::DeprecatedTypeProperties\u2019 to \u2018c10::ScalarType\u2019\n"
      "[2/3] c++ -c csrc/nms_cpu.cpp\nFAILED: [code=1] nms_cpu.o\n"
      "csrc/nms_cpu.cpp:9:3: error: \u2018AT_CHECK\u2019 was not declared in this scope\n"
      "ninja: build stopped: subcommand failed.\n";
  // The runner's tail of the failed step, as run_plan hands it over: it begins at the log's
  // line 2 (an earlier line was not kept), and no log file is read back.
  builder::LogTail tail;
  tail.first_line = 2;
  std::vector<std::string> lines = tailor::split_any(log, "\n");
  tail.lines.assign(lines.begin() + 1, lines.end());
  s.result.report.recipe = "generic";
  s.result.report.log_path = (root / "no-such-build.log").string();
  s.result.error_block = diagnose::first_error_block(tail.text());
  ASSERT_TRUE(s.result.error_block);
  s.result.error_block->first_line += tail.first_line - 1;
  s.result.error_block->last_line += tail.first_line - 1;
  ASSERT_LT(s.result.error_block->last_line, error_line);  // the block stops short of it
  o.keep_package_source = true;
  detail::name_known_removals(o, s, tail);
  ASSERT_FALSE(s.result.diagnoses.empty());
  EXPECT_EQ(s.result.diagnoses[0].pattern_id, "compat-torch-dispatch-type");
  EXPECT_EQ(s.result.diagnoses[0].line_number, error_line);
  EXPECT_NE(s.result.diagnoses[0].fix.find("without --keep-package-source"), std::string::npos);
}

TEST_F(ExtensionSteps, ASourceThatDeclaresNoNameIsCalledByItsFolder) {
  write(root / "pkg" / "setup.py", "from setuptools import setup\nNAME = 'x'\nsetup(name=NAME)\n");
  auto c = context();
  ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
  EXPECT_EQ(s.package, "pkg");  // not "": "checking toolchain for  (sm_80)"
}

TEST_F(ExtensionSteps, ResolveInputsStopsOnBadOptions) {
  auto c = context();
  o.jobs = 0;
  EXPECT_EQ(resolve_inputs(o, c, s),
            (builder::StepStop{builder::BuildStatus::bad_input, "--jobs 0: must be at least 1"}));
  o.jobs.reset();
  // --cache is read once, by the CLI (plan::parse_cache_flag): the options hold the tool.
  EXPECT_EQ(plan::parse_cache_flag("distcc").error().message,
            "--cache distcc: expected auto, ccache, sccache or none");
  python.reset();
  auto c2 = context();
  ExtensionBuildState s3;
  EXPECT_EQ(resolve_inputs(o, c2, s3),
            (builder::StepStop{builder::BuildStatus::bad_input,
                               "--python /venv/bin/python: cannot run it"}));
}

// One platform rule (cuda::platform_mismatch): a GPU or instance that exists only on
// aarch64 needs an aarch64 wheel, and an extension is built for the host's own platform:
// bad input (exit 2) before anything is fetched or compiled.
TEST_F(ExtensionSteps, AGpuOfAnotherPlatformThanTheHostIsBadInput) {
  host.os.arch = "x86_64";
  o.arch.clear();
  o.gpu = {"g5g.xlarge"};
  auto c = context();
  EXPECT_EQ(resolve_inputs(o, c, s),
            (builder::StepStop{
                builder::BuildStatus::bad_input,
                "--gpu g5g.xlarge: g5g.xlarge (T4G) exists only on aarch64; this host is x86_64: "
                "add --platform aarch64 to cross-build its wheel here, or build on an aarch64 "
                "machine"}));
  EXPECT_TRUE(runner.calls.empty());
  o.gpu.clear();
  o.arch = {"T4G"};
  ExtensionBuildState s2;
  auto st = resolve_inputs(o, c, s2);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, builder::BuildStatus::bad_input);
  EXPECT_EQ(st->message,
            "--arch T4G: T4G (g5g) exists only on aarch64; this host is x86_64: add --platform "
            "aarch64 to cross-build its wheel here, or build on an aarch64 machine");
  // On the platform it implies, the same GPU builds; a portable GPU builds anywhere.
  host.os.arch = "aarch64";
  auto c2 = context();
  ExtensionBuildState s3;
  EXPECT_EQ(resolve_inputs(o, c2, s3), std::nullopt);
  EXPECT_EQ(s3.result.report.targets, std::vector<std::string>{"sm_75"});
  host.os.arch = "x86_64";
  o.arch = {"T4"};
  auto c3 = context();
  ExtensionBuildState s4;
  EXPECT_EQ(resolve_inputs(o, c3, s4), std::nullopt);
}

// --platform: another machine's is a cross build (its own work folder, the platform in the
// report); an unknown platform, or one without named targets, is bad input, and one whose
// GPU belongs to another platform too.
TEST_F(ExtensionSteps, PlatformChoosesACrossBuild) {
  host.os.arch = "x86_64";
  o.arch = {"T4G"};
  o.platform = "riscv64";
  auto c = context();
  EXPECT_EQ(resolve_inputs(o, c, s),
            (builder::StepStop{
                builder::BuildStatus::bad_input,
                "--platform riscv64: tailor cross-builds for aarch64 (this host is x86_64)"}));
  o.arch.clear();
  o.platform = "aarch64";
  ExtensionBuildState s2;
  auto none = resolve_inputs(o, c, s2);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, builder::BuildStatus::bad_input);
  EXPECT_NE(none->message.find("--gpu"), std::string::npos) << none->message;
  EXPECT_EQ(s2.cross_platform, nullptr);
  o.arch = {"T4G"};
  ExtensionBuildState s3;
  auto st = resolve_inputs(o, c, s3);
  ASSERT_NE(s3.cross_platform, nullptr);
  EXPECT_EQ(s3.cross_platform->name, "aarch64");
  EXPECT_EQ(s3.result.report.platform, "aarch64");
  EXPECT_TRUE(s3.work_dir.ends_with("-aarch64")) << s3.work_dir;
  // The cross compiler is looked for on PATH: without it, one line naming the install.
  if (st) {
    EXPECT_EQ(st->status, builder::BuildStatus::preflight_failed);
    EXPECT_NE(st->message.find("apt-get install g++-aarch64-linux-gnu"), std::string::npos)
        << st->message;
  }
  // The host's own platform is a native build.
  o.platform = "x86_64";
  o.arch = {"T4"};
  ExtensionBuildState s4;
  EXPECT_EQ(resolve_inputs(o, c, s4), std::nullopt);
  EXPECT_EQ(s4.cross_platform, nullptr);
}

// The SCCACHE_* auto-detection sees the caller's environment through the real path:
// build_extension fills the plan request from the context.
TEST_F(ExtensionSteps, PrintEnvPicksSccacheOnlyWhenTheEnvironmentConfiguresIt) {
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.7.5", false});
  host.tools.push_back({"sccache", "/usr/bin/sccache", "0.8.1", false});
  o.print_env = true;
  {
    auto c = context();
    auto res = build_extension(o, c);
    ASSERT_EQ(res.status, builder::BuildStatus::printed_env) << res.message;
    EXPECT_NE(res.print_env.find("# compiler cache: ccache, "), std::string::npos) << res.print_env;
  }
  environment["SCCACHE_BUCKET"] = "builds";
  {
    auto c = context();
    auto res = build_extension(o, c);
    ASSERT_EQ(res.status, builder::BuildStatus::printed_env) << res.message;
    EXPECT_NE(res.print_env.find("# compiler cache: sccache, "), std::string::npos)
        << res.print_env;
    EXPECT_NE(res.print_env.find("export PATH=/usr/local/cuda-13.1/bin:\"$PATH\"\n"),
              std::string::npos)
        << res.print_env;
    EXPECT_NE(res.print_env.find("export CUDA_HOME=/usr/local/cuda-13.1\n"), std::string::npos)
        << res.print_env;
  }
  EXPECT_TRUE(runner.calls.empty());  // nothing fetched, nothing built
}

TEST_F(ExtensionSteps, CheckToolchainStopsWithoutNvcc) {
  host.cuda_toolkits.clear();
  auto c = context();
  ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
  auto st = check_toolchain(o, c, s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, builder::BuildStatus::preflight_failed);
  EXPECT_EQ(st->message, fmt::format("{} problem(s) to fix before building",
                                     s.result.preflight.problems().size()));
  bool nvcc_failed = false;
  for (const auto& ch : s.result.preflight.checks)
    if (ch.name == "nvcc" && !ch.ok) nvcc_failed = true;
  EXPECT_TRUE(nvcc_failed);
}

TEST_F(ExtensionSteps, CheckToolchainJudgesTheToolkitThePlanUses) {
  auto c = context();
  ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
  (void)check_toolchain(o, c, s);
  bool judged = false;
  for (const auto& ch : s.result.preflight.checks)
    if (ch.name == "nvcc") {
      judged = true;
      EXPECT_NE(ch.detail.find("/usr/local/cuda-13.1/bin/nvcc"), std::string::npos) << ch.detail;
    }
  EXPECT_TRUE(judged);
}

TEST_F(ExtensionSteps, PrepareBuildCopiesTheSourceAndSetsTheChosenToolkit) {
  auto c = context();
  resolve_and_prepare(c);
  EXPECT_TRUE(fs::exists(fs::path(s.source_dir) / "setup.py"));
  EXPECT_EQ(s.request.source_dir, s.source_dir);
  EXPECT_EQ(s.result.report.package, "demo-ops");
  EXPECT_EQ(s.result.report.recipe, "generic");
  EXPECT_EQ(s.result.report.env.at("CUDA_HOME"), "/usr/local/cuda-13.1");
  EXPECT_EQ(s.result.report.env.at("TORCH_CUDA_ARCH_LIST"), "8.0");
  EXPECT_EQ(s.build_plan.path_prepend, "/usr/local/cuda-13.1/bin");
  EXPECT_GE(s.result.report.jobs, 1);
}

TEST_F(ExtensionSteps, RunBuildPutsTheChosenNvccFirstOnPath) {
  auto c = context();
  resolve_and_prepare(c);
  runner.handler = [&](const CommandSpec& spec) -> std::optional<CommandResult> {
    write(fs::path(s.request.out_dir) / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl",
          "not really a wheel");
    return ran(0, "[1/1] nvcc -c ops.cu -o ops.o\nSuccessfully built demo-ops\n");
    (void)spec;
  };
  ASSERT_EQ(run_build(o, c, s), std::nullopt);
  ASSERT_EQ(runner.specs.size(), 1u);
  const CommandSpec& spec = runner.specs[0];
  EXPECT_EQ(spec.env.at("PATH"),
            std::optional<std::string>("/usr/local/cuda-13.1/bin:/usr/bin:/bin"));
  EXPECT_EQ(spec.env.at("CUDA_HOME"), std::optional<std::string>("/usr/local/cuda-13.1"));
  EXPECT_EQ(spec.cwd, s.source_dir);
  // The PEP 517 driver runs from the file the build wrote beside the source, its package
  // beside it.
  const std::string driver =
      (fs::path(s.source_dir).parent_path() / "tailor-build-wheel.py").string();
  EXPECT_NE(std::find(spec.argv.begin(), spec.argv.end(), driver), spec.argv.end());
  EXPECT_NE(test::slurp_text(driver).find("from tailor_driver.backend import main"),
            std::string::npos);
  EXPECT_NE(test::slurp_text(
                (fs::path(s.source_dir).parent_path() / "tailor_driver" / "backend.py").string())
                .find("backend.build_wheel(out)"),
            std::string::npos);
  ASSERT_EQ(display.events.size(), 2u);
  EXPECT_EQ(display.events[1], "end build the generic wheel (PEP 517) ok");
  EXPECT_NE(test::slurp_text(s.result.report.log_path).find("Successfully built demo-ops"),
            std::string::npos);
}

TEST_F(ExtensionSteps, RunBuildRunsItsStepsAtTheFixedWorkPath) {
  auto c = context();
  resolve_and_prepare(c);
  std::string asked_real, asked_fixed;
  c.fixed_path = [&](const std::string& real, const std::string& fixed,
                     std::optional<workpath::FixedPathRoute> forced) {
    asked_real = real;
    asked_fixed = fixed;
    EXPECT_EQ(forced, std::nullopt);
    workpath::FixedPathChoice choice;
    choice.path =
        workpath::FixedPath{real, fixed, workpath::FixedPathRoute::bwrap, "/usr/bin/bwrap"};
    choice.refused.emplace_back(workpath::FixedPathRoute::own_namespace, "refused here");
    return choice;
  };
  runner.handler = [&](const CommandSpec&) -> std::optional<CommandResult> {
    write(fs::path(s.request.out_dir) / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl",
          "not really a wheel");
    return ran(0, "Successfully built demo-ops\n");
  };
  ASSERT_EQ(run_build(o, c, s), std::nullopt);
  EXPECT_EQ(asked_real, s.work_dir);
  EXPECT_EQ(asked_fixed, workpath::fixed_work_path(s.package));
  ASSERT_EQ(runner.specs.size(), 1u);
  const CommandSpec& spec = runner.specs[0];
  ASSERT_GE(spec.argv.size(), 12u);
  EXPECT_EQ(spec.argv[0], "/usr/bin/bwrap");
  EXPECT_EQ(spec.argv[8], asked_fixed);  // --bind REAL FIXED
  EXPECT_EQ(spec.argv[7], s.work_dir);
  // Past the "--", no argument names the real work folder any more.
  auto dashdash = std::find(spec.argv.begin(), spec.argv.end(), "--");
  ASSERT_NE(dashdash, spec.argv.end());
  for (auto it = dashdash; it != spec.argv.end(); ++it)
    EXPECT_EQ(it->find(s.work_dir), std::string::npos) << *it;
  EXPECT_EQ(s.result.report.work_path, asked_fixed);
  EXPECT_EQ(s.result.report.work_path_route, "bwrap");
  EXPECT_EQ(s.result.report.work_path_tried, "namespace: refused here");
  EXPECT_EQ(s.result.report.work_path_note, "");
}

TEST_F(ExtensionSteps, RunBuildWithoutAFixedPathSaysWhy) {
  auto c = context();
  resolve_and_prepare(c);
  c.fixed_path = [](const std::string&, const std::string&,
                    std::optional<workpath::FixedPathRoute>) {
    workpath::FixedPathChoice choice;
    choice.refused.emplace_back(workpath::FixedPathRoute::bwrap,
                                "bwrap: setting up uid map: Permission denied");
    return choice;
  };
  runner.handler = [&](const CommandSpec&) -> std::optional<CommandResult> {
    write(fs::path(s.request.out_dir) / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl",
          "not really a wheel");
    return ran(0, "Successfully built demo-ops\n");
  };
  ASSERT_EQ(run_build(o, c, s), std::nullopt);
  ASSERT_EQ(runner.specs.size(), 1u);
  EXPECT_NE(runner.specs[0].argv[0], "/usr/bin/bwrap");
  EXPECT_EQ(s.result.report.work_path, s.work_dir);
  EXPECT_NE(s.result.report.work_path_note.find("bwrap: setting up uid map: Permission denied"),
            std::string::npos);
  EXPECT_NE(s.result.report.work_path_note.find("fix: "), std::string::npos);
  EXPECT_EQ(s.result.report.work_path_route, "none");
}

// The folder route: the steps run at the fixed folder itself, where the work folder's
// contents are for the run, and are back in the work folder afterwards.
TEST_F(ExtensionSteps, RunBuildOnTheFolderRouteBuildsInTheFixedFolder) {
  auto c = context();
  resolve_and_prepare(c);
  test::TempDir root("steps_fixed_root");
  const std::string fixed = (root.path / "demo").string();
  c.fixed_path = [&](const std::string& real, const std::string&,
                     std::optional<workpath::FixedPathRoute> forced) {
    EXPECT_EQ(forced, workpath::FixedPathRoute::folder);  // the switch reached the choice
    workpath::FixedPathChoice choice;
    choice.forced = "TAILOR_FIXED_PATH_ROUTE=folder";
    choice.path = workpath::FixedPath{real, fixed, workpath::FixedPathRoute::folder, ""};
    return choice;
  };
  c.environment["TAILOR_FIXED_PATH_ROUTE"] = "folder";
  bool source_at_fixed = false, source_in_work = true;
  runner.handler = [&](const CommandSpec& spec) -> std::optional<CommandResult> {
    source_at_fixed = spec.cwd && fs::is_directory(*spec.cwd) && spec.cwd->starts_with(fixed);
    source_in_work = fs::exists(s.source_dir);
    // The build writes its wheel where it sees the work folder: at the fixed folder.
    write(fs::path(fixed) / fs::relative(s.request.out_dir, s.work_dir) /
              "demo_ops-0.1-cp311-cp311-linux_x86_64.whl",
          "not really a wheel");
    return ran(0, "Successfully built demo-ops\n");
  };
  ASSERT_EQ(run_build(o, c, s), std::nullopt);
  EXPECT_TRUE(source_at_fixed);
  EXPECT_FALSE(source_in_work);
  EXPECT_TRUE(fs::exists(s.source_dir));  // back
  EXPECT_FALSE(fs::exists(fs::path(fixed) / "src"));
  EXPECT_EQ(s.result.report.work_path, fixed);
  EXPECT_EQ(s.result.report.work_path_route, "folder");
}

// --sandbox needs tailor's own namespace, and no network for sccache's client to reach
// its server: both refused before anything runs, with what to do.
TEST_F(ExtensionSteps, RunBuildSandboxedSaysWhatItCannotDo) {
  o.sandbox = true;  // the plan's execution policy takes it
  auto c = context();
  resolve_and_prepare(c);
  c.fixed_path = [](const std::string&, const std::string&,
                    std::optional<workpath::FixedPathRoute> forced) {
    EXPECT_EQ(forced, workpath::FixedPathRoute::own_namespace);
    workpath::FixedPathChoice choice;
    choice.refused.emplace_back(workpath::FixedPathRoute::own_namespace,
                                "unshare: permission denied");
    return choice;
  };
  auto stopped = run_build(o, c, s);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->status, builder::BuildStatus::preflight_failed);
  EXPECT_EQ(stopped->message,
            "--sandbox: no private namespace here (namespace: unshare: permission denied)");
  EXPECT_TRUE(runner.specs.empty());
  s.build_plan.cache.tool = CacheTool::sccache;
  stopped = run_build(o, c, s);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->status, builder::BuildStatus::bad_input);
  EXPECT_NE(stopped->message.find("--sandbox with sccache"), std::string::npos);
  c.environment["TAILOR_FIXED_PATH_ROUTE"] = "folder";
  s.build_plan.cache.tool = CacheTool::none;
  stopped = run_build(o, c, s);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->message,
            "--sandbox: only tailor's own namespace makes one, not TAILOR_FIXED_PATH_ROUTE=folder");
}

TEST_F(ExtensionSteps, RunBuildWithAnUnknownRouteSwitchIsBadInput) {
  auto c = context();
  resolve_and_prepare(c);
  c.environment["TAILOR_FIXED_PATH_ROUTE"] = "sideways";
  auto stopped = run_build(o, c, s);
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->status, builder::BuildStatus::bad_input);
  EXPECT_NE(stopped->message.find("TAILOR_FIXED_PATH_ROUTE=sideways"), std::string::npos);
}

// A signal that came before the build step started (during the preflight's test link,
// say): the runner starts nothing, and the step says "interrupted" (it read the last of
// no steps and crashed before).
TEST_F(ExtensionSteps, RunBuildInterruptedBeforeItsStepStartsSaysInterrupted) {
  auto c = context();
  resolve_and_prepare(c);
  install_interrupt_handlers();
  ::raise(SIGTERM);
  ASSERT_NE(interrupt_signal(), 0);
  auto st = run_build(o, c, s);
  reset_interrupt_for_testing();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->message, "interrupted");
}

TEST_F(ExtensionSteps, RunBuildDiagnosesAFailedStep) {
  auto c = context();
  resolve_and_prepare(c);
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(1,
               "[1/2] nvcc -c ops.cu -o ops.o\nFAILED: ops.o\nops.cu(3): error: identifier \"x\" "
               "is undefined\n");
  };
  auto st = run_build(o, c, s);
  ASSERT_TRUE(st);
  EXPECT_EQ(*st, (builder::StepStop{builder::BuildStatus::build_failed,
                                    "step 'build the generic wheel (PEP 517)' failed (exit 1)"}));
  ASSERT_TRUE(s.result.error_block);
  EXPECT_NE(s.result.error_block->lines.front().find("FAILED: ops.o"), std::string::npos);
}

TEST_F(ExtensionSteps, VerifyWheelStopsWhenNoWheelWasLeft) {
  auto c = context();
  ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
  fs::create_directories(s.request.out_dir);
  EXPECT_EQ(verify_wheel(o, c, s),
            (builder::StepStop{builder::BuildStatus::build_failed,
                               "the build finished but left no wheel in " + s.request.out_dir}));
}

TEST_F(ExtensionSteps, VerifyWheelStopsOnAWheelThatIsNotAZip) {
  auto c = context();
  ASSERT_EQ(resolve_inputs(o, c, s), std::nullopt);
  write(fs::path(s.request.out_dir) / "demo_ops-0.1-py3-none-any.whl", "not a zip");
  auto st = verify_wheel(o, c, s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->status, builder::BuildStatus::verify_failed);
  EXPECT_EQ(s.result.report.wheel, "demo_ops-0.1-py3-none-any.whl");
  EXPECT_EQ(s.result.report.size, 9u);
  EXPECT_EQ(s.result.report.sha256.size(), 64u);
}

TEST_F(ExtensionSteps, ImportCheckRunsInACleanVenvAndReportsTheFailure) {
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  s.wheel = (root / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string();
  runner.handler = [](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 2 && spec.argv[2].rfind("import torch, ", 0) == 0)
      return ran(
          1,
          "Traceback (most recent call last):\nModuleNotFoundError: No module named 'demo_ops'\n");
    return ran(0, "/venv/lib/python3.11/site-packages\n");
  };
  EXPECT_EQ(import_check(o, c, s),
            (builder::StepStop{builder::BuildStatus::check_failed,
                               "the built wheel does not import (demo_ops)"}));
  EXPECT_NE(s.result.check_output.find("ModuleNotFoundError"), std::string::npos);
  ASSERT_FALSE(s.result.report.checks.empty());
  EXPECT_EQ(s.result.report.checks.back().name, "import");
  EXPECT_EQ(s.result.report.checks.back().status, outputs::CheckStatus::failed);
  ASSERT_EQ(runner.specs.size(), 5u);  // venv, site folders, .pth, pip install, import
  EXPECT_EQ(runner.specs[0].argv[1], "-m");
  EXPECT_EQ(runner.specs[0].argv[2], "venv");
  for (const auto& spec : runner.specs) {
    EXPECT_EQ(spec.env.at("PYTHONPATH"), std::nullopt);
    EXPECT_EQ(spec.env.at("PYTHONNOUSERSITE"), std::optional<std::string>("1"));
  }
  EXPECT_EQ(runner.specs[4].cwd, s.venv);  // the source tree cannot shadow the wheel
  EXPECT_NE(test::slurp_text(s.result.report.log_path).find("### tailor check: "),
            std::string::npos);
}

TEST(MissingModule, TakesTheLastModuleNotFoundErrorOfTheOutput) {
  EXPECT_EQ(missing_module_in("Traceback\nModuleNotFoundError: No module named 'transformers'\n"),
            std::optional<std::string>("transformers"));
  EXPECT_EQ(
      missing_module_in(
          "ModuleNotFoundError: No module named 'a'\nModuleNotFoundError: No module named 'b.c'\n"),
      std::optional<std::string>("b.c"));
  EXPECT_EQ(missing_module_in("ImportError: libcudart.so.13: cannot open shared object file"),
            std::nullopt);
  EXPECT_EQ(missing_module_in("ModuleNotFoundError: No module named '"), std::nullopt);
}

/// The import fails for want of `missing`; the direct load of the compiled modules answers
/// with `native_exit` and `native_out`.
static std::function<std::optional<CommandResult>(const CommandSpec&)> import_needs(
    std::string missing, int native_exit, std::string native_out) {
  return [=](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 2 && (spec.argv[2].rfind("import torch, ", 0) == 0 ||
                                 spec.argv[2].rfind("import demo_ops", 0) == 0))
      return ran(1, "Traceback (most recent call last):\nModuleNotFoundError: No module named '" +
                        missing + "'\n");
    if (spec.argv.size() > 3 && spec.argv[2].find("spec_from_file_location") != std::string::npos)
      return ran(native_exit, native_out);
    return ran(0, "/venv/lib/python3.11/site-packages\n");
  };
}

TEST_F(ExtensionSteps, AMissingRunTimeDependencySkipsTheImportAndLoadsTheCompiledModules) {
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  s.wheel = (root / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string();
  runner.handler =
      import_needs("transformers.generation", 0, "loaded demo_ops._C\nloaded demo_ops_cuda\n");
  EXPECT_EQ(import_check(o, c, s), std::nullopt);
  EXPECT_EQ(s.missing_dependency, "transformers.generation");
  const auto& checks = s.result.report.checks;
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].name, "import");
  EXPECT_EQ(checks[0].status, outputs::CheckStatus::skipped);
  EXPECT_NE(checks[0].detail.find("needs transformers.generation"), std::string::npos)
      << checks[0].detail;
  EXPECT_EQ(checks[1].name, "native-import");
  EXPECT_EQ(checks[1].status, outputs::CheckStatus::passed);
  EXPECT_EQ(checks[1].detail, "2 compiled modules load: demo_ops._C, demo_ops_cuda");
  ASSERT_EQ(runner.specs.size(), 6u);
  EXPECT_EQ(runner.specs[5].argv[3], s.wheel);
  EXPECT_EQ(runner.specs[5].argv[4], "transformers.generation");
  EXPECT_EQ(runner.specs[5].argv.size(), 5u);  // not one the recipe knows: Requires-Dist decides

  // The GPU smoke test that fails for the same module is skipped, not failed.
  host.gpus.push_back({0, "NVIDIA A100", cuda::ComputeCapability{8, 0}, 0, ""});
  s.host.gpus = host.gpus;
  s.build_plan.smoke_test = "import demo_ops, demo_ops_cuda";
  runner.handler = import_needs("transformers.generation", 0, "");
  o.tests = ExtensionBuildOptions::Tests::never;
  EXPECT_EQ(run_package_tests(o, c, s), std::nullopt);
  EXPECT_EQ(s.result.report.checks.back().name, "gpu-smoke");
  EXPECT_EQ(s.result.report.checks.back().status, outputs::CheckStatus::skipped);
}

TEST_F(ExtensionSteps, AnUndeclaredDependencyTheRecipeKnowsIsHandedToTheDirectLoad) {
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  s.wheel = (root / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string();
  plan::ExtensionRecipe recipe = *s.recipe;
  recipe.name = "torch-sparse";
  recipe.undeclared_requires = {"torch_scatter"};
  s.recipe = &recipe;
  runner.handler = import_needs("torch_scatter", 0,
                                "loaded torch_sparse._convert_cuda (torch operator library)\n");
  EXPECT_EQ(import_check(o, c, s), std::nullopt);
  ASSERT_EQ(runner.specs.size(), 6u);
  const auto& argv = runner.specs[5].argv;
  ASSERT_EQ(argv.size(), 6u);
  EXPECT_EQ(argv[4], "torch_scatter");
  EXPECT_EQ(argv[5], "--recipe-knows");  // so the script does not ask Requires-Dist for it
  const auto& checks = s.result.report.checks;
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].status, outputs::CheckStatus::skipped);
  EXPECT_NE(checks[0].detail.find("that torch-sparse does not declare in its metadata"),
            std::string::npos)
      << checks[0].detail;
  EXPECT_EQ(checks[1].status, outputs::CheckStatus::passed);
}

TEST_F(ExtensionSteps, TheWheelsOwnMissingModuleIsABrokenBuildNotAMissingDependency) {
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  s.build_plan.smoke_test = "import demo_ops, selective_scan_cuda";
  for (std::string own : {"demo_ops_cuda", "selective_scan_cuda"}) {
    s.result.report.checks.clear();
    runner.specs.clear();
    runner.handler = import_needs(own, 0, "");
    EXPECT_EQ(import_check(o, c, s),
              (builder::StepStop{builder::BuildStatus::check_failed,
                                 "the built wheel does not import (demo_ops)"}))
        << own;
    EXPECT_EQ(runner.specs.size(), 5u) << own;  // no direct load was tried
  }
  // Not declared in the wheel's Requires-Dist, or a compiled module that does not load.
  for (int native_exit : {4, 3, 1}) {
    s.result.report.checks.clear();
    runner.handler =
        import_needs("somethingelse", native_exit, "somethingelse is not a declared dependency\n");
    EXPECT_EQ(import_check(o, c, s),
              (builder::StepStop{builder::BuildStatus::check_failed,
                                 "the built wheel does not import (demo_ops)"}));
    EXPECT_NE(s.result.check_output.find("not a declared dependency"), std::string::npos);
    EXPECT_TRUE(s.missing_dependency.empty());
  }
}

TEST_F(ExtensionSteps, ImportCheckPassesWhenEveryCommandDoes) {
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> { return ran(0); };
  EXPECT_EQ(import_check(o, c, s), std::nullopt);
  EXPECT_EQ(s.result.report.checks.back().detail, "import demo_ops in a fresh venv");
  EXPECT_EQ(s.venv_python, (fs::path(s.work_dir) / "venv" / "bin" / "python").string());
}

TEST_F(ExtensionSteps, PackageTestsRunAsScriptsWithoutPytestAndTheSmokeTestSkipsWithoutGpu) {
  o.tests = ExtensionBuildOptions::Tests::always;
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  runner.handler = [](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 2 && spec.argv[2] == "import pytest")
      return ran(1, "ModuleNotFoundError: pytest\n");
    return ran(0, "ok\n1 passed\n");
  };
  EXPECT_EQ(run_package_tests(o, c, s), std::nullopt);
  const auto& checks = s.result.report.checks;
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].name, "cpu-tests");
  EXPECT_EQ(checks[0].status, outputs::CheckStatus::passed);
  EXPECT_EQ(checks[0].detail, "1 passed");
  EXPECT_EQ(checks[1].name, "gpu-smoke");
  EXPECT_EQ(checks[1].status, outputs::CheckStatus::skipped);
  EXPECT_EQ(checks[1].detail, "no GPU");
  ASSERT_EQ(runner.specs.size(), 2u);  // the pytest probe, then the one test file as a script
  EXPECT_EQ(runner.specs[1].argv.back(),
            (fs::path(s.source_dir) / "tests" / "test_ops.py").string());
}

TEST_F(ExtensionSteps, AFailingSmokeTestOnAGpuStops) {
  host.gpus.push_back({0, "NVIDIA A100", cuda::ComputeCapability{8, 0}, 0, ""});
  o.tests = ExtensionBuildOptions::Tests::never;
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  s.build_plan.smoke_test = "import demo_ops";
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(1, "CUDA error: no kernel image\n");
  };
  EXPECT_EQ(run_package_tests(o, c, s),
            (builder::StepStop{builder::BuildStatus::check_failed, "the GPU smoke test failed"}));
  EXPECT_EQ(s.result.report.checks.back().name, "gpu-smoke");
  EXPECT_NE(s.result.check_output.find("no kernel image"), std::string::npos);
}

TEST_F(ExtensionSteps, PublishOutputsWritesWheelReportAndLogTogether) {
  write(root / "wh" / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl", "wheel bytes");
  write(root / "build.log", "the log\n");
  s.wheel = (root / "wh" / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string();
  s.result.report.wheel = "demo_ops-0.1-cp311-cp311-linux_x86_64.whl";
  s.result.report.log_path = (root / "build.log").string();
  s.started = std::chrono::steady_clock::now();
  auto c = context();
  EXPECT_EQ(publish_outputs(o, c, s), std::nullopt);
  EXPECT_EQ(s.result.status, builder::BuildStatus::ok);
  EXPECT_TRUE(s.result.report.ok);
  EXPECT_EQ(test::slurp_text((root / "out" / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string()),
            "wheel bytes");
  EXPECT_EQ(test::slurp_text(
                (root / "out" / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl.build.log").string()),
            "the log\n");
  EXPECT_NE(test::slurp_text(
                (root / "out" / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl.report.json").string())
                .find("\"ok\": true"),
            std::string::npos);
  EXPECT_EQ(s.result.report.log_path,
            (root / "out" / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl.build.log").string());
}

TEST_F(ExtensionSteps, BuildExtensionStopsAtTheFirstFailingStepWithItsStatus) {
  host.cuda_toolkits.clear();
  auto c = context();
  auto res = build_extension(o, c);
  EXPECT_EQ(res.status, builder::BuildStatus::preflight_failed);
  EXPECT_FALSE(res.report.ok);
  EXPECT_FALSE(fs::exists(root / "out"));
  EXPECT_TRUE(runner.calls.empty() ||
              runner.calls.front().front() != "/venv/bin/python");  // no build ran
}

TEST_F(ExtensionSteps, RunBuildServesAJobserverWhenNinjaIsAClient) {
  // The plan's execution policy takes the host's ninja and the budget.
  host.tools.push_back({"ninja", "/usr/bin/ninja", "1.13.2", true});
  o.memory_budget = uint64_t{6} << 30;
  auto c = context();
  resolve_and_prepare(c);
  bool fifo_seen = false;
  runner.handler = [&](const CommandSpec&) -> std::optional<CommandResult> {
    fifo_seen = fs::is_fifo(fs::path(s.work_dir) / "jobserver.fifo");
    write(fs::path(s.request.out_dir) / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl",
          "not really a wheel");
    return ran(0, "Successfully built demo-ops\n");
  };
  ASSERT_EQ(run_build(o, c, s), std::nullopt);
  ASSERT_EQ(runner.specs.size(), 1u);
  const CommandSpec& spec = runner.specs[0];
  ASSERT_TRUE(spec.env.count("MAKEFLAGS"));
  EXPECT_EQ(spec.env.at("MAKEFLAGS").value_or(""),
            fmt::format(" -j{} --jobserver-auth=fifo:{}", std::max(1, s.host.cpu.build_cores()),
                        (fs::path(s.work_dir) / "jobserver.fifo").string()));
  ASSERT_TRUE(spec.env.count("MAX_JOBS"));
  EXPECT_EQ(spec.env.at("MAX_JOBS"), std::nullopt)
      << "MAX_JOBS unset: torch would give ninja -j and no jobserver";
  EXPECT_TRUE(fifo_seen) << "the fifo exists while the build runs";
  EXPECT_FALSE(fs::exists(fs::path(s.work_dir) / "jobserver.fifo")) << "and is gone after";
  ASSERT_TRUE(s.result.report.governor);
  EXPECT_EQ(s.result.report.governor->mode, "governor");
  EXPECT_EQ(s.result.report.governor->budget, o.memory_budget);
  EXPECT_GE(s.result.report.governor->samples, 1u);
}

TEST_F(ExtensionSteps, RunBuildKeepsTheStaticCountWithAnOldNinjaOrJobs) {
  const auto tools = host.tools;
  for (bool with_jobs : {false, true}) {
    host.tools = tools;
    host.tools.push_back({"ninja", "/usr/bin/ninja", with_jobs ? "1.13.2" : "1.11.1", false});
    if (with_jobs) o.jobs = 1;
    auto c = context();
    resolve_and_prepare(c);
    runner.specs.clear();
    runner.handler = [&](const CommandSpec&) -> std::optional<CommandResult> {
      write(fs::path(s.request.out_dir) / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl",
            "not really a wheel");
      return ran(0, "Successfully built demo-ops\n");
    };
    ASSERT_EQ(run_build(o, c, s), std::nullopt);
    ASSERT_EQ(runner.specs.size(), 1u);
    EXPECT_FALSE(runner.specs[0].env.count("MAKEFLAGS"));
    ASSERT_TRUE(runner.specs[0].env.count("MAX_JOBS"));
    EXPECT_TRUE(runner.specs[0].env.at("MAX_JOBS").has_value());
    ASSERT_TRUE(s.result.report.governor);
    EXPECT_EQ(s.result.report.governor->mode, "static");
    EXPECT_NE(s.result.report.governor->reason.find(with_jobs ? "--jobs 1" : "ninja 1.11.1"),
              std::string::npos)
        << s.result.report.governor->reason;
  }
}

TEST_F(ExtensionSteps, OnAGpuTheSmokeTestRunsInTheImportTestsInterpreter) {
  host.gpus.push_back({0, "NVIDIA H100", cuda::ComputeCapability{9, 0}, 0, ""});
  o.tests = ExtensionBuildOptions::Tests::never;
  auto c = context();
  resolve_and_prepare(c);
  s.result.report.log_path = (root / "build.log").string();
  s.wheel = (root / "demo_ops-0.1-cp311-cp311-linux_x86_64.whl").string();
  s.build_plan.smoke_test = "import demo_ops_cuda";
  // The import passes, the smoke test after the marker fails: the import check passes and
  // the smoke check fails with the output, with no second interpreter.
  runner.handler = [](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 2 && spec.argv[2].rfind("import torch, ", 0) == 0) {
      EXPECT_NE(spec.argv[2].find("\nimport demo_ops_cuda"), std::string::npos) << spec.argv[2];
      return ran(1,
                 "/venv/demo_ops/__init__.py\ntailor: import passed; the smoke test follows\nCUDA "
                 "error: no kernel image\n");
    }
    return ran(0);
  };
  EXPECT_EQ(import_check(o, c, s), std::nullopt);
  EXPECT_EQ(s.result.report.checks.back().name, "import");
  EXPECT_EQ(s.result.report.checks.back().status, outputs::CheckStatus::passed);
  const size_t before = runner.specs.size();
  EXPECT_EQ(run_package_tests(o, c, s),
            (builder::StepStop{builder::BuildStatus::check_failed, "the GPU smoke test failed"}));
  EXPECT_EQ(runner.specs.size(), before);
  EXPECT_EQ(s.result.report.checks.back().name, "gpu-smoke");
  EXPECT_NE(s.result.check_output.find("no kernel image"), std::string::npos);

  // A failure before the marker is the import's own, and stops there.
  s.smoke_run.reset();
  s.result.report.checks.clear();
  runner.handler = [](const CommandSpec& spec) -> std::optional<CommandResult> {
    if (spec.argv.size() > 2 && spec.argv[2].rfind("import torch, ", 0) == 0)
      return ran(1, "ImportError: undefined symbol: _ZN3c10\n");
    return ran(0);
  };
  EXPECT_EQ(import_check(o, c, s),
            (builder::StepStop{builder::BuildStatus::check_failed,
                               "the built wheel does not import (demo_ops)"}));
  EXPECT_FALSE(s.smoke_run.has_value());

  // Both pass: one passed smoke check, still no second interpreter.
  s.result.report.checks.clear();
  runner.handler = [](const CommandSpec&) -> std::optional<CommandResult> {
    return ran(0, "x\ntailor: import passed; the smoke test follows\n");
  };
  EXPECT_EQ(import_check(o, c, s), std::nullopt);
  const size_t after_import = runner.specs.size();
  EXPECT_EQ(run_package_tests(o, c, s), std::nullopt);
  EXPECT_EQ(runner.specs.size(), after_import);
  EXPECT_EQ(s.result.report.checks.back().name, "gpu-smoke");
  EXPECT_EQ(s.result.report.checks.back().status, outputs::CheckStatus::passed);
}
