#include "build/build_progress.h"

#include <gtest/gtest.h>

using namespace tailor::build;
using namespace std::chrono_literals;

TEST(NinjaStatus, ParsesCountsAndCommand) {
  auto s = parse_ninja_status("[3/12] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /src/csrc/rms_norm.cu -o rms_norm.o");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->done, 3);
  EXPECT_EQ(s->total, 12);
  EXPECT_EQ(current_file_from_command(s->command), "rms_norm.cu");
}

TEST(NinjaStatus, AcceptsPipIndentAndCarriageReturn) {
  auto s = parse_ninja_status("  [1/4] c++ -MMD -MF bindings.o.d -c /x/csrc/bindings.cpp -o /x/bindings.o\r");
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
  EXPECT_EQ(parse_cmake_percent("[ 42%] Building CUDA object CMakeFiles/bnb.dir/csrc/ops.cu.o"), 42);
  EXPECT_EQ(parse_cmake_percent("[100%] Linking CXX shared library libbnb.so"), 100);
  EXPECT_EQ(parse_cmake_percent("[  0%] Built target x"), 0);
  EXPECT_FALSE(parse_cmake_percent("[101%] nonsense"));
  EXPECT_FALSE(parse_cmake_percent("[3/10] ninja line"));
  EXPECT_EQ(current_file_from_command("[ 42%] Building CUDA object CMakeFiles/bnb.dir/csrc/ops.cu.o"), "ops.cu");
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
  EXPECT_EQ(p.current_file, "c.cu");
  EXPECT_EQ(p.percent, 60);
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
  p.current_file = "bias_gelu.cu";
  EXPECT_EQ(render_progress_line(p), "[12/40]  30% elapsed 1m05s ETA 1h02m bias_gelu.cu");
  EXPECT_EQ(format_duration(42s), "42s");
}
