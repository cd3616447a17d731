#include "builder/build_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::builder;
using namespace std::chrono_literals;

namespace {
RealDiskInterface real_disk;  // these tests read and write real files

/// Plays back scripted output per program and records what it was asked to run.
class ScriptedRunner : public CommandRunner {
 public:
  struct Script {
    std::vector<std::string> lines;
    int exit_code = 0;
    bool started = true;
  };
  std::map<std::string, Script> scripts;
  std::vector<CommandSpec> seen;
  std::chrono::steady_clock::time_point* clock = nullptr;

  CommandResult run(const CommandSpec& spec) override {
    seen.push_back(spec);
    CommandResult r;
    auto it = scripts.find(spec.argv.at(0));
    if (it == scripts.end() || !it->second.started) return r;
    for (const auto& l : it->second.lines) {
      if (clock) *clock += 10s;
      if (spec.on_line) spec.on_line(l);
    }
    r.started = true;
    r.exit_code = it->second.exit_code;
    return r;
  }
};

class RecordingDisplay : public ProgressDisplay {
 public:
  std::vector<std::string> events;
  std::vector<BuildProgress> updates;
  void step_started(const tailor::plan::Step& s, size_t i, size_t n) override {
    events.push_back("start " + s.title + " " + std::to_string(i + 1) + "/" + std::to_string(n));
  }
  void progress(const BuildProgress& p) override { updates.push_back(p); }
  void step_finished(const StepOutcome& o) override {
    events.push_back("end " + o.title + (o.ok() ? " ok" : " failed"));
  }
};

std::string log_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tailor_runner_" + name + std::to_string(::getpid()) + ".log"))
      .string();
}
}  // namespace

TEST(BuildRunner, RunsStepsWithEnvLogsAndProgress) {
  auto now = std::chrono::steady_clock::time_point{};
  ScriptedRunner runner;
  runner.clock = &now;
  runner.scripts["python3"] = {
      {"running build_ext", "[1/3] nvcc -c /s/a.cu -o a.o", "[2/3] nvcc -c /s/b.cu -o b.o",
       "[3/3] c++ -shared a.o b.o -o _C.so", "Successfully built x"},
      0};
  RecordingDisplay display;
  std::string log = log_file("ok");
  BuildRunner br(runner, display, real_disk, log, [&] { return now; });
  tailor::plan::Step step;
  step.title = "pip wheel";
  step.argv = {"python3", "-m", "pip", "wheel", "."};
  step.cwd = "/src";
  step.env = {{"TORCH_CUDA_ARCH_LIST", "7.5"}, {"MAX_JOBS", "2"}};
  step.unset_env = {"CUDA_VISIBLE_DEVICES"};
  auto out = br.run({step});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(out->ok());
  ASSERT_EQ(runner.seen.size(), 1u);
  const CommandSpec& spec = runner.seen[0];
  EXPECT_EQ(spec.env.at("TORCH_CUDA_ARCH_LIST"), std::optional<std::string>("7.5"));
  EXPECT_FALSE(spec.env.at("CUDA_VISIBLE_DEVICES").has_value());
  EXPECT_EQ(spec.cwd, std::optional<std::string>("/src"));
  EXPECT_FALSE(spec.keep_output);
  EXPECT_EQ(display.events, (std::vector<std::string>{"start pip wheel 1/1", "end pip wheel ok"}));
  ASSERT_EQ(display.updates.size(), 3u);
  EXPECT_EQ(display.updates[1].finished_file, "b.cu");
  // [2/3] arrives after 30 s of fake time: two of three edges done, 15 s to go.
  ASSERT_TRUE(display.updates[1].eta);
  EXPECT_EQ(*display.updates[1].eta, 15s);
  std::string text = test::slurp_text(log);
  EXPECT_NE(text.find("[2/3] nvcc -c /s/b.cu -o b.o\n"), std::string::npos);
  EXPECT_NE(text.find("TORCH_CUDA_ARCH_LIST=7.5"), std::string::npos);
  EXPECT_NE(text.find("unset CUDA_VISIBLE_DEVICES"), std::string::npos);
  std::filesystem::remove(log);
}

TEST(BuildRunner, StopsAtTheFirstFailure) {
  ScriptedRunner runner;
  runner.scripts["cmake"] = {{"-- Configuring done", "error: something"}, 1};
  runner.scripts["python3"] = {{"never"}, 0};
  RecordingDisplay display;
  std::string log = log_file("fail");
  BuildRunner br(runner, display, real_disk, log);
  auto out = br.run({tailor::plan::Step{"configure", {"cmake", "-S", "."}, "", {}, {}, 60s},
                     tailor::plan::Step{"pip wheel", {"python3"}, "", {}, {}, 60s}});
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->ok());
  ASSERT_EQ(out->steps.size(), 1u);
  EXPECT_EQ(out->steps[0].exit_code, 1);
  EXPECT_EQ(runner.seen.size(), 1u);
  EXPECT_NE(test::slurp_text(log).find("FAILED: exit 1"), std::string::npos);
  std::filesystem::remove(log);
}

TEST(BuildRunner, MissingProgramIsAFailedStepNotAnError) {
  ScriptedRunner runner;
  RecordingDisplay display;
  std::string log = log_file("missing");
  BuildRunner br(runner, display, real_disk, log);
  auto out = br.run({tailor::plan::Step{"x", {"no-such-program"}, "", {}, {}, 60s}});
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->ok());
  EXPECT_FALSE(out->steps[0].started);
  EXPECT_NE(test::slurp_text(log).find("could not start no-such-program"), std::string::npos);
  std::filesystem::remove(log);
}

TEST(BuildRunner, UnwritableLogIsAnError) {
  ScriptedRunner runner;
  RecordingDisplay display;
  BuildRunner br(runner, display, real_disk, "/nonexistent-dir/x/build.log");
  auto out = br.run({});
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("/nonexistent-dir/x/build.log"), std::string::npos);
}

TEST(BuildRunner, RealProcessOutputReachesTheLog) {
  SystemCommandRunner runner;
  RecordingDisplay display;
  std::string log = log_file("real");
  BuildRunner br(runner, display, real_disk, log);
  tailor::plan::Step step{
      "sh", {"sh", "-c", "echo \"[1/2] cc -c $GREETING.c\"; echo oops >&2; exit 3"},
      "",   {{"GREETING", "hello"}},
      {},   30s};
  auto out = br.run({step});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->steps[0].exit_code, 3);
  ASSERT_EQ(display.updates.size(), 1u);
  EXPECT_EQ(display.updates[0].finished_file, "hello.c");
  std::string text = test::slurp_text(log);
  EXPECT_NE(text.find("oops"), std::string::npos);
  std::filesystem::remove(log);
}

/// The build driver as a step: writes `events` to the descriptor it is handed, then prints
/// `lines`, as say.py does (the event before its line).
class EventWritingRunner : public CommandRunner {
 public:
  std::vector<std::pair<std::string, std::string>> script;  ///< (event, then line)
  CommandResult run(const CommandSpec& spec) override {
    CommandResult r;
    auto fd = spec.env.find(k_events_fd_variable);
    EXPECT_TRUE(fd != spec.env.end() && fd->second);
    for (const auto& [event, line] : script) {
      if (!event.empty()) {
        const std::string text = event + "\n";
        EXPECT_EQ(::write(std::stoi(*fd->second), text.data(), text.size()),
                  static_cast<ssize_t>(text.size()));
      }
      if (spec.on_line && !line.empty()) spec.on_line(line);
    }
    r.started = true;
    r.exit_code = 0;
    return r;
  }
};

TEST(BuildRunner, TheDriversEventsAreReadAsTheyComeAndNinjaOnce) {
  EventWritingRunner runner;
  runner.script = {
      {R"({"v":1,"kind":"modules","modules":3,"units":6,"cuda_units":4,"split_compile":0})",
       "tailor: modules at once: 3 modules, 6 units (4 CUDA), 3 at a time"},
      {R"({"v":1,"kind":"choice","text":"setup.py:3: MAX_JOBS=1 set by the package"})", ""},
      {R"({"v":2,"kind":"choice","text":"another version"})", ""},
      {"", "[1/2] nvcc -c /s/a.cu -o a.o"},
      {"", "[2/2] nvcc -c /s/b.cu -o b.o"},
      {"", "[1/3] nvcc -c /s/c.cu -o c.o"},
      {R"({"v":1,"kind":"split","unit":"csrc/k.cu","k":4,"why":"measured"})", ""},
      // A printed line that looks like an event is only a line.
      {"", "tailor: package choice: setup.py:9: printed, not said"},
  };
  RecordingDisplay display;
  std::string log = log_file("events");
  BuildRunner br(runner, display, real_disk, log);
  auto out = br.run({tailor::plan::Step{"wheel", {"python3"}, "", {}, {}, 60s}});
  ASSERT_TRUE(out);
  const DriverFacts& d = out->facts.driver;
  EXPECT_EQ(d.modules, 3);
  EXPECT_EQ(d.units, 6);
  EXPECT_EQ(d.choices, (std::vector<std::string>{"setup.py:3: MAX_JOBS=1 set by the package"}));
  EXPECT_EQ(d.split_units, (std::map<std::string, int>{{"csrc/k.cu", 4}}));
  EXPECT_EQ(d.refused, 1u);
  EXPECT_EQ(d.first_refusal, "not an event of version 1");
  // Progress counts the package's units over every Ninja: the modules event came first.
  ASSERT_EQ(display.updates.size(), 3u);
  EXPECT_EQ(display.updates.back().done, 3);
  EXPECT_EQ(display.updates.back().total, 6);
  // Ninja's steps for resume: 2 + 3 over two invocations.
  EXPECT_EQ(out->facts.ninja_steps, std::optional<uint64_t>(5));
  std::filesystem::remove(log);
}

TEST(BuildRunner, TheRealDriverWritesItsEventsToTheDescriptorItInherits) {
  // The driver's own say.py in a real python3, through fork and exec, in two steps.
  SystemCommandRunner runner;
  RecordingDisplay display;
  std::string log = log_file("real_events");
  BuildRunner br(runner, display, real_disk, log);
  const std::string said =
      "import sys; sys.path.insert(0, sys.argv[1]); from tailor_driver import say; "
      "say.variants({'90': 'a'}); say.choice('setup.py:1: ' + sys.argv[2])";
  auto step = [&](const std::string& title) {
    return tailor::plan::Step{
        title, {"python3", "-B", "-c", said, std::string(TAILOR_SOURCE_DIR) + "/driver", title},
        "",    {},
        {},    60s};
  };
  auto out = br.run({step("one"), step("two")});
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->ok()) << test::slurp_text(log);
  EXPECT_EQ(out->facts.driver.variants, (std::map<std::string, std::string>{{"sm_90", "sm_90a"}}));
  EXPECT_EQ(out->facts.driver.choices,
            (std::vector<std::string>{"setup.py:1: one", "setup.py:1: two"}));
  EXPECT_EQ(out->facts.driver.refused, 0u);
  std::filesystem::remove(log);
}

TEST(BuildRunner, AFailedStepsLastLinesAreKeptWithTheLogsLineNumbers) {
  ScriptedRunner runner;
  runner.scripts["prep"] = {{"prepared"}, 0};
  std::vector<std::string> lines;
  for (int i = 0; i < 100010; ++i) lines.push_back("warning " + std::to_string(i));
  lines.push_back("FAILED: a.o");
  runner.scripts["cc"] = {lines, 1};
  RecordingDisplay display;
  std::string log = log_file("tail");
  BuildRunner br(runner, display, real_disk, log);
  auto out = br.run({tailor::plan::Step{"prep", {"prep"}, "", {}, {}, 60s},
                     tailor::plan::Step{"cc", {"cc"}, "", {}, {}, 60s}});
  ASSERT_TRUE(out);
  const LogTail& tail = out->facts.tail;
  // Bounded at 100,000 lines; the step's end line is the last.
  ASSERT_EQ(tail.lines.size(), 100000u);
  EXPECT_EQ(tail.lines[tail.lines.size() - 2], "FAILED: a.o");
  EXPECT_NE(tail.lines.back().find("### tailor step 2 FAILED: exit 1"), std::string::npos);
  // The log: step 1's header (2 lines), its line and end (2), step 2's header (2), then
  // 100,011 lines and the end: 100,018 lines, the tail its last 100,000.
  EXPECT_EQ(tail.first_line, 100019u - 100000u);
  std::ifstream in(log);
  std::string line;
  for (size_t n = 0; n < tail.first_line; ++n) std::getline(in, line);
  EXPECT_EQ(line, tail.lines.front());
  // The step's first 5,000 lines are kept as its head, from its header (log line 5).
  ASSERT_EQ(tail.head.size(), 5000u);
  EXPECT_EQ(tail.head_first_line, 5u);
  EXPECT_EQ(tail.head[2], "warning 0");
  EXPECT_EQ(tail.head.back(), "warning 4997");
  std::filesystem::remove(log);
  // A step whose output the tail holds whole keeps no head.
  ScriptedRunner small;
  small.scripts["cc"] = {{"a.cpp:1:1: error: x", "FAILED: a.o"}, 1};
  BuildRunner br2(small, display, real_disk, log);
  auto out2 = br2.run({tailor::plan::Step{"cc", {"cc"}, "", {}, {}, 60s}});
  ASSERT_TRUE(out2);
  EXPECT_TRUE(out2->facts.tail.head.empty());
  EXPECT_EQ(out2->facts.tail.first_line, 1u);
  std::filesystem::remove(log);
}

TEST(ProgressDisplays, PlainPrintsStepsAndDeciles) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  auto d = make_progress_display(DisplayStyle::plain, f);
  tailor::plan::Step step{"pip wheel", {"python3"}, "", {}, {}, 60s};
  d->step_started(step, 0, 2);
  BuildProgress p;
  p.total = 10;
  for (int i = 1; i <= 10; ++i) {
    p.done = i;
    p.percent = i * 10;
    d->progress(p);
    d->progress(p);  // repeated percent: no new line
  }
  StepOutcome o;
  o.title = "pip wheel";
  o.started = true;
  o.exit_code = 0;
  d->step_finished(o);
  std::fclose(f);
  std::string text(buf, len);
  free(buf);
  EXPECT_NE(text.find("==> [1/2] pip wheel\n"), std::string::npos);
  EXPECT_NE(text.find("[5/10]"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 12);
  EXPECT_EQ(text.find('\r'), std::string::npos);
}

TEST(ProgressDisplays, LiveRewritesOneLine) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  auto d = make_progress_display(DisplayStyle::live, f);
  tailor::plan::Step step{"pip wheel", {"python3"}, "", {}, {}, 60s};
  d->step_started(step, 0, 1);
  BuildProgress p;
  p.done = 1;
  p.total = 4;
  p.percent = 25;
  p.current_file = "a.cu";
  d->progress(p);
  std::fclose(f);
  std::string text(buf, len);
  free(buf);
  // One step: no "[1/1]" of its own beside Ninja's counter.
  EXPECT_NE(text.find("\r\033[Kpip wheel: [1/4]"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos);
}

TEST(RenderStepShell, QuotesWhatNeedsIt) {
  tailor::plan::Step s{
      "t", {"python3", "-m", "pip", "wheel", "a b"}, "/src dir", {{"X", "1;2"}}, {"Y"}, 60s};
  EXPECT_EQ(render_step_shell(s), "cd '/src dir' && unset Y; X='1;2' python3 -m pip wheel 'a b'");
}

namespace {

// A step stopped by a signal is "interrupted", never "failed" (issue 24: a Ctrl-C printed
// `failed after 4m00s (exit 1)` before `interrupted; nothing published`).
TEST(ProgressDisplays, AnInterruptedStepSaysInterruptedNotFailed) {
  for (auto style : {tailor::builder::DisplayStyle::plain, tailor::builder::DisplayStyle::live}) {
    char* buf = nullptr;
    size_t len = 0;
    std::FILE* f = open_memstream(&buf, &len);
    tailor::builder::HeartbeatOptions hb;
    hb.own_thread = false;
    auto d = tailor::builder::make_progress_display(style, f, hb);
    tailor::plan::Step st;
    st.title = "build";
    d->step_started(st, 0, 1);
    tailor::builder::StepOutcome o;
    o.title = "build";
    o.started = true;
    o.interrupted = true;
    o.exit_code = 1;
    o.duration = std::chrono::seconds(240);
    d->step_finished(o);
    d.reset();
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    EXPECT_NE(out.find("interrupted after 4m00s"), std::string::npos) << out;
    EXPECT_EQ(out.find("failed"), std::string::npos) << out;
    EXPECT_EQ(out.find("FAILED"), std::string::npos) << out;
  }
}

}  // namespace

TEST(PlanSteps, PlanEnvironmentOnlyForTheStepsThatUseIt) {
  tailor::plan::BuildPlan p;
  p.path_prepend = "/usr/local/cuda-13.0/bin";
  p.unset_env = {"CUDA_PATH"};
  p.steps.push_back({.title = "clone", .argv = {"git", "clone"}, .cwd = "/w"});
  p.steps.push_back({.title = "build",
                     .argv = {"python3", "setup.py"},
                     .env = {{"MAX_JOBS", "3"}},
                     .uses_plan_env = true});
  auto steps = tailor::builder::plan_steps(p, {{"MAX_JOBS", "8"}, {"SOURCE_DATE_EPOCH", "1"}},
                                           {{"PATH", "/usr/bin"}}, "/src");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].cwd, "/w");
  EXPECT_TRUE(steps[0].env.empty());
  EXPECT_TRUE(steps[0].unset_env.empty());
  EXPECT_EQ(steps[1].cwd, "/src");
  EXPECT_EQ(steps[1].env.at("MAX_JOBS"), "3");  // the step's own value wins over the plan's
  EXPECT_EQ(steps[1].env.at("SOURCE_DATE_EPOCH"), "1");
  EXPECT_EQ(steps[1].env.at("PATH"), "/usr/local/cuda-13.0/bin:/usr/bin");
  EXPECT_EQ(steps[1].unset_env, std::vector<std::string>{"CUDA_PATH"});
}
