#include "builder/build_progress.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "builder/build_runner.h"
#include "outputs/ninja_log.h"

using namespace tailor::builder;
using namespace std::chrono_literals;

TEST(NinjaStatus, ParsesCountsAndCommand) {
  auto s = parse_ninja_status(
      "[3/12] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c "
      "/src/csrc/rms_norm.cu -o rms_norm.o");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->done, 3);
  EXPECT_EQ(s->total, 12);
  EXPECT_EQ(current_file_from_command(s->command), "rms_norm.cu");
}

TEST(NinjaStatus, AcceptsPipIndentAndCarriageReturn) {
  auto s = parse_ninja_status(
      "  [1/4] c++ -MMD -MF bindings.o.d -c /x/csrc/bindings.cpp -o /x/bindings.o\r");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->done, 1);
  EXPECT_EQ(current_file_from_command(s->command), "bindings.cpp");
}

TEST(NinjaStatus, RejectsLookalikes) {
  EXPECT_FALSE(parse_ninja_status("[ 42%] Building CUDA object x.cu.o"));
  EXPECT_FALSE(parse_ninja_status("[5/3] more done than total"));
  EXPECT_FALSE(parse_ninja_status("[0/0] nothing"));
  EXPECT_FALSE(parse_ninja_status("[a/b] letters"));
  EXPECT_FALSE(parse_ninja_status("warning: [1/2] not at the start"));
  EXPECT_FALSE(parse_ninja_status(""));
}

TEST(CmakePercent, ParsesThePrefix) {
  EXPECT_EQ(parse_cmake_percent("[ 42%] Building CUDA object CMakeFiles/bnb.dir/csrc/ops.cu.o"),
            42);
  EXPECT_EQ(parse_cmake_percent("[100%] Linking CXX shared library libbnb.so"), 100);
  EXPECT_EQ(parse_cmake_percent("[  0%] Built target x"), 0);
  EXPECT_FALSE(parse_cmake_percent("[101%] nonsense"));
  EXPECT_FALSE(parse_cmake_percent("[3/10] ninja line"));
  EXPECT_EQ(
      current_file_from_command("[ 42%] Building CUDA object CMakeFiles/bnb.dir/csrc/ops.cu.o"),
      "ops.cu");
}

TEST(CurrentFile, FindsTheSourceArgument) {
  EXPECT_EQ(current_file_from_command("g++ -O2 -I/x -c '/a/k.cpp' -o k.o"), "k.cpp");
  EXPECT_EQ(current_file_from_command("nvcc -O2 -I/x /src/kernels/fwd.cu -o fwd.o"), "fwd.cu");
  EXPECT_EQ(current_file_from_command("g++ -shared a.o b.o -o _C.so"), "");
}

TEST(Eta, ExtrapolatesLinearly) {
  EXPECT_EQ(estimate_eta(0.25, 60s), 180s);
  EXPECT_EQ(estimate_eta(0.5, 10s), 10s);
  EXPECT_EQ(estimate_eta(1.0, 10s), 0s);
  EXPECT_FALSE(estimate_eta(0.0, 10s));
  EXPECT_FALSE(estimate_eta(0.5, 0s));
  EXPECT_FALSE(estimate_eta(1.5, 10s));
}

TEST(ProgressTracker, AnAgedEtaCountsDownThenSaysItRanOut) {
  BuildProgress p;
  p.done = 3;
  p.total = 5;
  p.percent = 60;
  p.elapsed = 56s;
  p.eta = 28s;
  auto later = aged(p, 10s);
  EXPECT_EQ(later.elapsed, 66s);
  ASSERT_TRUE(later.eta);
  EXPECT_EQ(*later.eta, 18s);
  auto overdue = aged(p, 31s);
  EXPECT_FALSE(overdue.eta);
  EXPECT_TRUE(overdue.eta_overdue);
  EXPECT_EQ(render_progress_line(overdue), "[3/5]  60% elapsed 1m27s, past its ETA");
}

TEST(ProgressTracker, UsesFinishedEdgesAndTheClock) {
  auto now = std::chrono::steady_clock::time_point{};
  ProgressTracker t([&] { return now; });
  EXPECT_FALSE(t.feed("running build_ext"));
  EXPECT_FALSE(t.progress().eta);
  now += 30s;
  EXPECT_TRUE(t.feed("[1/5] nvcc -c /s/a.cu -o a.o"));
  auto p = t.progress();
  EXPECT_EQ(p.done, 1);
  EXPECT_EQ(p.total, 5);
  EXPECT_EQ(p.elapsed, 30s);
  // Piped, Ninja prints [1/5] when the first edge finished: 1/5 took 30 s, 120 s to go.
  ASSERT_TRUE(p.eta);
  EXPECT_EQ(*p.eta, 120s);
  now += 30s;
  EXPECT_TRUE(t.feed("[3/5] nvcc -c /s/c.cu -o c.o"));
  p = t.progress();
  ASSERT_TRUE(p.eta);
  EXPECT_EQ(*p.eta, 40s);
  EXPECT_EQ(p.finished_file, "c.cu") << "Ninja's line names the edge that finished";
  EXPECT_EQ(p.current_file, "");
  EXPECT_EQ(p.current_command, "");
  EXPECT_EQ(p.percent, 60);
  // The count stands still: the ETA counts down from when it moved, then gives way.
  now += 25s;
  p = t.progress();
  ASSERT_TRUE(p.eta);
  EXPECT_EQ(*p.eta, 15s);
  EXPECT_FALSE(p.eta_overdue);
  now += 20s;
  p = t.progress();
  EXPECT_FALSE(p.eta) << "an ETA that ran out is no estimate";
  EXPECT_TRUE(p.eta_overdue);
  EXPECT_NE(render_progress_line(p).find("past its ETA"), std::string::npos)
      << render_progress_line(p);
  EXPECT_EQ(render_progress_line(p).find(" ETA "), std::string::npos) << render_progress_line(p);
  now += 5s;
  EXPECT_TRUE(t.feed("[4/5] nvcc -c /s/d.cu -o d.o"));
  p = t.progress();
  ASSERT_TRUE(p.eta) << "a new count gives a new estimate";
  EXPECT_FALSE(p.eta_overdue);
  t.restart();
  EXPECT_EQ(t.progress().total, 0);
  EXPECT_EQ(t.progress().elapsed, 0s);
}

TEST(ProgressLine, RendersCountsEtaAndFile) {
  BuildProgress p;
  p.done = 12;
  p.total = 40;
  p.percent = 30;
  p.elapsed = 65s;
  p.eta = 3725s;
  p.finished_file = "bias_gelu.cu";  // Ninja's: done
  EXPECT_EQ(render_progress_line(p), "[12/40]  30% elapsed 1m05s ETA 1h02m, finished bias_gelu.cu");
  p.current_file = "ops.cu";  // a line printed as its job starts (CMake's Makefiles)
  EXPECT_EQ(render_progress_line(p), "[12/40]  30% elapsed 1m05s ETA 1h02m ops.cu");
  EXPECT_EQ(format_duration(42s), "42s");
}

TEST(CompilerCall, ReadsWhatSetuptoolsEchoesWithoutNinja) {
  auto cc = parse_compiler_call(
      "  gcc -Wsign-compare -DNDEBUG -g -fwrapv -O3 -Wall -fPIC -DWITH_PYTHON -Icsrc -c "
      "csrc/scatter.cpp -o "
      "build/temp.linux-x86_64-cpython-311/csrc/scatter.o -O3 "
      "-DTORCH_EXTENSION_NAME=_scatter_cuda");
  ASSERT_TRUE(cc);
  EXPECT_EQ(cc->tool, "gcc");
  EXPECT_EQ(cc->file, "scatter.cpp");
  EXPECT_FALSE(cc->link);
  auto nvcc = parse_compiler_call(
      "/usr/local/cuda/bin/nvcc -DWITH_PYTHON -c csrc/cuda/scatter_cuda.cu -o x.o "
      "-gencode=arch=compute_75,code=sm_75 --compiler-options '-fPIC'");
  ASSERT_TRUE(nvcc);
  EXPECT_EQ(nvcc->tool, "nvcc");
  EXPECT_EQ(nvcc->file, "scatter_cuda.cu");
  auto link = parse_compiler_call(
      "g++ -pthread -B /py/compiler_compat -shared a.o b.o -L/torch/lib -lc10 -o "
      "build/lib.linux-x86_64-cpython-311/torch_scatter/_scatter_cuda.so -s");
  ASSERT_TRUE(link);
  EXPECT_TRUE(link->link);
  EXPECT_EQ(link->file, "_scatter_cuda.so");
  auto cached =
      parse_compiler_call("/usr/bin/ccache /usr/bin/x86_64-linux-gnu-g++-12 -c k.cc -o k.o");
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->tool, "x86_64-linux-gnu-g++-12");
  EXPECT_EQ(cached->file, "k.cc");
  // Not compiler calls: words in prose, a compiler without -c or -shared, other tools.
  EXPECT_FALSE(parse_compiler_call("gcc version 12.2.0 (Debian 12.2.0-14)"));
  EXPECT_FALSE(parse_compiler_call("nvcc --version"));
  EXPECT_FALSE(parse_compiler_call("copying torch_scatter/scatter.py -> build/lib/torch_scatter"));
  EXPECT_FALSE(parse_compiler_call("ld -o a.so a.o"));
  EXPECT_FALSE(parse_compiler_call(""));
}

TEST(SetuptoolsAndPip, ExtensionAndPhaseLines) {
  EXPECT_EQ(parse_setuptools_extension("  building 'torch_scatter._scatter_cuda' extension"),
            "torch_scatter._scatter_cuda");
  EXPECT_FALSE(parse_setuptools_extension("building 'x' extensions"));
  EXPECT_FALSE(parse_setuptools_extension("building '' extension"));
  EXPECT_EQ(parse_pip_phase("  Preparing metadata (setup.py): started"),
            "Preparing metadata (setup.py)");
  EXPECT_EQ(
      parse_pip_phase("  Building wheel for torch-scatter (setup.py): finished with status 'done'"),
      "Building wheel for torch-scatter (setup.py)");
  EXPECT_EQ(parse_pip_phase("  Created wheel for torch-scatter: "
                            "filename=torch_scatter-2.1.2-cp311-cp311-linux_x86_64.whl "
                            "size=1 sha256=ab"),
            "Created wheel for torch-scatter");
  EXPECT_EQ(parse_pip_phase("Processing ./src/pkg"), "Processing ./src/pkg");
  EXPECT_FALSE(parse_pip_phase("running build_ext"));
  // setuptools' zip, as the PEP 517 driver shows it unindented.
  EXPECT_EQ(parse_pip_phase("creating '/w/wheelhouse/tmpab/x-1-cp311-cp311-linux_x86_64.whl' and "
                            "adding 'build/bdist' to it"),
            "writing the wheel");
  EXPECT_FALSE(parse_pip_phase("building 'torch_scatter._scatter_cuda' extension"));
}

TEST(ProgressLine, WithoutCountsNamesTheCommand) {
  BuildProgress p;
  p.elapsed = 95s;
  p.extensions = 3;
  p.compiles = 7;
  p.current_command = "nvcc segment_csr_cuda.cu";
  p.phase = "extension torch_scatter._segment_csr_cuda";
  EXPECT_EQ(render_progress_line(p),
            "elapsed 1m35s, extension 3, 7 compiles: nvcc segment_csr_cuda.cu");
  BuildProgress phase_only;
  phase_only.phase = "Preparing metadata (setup.py)";
  EXPECT_EQ(render_progress_line(phase_only), "elapsed 0s: Preparing metadata (setup.py)");
  EXPECT_EQ(render_heartbeat_line(p, 270s),
            "still running after 4m30s: nvcc segment_csr_cuda.cu (extension "
            "torch_scatter._segment_csr_cuda)");
  EXPECT_EQ(render_heartbeat_line(BuildProgress{}, 30s), "still running after 30s");
}

TEST(Heartbeat, FiresAfterEachQuietIntervalOnly) {
  auto now = std::chrono::steady_clock::time_point{};
  Heartbeat hb(30s, [&] { return now; });
  hb.start();
  now += 29s;
  EXPECT_FALSE(hb.due());
  now += 1s;
  EXPECT_TRUE(hb.due());   // 30 s without a line
  EXPECT_FALSE(hb.due());  // and it counts as shown
  now += 20s;
  hb.shown();  // a progress line at 50 s
  now += 29s;
  EXPECT_FALSE(hb.due());  // 29 s after it
  now += 1s;
  EXPECT_TRUE(hb.due());
  EXPECT_EQ(hb.elapsed(), 80s);
  hb.start();  // a new step
  EXPECT_EQ(hb.elapsed(), 0s);
  EXPECT_FALSE(hb.due());
  // A zero interval would fire on every tick: it falls back to 30 s.
  Heartbeat bad(0s, [&] { return now; });
  EXPECT_EQ(bad.interval(), 30s);
}

namespace {

std::vector<std::string> read_lines(const std::string& name) {
  std::ifstream in(std::string(TAILOR_SOURCE_DIR) + "/tests/builder/data/" + name);
  EXPECT_TRUE(in) << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST(RecordedLogs, SetuptoolsWithoutNinjaShowsEveryStep) {
  // A real `pip wheel -v` of a use_ninja=False package (tests/builder/data/README.md).
  auto lines = read_lines("setuptools_no_ninja.log");
  ASSERT_GT(lines.size(), 50u);
  auto now = std::chrono::steady_clock::time_point{};
  ProgressTracker t([&] { return now; });
  std::vector<std::string> shown;  // what a display would show, one entry per change
  for (const auto& line : lines) {
    now += 1s;
    if (t.feed(line)) shown.push_back(render_progress_line(t.progress()));
  }
  auto p = t.progress();
  EXPECT_EQ(p.extensions, 2);
  EXPECT_EQ(p.compiles, 4);  // scale.cpp, scale_kernel.cu, shift.cpp, shift_kernel.cu
  EXPECT_EQ(p.total, 0);     // no counts: setuptools prints none
  EXPECT_EQ(p.percent, -1);
  EXPECT_EQ(p.current_command, "");  // a pip phase after the last link
  EXPECT_EQ(p.phase, "Created wheel for tinyext");
  EXPECT_EQ(render_progress_line(p),
            "elapsed 1m16s, extension 2, 4 compiles: Created wheel for tinyext");
  auto has = [&](const std::string& needle) {
    return std::any_of(shown.begin(), shown.end(),
                       [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  };
  EXPECT_TRUE(has("Preparing metadata (setup.py)"));
  EXPECT_TRUE(has("Building wheel for tinyext (setup.py)"));
  EXPECT_TRUE(has("extension 1, 1 compile: gcc scale.cpp"));
  EXPECT_TRUE(has("extension 1, 2 compiles: nvcc scale_kernel.cu"));
  EXPECT_TRUE(has("g++ link _scale_cuda.so"));
  EXPECT_TRUE(has("extension 2, 2 compiles: extension tinyext._shift_cuda"));
  EXPECT_TRUE(has("extension 2, 4 compiles: nvcc shift_kernel.cu"));
  // Nothing else in the log is taken for a compile (copying, creating, warnings...).
  int calls = 0;
  for (const auto& line : lines)
    if (parse_compiler_call(line)) ++calls;
  EXPECT_EQ(calls, 6);  // 4 compiles + 2 links
}

TEST(RecordedLogs, NinjaNamesFinishedJobsSoTheHeartbeatNeverDoes) {
  // A real tailor build of a two-file extension under `ninja -v` (data/README.md) and its
  // .ninja_log: module.o ended at 0.999 s, scale.o (nvcc) at 1.92 s.
  auto lines = read_lines("tiny_ext_ninja.log");
  ASSERT_GT(lines.size(), 40u);
  std::ifstream log_in(std::string(TAILOR_SOURCE_DIR) + "/tests/builder/data/tiny_ext.ninja_log");
  std::string log_text((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  auto log = tailor::outputs::parse_ninja_log(log_text);
  ASSERT_TRUE(log) << log.error().message;
  ASSERT_EQ(log->jobs.size(), 2u);
  EXPECT_TRUE(log->jobs[0].output.ends_with("/module.o"));
  EXPECT_LT(log->jobs[0].end_ms, log->jobs[1].end_ms);

  auto now = std::chrono::steady_clock::time_point{};
  ProgressTracker t([&] { return now; });
  size_t i = 0;
  for (; i < lines.size() && !lines[i].starts_with("[1/2] "); ++i) t.feed(lines[i]);
  ASSERT_LT(i, lines.size());
  // Before any edge finished: the extension, nothing named.
  EXPECT_EQ(render_heartbeat_line(t.progress(), 30s),
            "still running after 30s: extension tiny_ext._C");
  t.feed(lines[i]);
  // `[1/2] g++ ... module.cpp` came when module.o was done: the ninja log's first entry.
  BuildProgress p = t.progress();
  EXPECT_EQ(p.finished_file, "module.cpp");
  EXPECT_EQ(p.current_command, "");
  EXPECT_EQ(p.current_file, "");
  // While nvcc compiles scale.cu the heartbeat must not name module.cpp.
  std::string beat = render_heartbeat_line(p, 34s);
  EXPECT_EQ(beat,
            "still running after 34s: 1 Ninja job not finished (extension tiny_ext._C) [1/2]");
  EXPECT_EQ(beat.find("module"), std::string::npos) << beat;
  EXPECT_TRUE(render_progress_line(p).ends_with(", finished module.cpp"))
      << render_progress_line(p);
  // [2/2]: Ninja is done; setuptools echoes the link before it runs: that one runs.
  t.feed(lines[++i]);
  EXPECT_EQ(render_heartbeat_line(t.progress(), 40s),
            "still running after 40s: extension tiny_ext._C [2/2]");
  t.feed(lines[++i]);
  EXPECT_EQ(render_heartbeat_line(t.progress(), 41s),
            "still running after 41s: g++ link _C.cpython-311-x86_64-linux-gnu.so (extension "
            "tiny_ext._C) [2/2]");
  // Each heartbeat while the log goes on names nothing that finished before it.
  for (++i; i < lines.size(); ++i) {
    t.feed(lines[i]);
    std::string b = render_heartbeat_line(t.progress(), 50s);
    EXPECT_EQ(b.find("module.cpp"), std::string::npos) << b;
    EXPECT_EQ(b.find("scale.cu"), std::string::npos) << b;
  }
}

TEST(HeartbeatLine, ModulesAtOnceNameThePackageNotTheLastModuleSetuptoolsNamed) {
  // The build driver's threads each print setuptools' "building '...' extension": the last
  // one printed is not the one compiling.
  ProgressTracker t([] { return std::chrono::steady_clock::time_point{}; });
  t.package_units(6, 12);  // the build driver's modules event
  t.feed("building 'torch_spline_conv._basis_cuda' extension");
  t.feed("building 'torch_spline_conv._basis_cpu' extension");
  for (int i = 1; i <= 4; ++i) t.feed(fmt::format("[{}/12] c++ -c /s/u{}.cpp -o u{}.o", i, i, i));
  EXPECT_EQ(render_heartbeat_line(t.progress(), 170s),
            "still running after 2m50s: 8 Ninja jobs not finished (6 modules) [4/12]");
}

TEST(HeartbeatLine, ANinjaPhaseCountsWhatIsLeftAndNamesNoFinishedJob) {
  ProgressTracker t([] { return std::chrono::steady_clock::time_point{}; });
  t.feed("[1/4] c++ -c /s/bindings.cpp -o bindings.o");
  EXPECT_EQ(render_heartbeat_line(t.progress(), 34s),
            "still running after 34s: 3 Ninja jobs not finished [1/4]");
  // setuptools' own compile (no Ninja) is echoed as it starts, one at a time: it runs.
  ProgressTracker st([] { return std::chrono::steady_clock::time_point{}; });
  st.feed("gcc -pthread -c /s/a.cpp -o a.o");
  EXPECT_EQ(render_heartbeat_line(st.progress(), 34s), "still running after 34s: gcc a.cpp");
}

TEST(RecordedLogs, CmakeMakefilesPercentAndFiles) {
  auto lines = read_lines("cmake_makefiles.log");
  ASSERT_GT(lines.size(), 10u);
  auto now = std::chrono::steady_clock::time_point{};
  ProgressTracker t([&] { return now; });
  std::vector<int> percents;
  std::vector<std::string> files;
  for (const auto& line : lines) {
    now += 2s;
    if (t.feed(line) && t.progress().percent >= 0) {
      percents.push_back(t.progress().percent);
      files.push_back(t.progress().current_file);
    }
  }
  ASSERT_FALSE(percents.empty());
  EXPECT_TRUE(std::is_sorted(percents.begin(), percents.end()));
  EXPECT_EQ(percents.back(), 100);
  EXPECT_NE(std::find(files.begin(), files.end(), "ops.cu"), files.end());
  EXPECT_NE(std::find(files.begin(), files.end(), "common.cpp"), files.end());
  EXPECT_NE(std::find(files.begin(), files.end(), "host.cpp"), files.end());
  EXPECT_TRUE(t.progress().eta);  // from the percent
}

TEST(RecordedLogs, TorchScatterStartNamesItsFirstModuleAndFile) {
  // The real start of torch-scatter 2.1.2's own (use_ninja=False) build.
  auto lines = read_lines("torch_scatter_2.1.2_start.log");
  ASSERT_GT(lines.size(), 40u);
  auto now = std::chrono::steady_clock::time_point{};
  ProgressTracker t([&] { return now; });
  for (const auto& line : lines) {
    now += 10s;
    t.feed(line);
  }
  auto p = t.progress();
  EXPECT_EQ(p.extensions, 1);
  EXPECT_EQ(p.phase, "extension torch_scatter._segment_coo_cuda");
  EXPECT_EQ(p.compiles, 1);
  EXPECT_EQ(p.current_command, "gcc segment_coo_cpu.cpp");
  // What a heartbeat would say while that one file compiles for minutes.
  EXPECT_EQ(render_heartbeat_line(p, 600s),
            "still running after 10m00s: gcc segment_coo_cpu.cpp (extension "
            "torch_scatter._segment_coo_cuda)");
}

TEST(HeartbeatDisplay, PlainPrintsStillRunningAfterAQuietInterval) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  auto now = std::chrono::steady_clock::time_point{};
  {
    auto d = make_progress_display(DisplayStyle::plain, f,
                                   HeartbeatOptions{30s, [&] { return now; }, false});
    tailor::plan::Step step{"build the torch-scatter wheel (pip)", {"python3"}, "", {}, {}, 60s};
    d->step_started(step, 0, 1);
    now += 29s;
    d->tick();  // not yet
    BuildProgress p;
    p.compiles = 1;
    p.extensions = 1;
    p.phase = "extension torch_scatter._segment_coo_cuda";
    p.current_command = "gcc segment_coo_cpu.cpp";
    d->progress(p);  // a line: the quiet interval restarts
    now += 29s;
    d->tick();
    now += 1s;
    d->tick();  // 30 s quiet: the heartbeat, 59 s into the step
    d->tick();  // shown: not again at once
    now += 30s;
    d->tick();
    StepOutcome o;
    o.title = step.title;
    o.started = true;
    o.exit_code = 0;
    o.duration = 89s;
    d->step_finished(o);
  }
  std::fclose(f);
  std::string text(buf, len);
  free(buf);
  EXPECT_EQ(text,
            "==> [1/1] build the torch-scatter wheel (pip)\n"
            "    elapsed 0s, extension 1, 1 compile: gcc segment_coo_cpu.cpp\n"
            "    still running after 59s: gcc segment_coo_cpu.cpp (extension "
            "torch_scatter._segment_coo_cuda)\n"
            "    still running after 1m29s: gcc segment_coo_cpu.cpp (extension "
            "torch_scatter._segment_coo_cuda)\n"
            "    done in 1m29s\n");
}

TEST(HeartbeatDisplay, LiveRedrawsTheStatusLine) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  auto now = std::chrono::steady_clock::time_point{};
  {
    auto d = make_progress_display(DisplayStyle::live, f,
                                   HeartbeatOptions{30s, [&] { return now; }, false});
    d->step_started(tailor::plan::Step{"pip wheel", {"python3"}, "", {}, {}, 60s}, 0, 1);
    now += 45s;
    d->tick();
  }
  std::fclose(f);
  std::string text(buf, len);
  free(buf);
  EXPECT_NE(text.find("\r\033[Kpip wheel: still running after 45s"), std::string::npos) << text;
}

// With progress, every tick redraws the line: its elapsed time and ETA move while the build
// prints nothing, and an ETA that ran out says so; a step of several says which it is.
TEST(HeartbeatDisplay, LiveMovesTheElapsedTimeAndTheEtaEveryTick) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  auto now = std::chrono::steady_clock::time_point{};
  {
    auto d = make_progress_display(DisplayStyle::live, f,
                                   HeartbeatOptions{30s, [&] { return now; }, false});
    d->step_started(tailor::plan::Step{"build", {"python3"}, "", {}, {}, 60s}, 1, 2);
    now += 20s;
    BuildProgress p;
    p.done = 2;
    p.total = 4;
    p.percent = 50;
    p.elapsed = 20s;
    p.eta = 20s;
    d->progress(p);
    now += 5s;
    d->tick();
    now += 20s;
    d->tick();
  }
  std::fclose(f);
  std::string text(buf, len);
  free(buf);
  EXPECT_NE(text.find("\r\033[Kstep 2/2 build: [2/4]  50% elapsed 20s ETA 20s"), std::string::npos)
      << text;
  EXPECT_NE(text.find("elapsed 25s ETA 15s"), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed 45s, past its ETA"), std::string::npos) << text;
}

namespace tailor::builder {
namespace {
using namespace std::chrono_literals;

TEST(ProgressTracker, ThePrintedModulesLineIsNoLongerRead) {
  // The driver's events give the package's units (package_units); its printed line is for
  // people and moves nothing.
  ProgressTracker t([] { return std::chrono::steady_clock::time_point{}; });
  EXPECT_FALSE(t.feed("tailor: modules at once: 3 modules, 6 units (4 CUDA), 3 at a time"));
  t.feed("[1/2] nvcc -c /s/a.cu -o a.o");
  EXPECT_EQ(t.progress().total, 2);
  EXPECT_EQ(t.progress().modules, 0);
}

TEST(ProgressTracker, CountsThePackagesUnitsOverEveryModulesNinja) {
  auto now = std::chrono::steady_clock::time_point{};
  ProgressTracker t([&] { return now; });
  t.package_units(3, 6);
  now += 10s;
  // Three Ninjas, each counting its own edges: the package's count goes on across them.
  EXPECT_TRUE(t.feed("[1/2] nvcc -c /s/a.cu -o a.o"));
  EXPECT_TRUE(t.feed("[1/3] nvcc -c /s/b.cu -o b.o"));
  EXPECT_TRUE(t.feed("[1/1] c++ -c /s/c.cpp -o c.o"));
  auto p = t.progress();
  EXPECT_EQ(p.done, 3);
  EXPECT_EQ(p.total, 6);
  EXPECT_EQ(p.percent, 50);
  EXPECT_EQ(p.modules, 3);
  ASSERT_TRUE(p.eta);
  EXPECT_EQ(*p.eta, 10s) << "half the package in 10 s: 10 s to go, not one module's ETA";
  EXPECT_NE(render_progress_line(p).find("[3/6]"), std::string::npos) << render_progress_line(p);
  EXPECT_NE(render_progress_line(p).find("(3 modules)"), std::string::npos);
  for (int i = 0; i < 5; ++i) t.feed("[2/3] nvcc -c /s/b.cu -o b.o");
  EXPECT_EQ(t.progress().done, 6) << "never past the package's total";
  t.restart();
  t.feed("[1/4] nvcc -c /s/a.cu -o a.o");
  EXPECT_EQ(t.progress().total, 4) << "a new step without the line: Ninja's own counts";
}

}  // namespace
}  // namespace tailor::builder
