#include <gtest/gtest.h>

#include "diagnose/diagnosis.h"
#include "diagnose/log_lines.h"

namespace tailor::diagnose {
namespace {

// The shape of a failed `pip wheel` of a cpp_extension package built with ninja: warnings
// first, a FAILED step with nvcc's errors, another step still running, ninja's summary,
// then setuptools' and pip's tails.
const char* k_ninja_log = R"(Building wheels for collected packages: demo-ext
  Running setup.py bdist_wheel for demo-ext
  [1/4] c++ -MMD -MF /tmp/b/ops.o.d -pthread -Wno-unused-result -O3 -fPIC -c /src/csrc/ops.cpp -o /tmp/b/ops.o
  /src/csrc/ops.cpp:12:7: warning: unused variable 'n' [-Wunused-variable]
  [2/4] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /src/csrc/kernel.cu -o /tmp/b/kernel.o -gencode=arch=compute_80,code=sm_80
  FAILED: /tmp/b/kernel.o
  /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -c /src/csrc/kernel.cu -o /tmp/b/kernel.o -gencode=arch=compute_80,code=sm_80
  /src/csrc/kernel.cu(41): error: identifier "warp_reduce" is undefined
        float s = warp_reduce(v);
                  ^

  /src/csrc/kernel.cu(57): error: too few arguments in function call

  2 errors detected in the compilation of "/src/csrc/kernel.cu".
  [3/4] c++ -MMD -c /src/csrc/bind.cpp -o /tmp/b/bind.o
  ninja: build stopped: subcommand failed.
  Traceback (most recent call last):
    File "/venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py", line 2595, in _run_ninja_build
      subprocess.run(
  subprocess.CalledProcessError: Command '['ninja', '-v', '-j', '2']' returned non-zero exit status 1.
  RuntimeError: Error compiling objects for extension
  error: subprocess-exited-with-error
ERROR: Failed building wheel for demo-ext
)";

TEST(FirstErrorBlock, NinjaLogGivesTheFailedStepWithNvccErrors) {
  auto block = first_error_block(k_ninja_log);
  ASSERT_TRUE(block);
  EXPECT_EQ(block->first_line, 6u);
  EXPECT_NE(block->lines.front().find("FAILED: /tmp/b/kernel.o"), std::string::npos);
  // Runs through both nvcc errors and stops before the summary and the next step.
  EXPECT_EQ(block->last_line, 12u);
  EXPECT_NE(block->lines.back().find("too few arguments"), std::string::npos);
  for (const auto& l : block->lines) {
    EXPECT_EQ(l.find("ninja: build stopped"), std::string::npos);
    EXPECT_EQ(l.find("warning:"), std::string::npos);
  }
}

// deepspeed 0.19.8's sdist build on the GPU machine: git's complaint in the sdist and an
// error-like line a build script printed and went past come thousands of lines before the
// step that failed.
TEST(FirstErrorBlock, ANinjaFailedStepWinsOverEarlierErrorLikeLines) {
  std::string log =
      "Running command python setup.py bdist_wheel\n"
      "  DS_BUILD_OPS=1\n"
      "  fatal: not a git repository (or any of the parent directories): .git\n"
      "  version=0.19.8, git_hash=unknown, git_branch=unknown\n"
      "  probe.c:1:10: fatal error: aio.h: No such file or directory\n"
      "   [WARNING]  Skip pre-compile of incompatible async_io\n";
  for (int i = 0; i < 3000; ++i) log += "  copying deepspeed/x.py -> build/lib/deepspeed\n";
  log += std::string(k_ninja_log);
  auto block = first_error_block(log);
  ASSERT_TRUE(block);
  EXPECT_NE(block->lines.front().find("FAILED: /tmp/b/kernel.o"), std::string::npos)
      << block->lines.front();
  // Without a FAILED step, git's message alone is not an error; the compiler's is.
  block = first_error_block(log.substr(0, log.find("copying")));
  ASSERT_TRUE(block);
  EXPECT_NE(block->lines.front().find("aio.h"), std::string::npos) << block->lines.front();
  EXPECT_FALSE(
      first_error_block("fatal: not a git repository (or any of the parent directories): .git\n"));
}

TEST(FirstErrorBlock, SkipsWarningsAndTailsWhenNoFailedHeader) {
  std::string log =
      "running build_ext\n"
      "csrc/a.cpp:3:1: warning: 'x' is deprecated [-Wdeprecated-declarations]\n"
      "In file included from csrc/a.cpp:1:\n"
      "csrc/a.h:9:10: fatal error: cuda_runtime.h: No such file or directory\n"
      "    9 | #include <cuda_runtime.h>\n"
      "      |          ^~~~~~~~~~~~~~~~\n"
      "compilation terminated.\n"
      "error: command '/usr/bin/g++' failed with exit code 1\n";
  auto block = first_error_block(log);
  ASSERT_TRUE(block);
  EXPECT_EQ(block->first_line, 3u);  // the include context comes with it
  EXPECT_EQ(block->last_line, 6u);
}

TEST(FirstErrorBlock, PythonTracebackKeepsTheInnermostFrames) {
  std::string log =
      "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n"
      "Traceback (most recent call last):\n"
      "  File \"setup.py\", line 4, in <module>\n"
      "    setup(\n"
      "  File \"/venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py\", line 2411, in "
      "_get_cuda_arch_flags\n"
      "    arch_list[-1] += '+PTX'\n"
      "    ~~~~~~~~~^^^^\n"
      "IndexError: list index out of range\n";
  auto block = first_error_block(log);
  ASSERT_TRUE(block);
  EXPECT_EQ(block->last_line, 8u);
  EXPECT_LE(block->first_line, 5u);
  EXPECT_NE(block->lines.back().find("IndexError"), std::string::npos);
}

TEST(FirstErrorBlock, OnlyTailsFallsBackToTheFirstTail) {
  auto block = first_error_block(
      "ok\nninja: build stopped: subcommand failed.\nERROR: Failed building wheel for x\n");
  ASSERT_TRUE(block);
  EXPECT_EQ(block->first_line, 3u);
}

TEST(FirstErrorBlock, CleanLogHasNone) {
  EXPECT_FALSE(first_error_block("[1/1] c++ -c a.cpp\nwarning: something mild\n"));
  EXPECT_FALSE(first_error_block(""));
}

TEST(LogLines, StripsColourAndCarriageReturnRedraws) {
  auto lines =
      split_log_lines("\x1b[1m\x1b[31merror:\x1b[0m bad\r\nprogress 10%\rprogress 100%\nlast");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "error: bad");
  EXPECT_EQ(lines[1], "progress 100%");
  EXPECT_EQ(lines[2], "last");
}

}  // namespace
}  // namespace tailor::diagnose

namespace tailor::diagnose {
namespace {

// What builder/build_runner writes into the log when a signal stops a step.
TEST(Interruption, FoundWhereTheRunnerWroteIt) {
  const char* log =
      "### tailor step 1/1: build the generic wheel (PEP 517) (2026-11-28T10:00:00Z)\n"
      "[3/12] /usr/local/cuda/bin/nvcc -c csrc/a.cu -o a.o\n"
      "### tailor step 1 INTERRUPTED (signal 15) after 31.4 s\n"
      "### tailor: interrupted by signal 15; the run stopped here\n";
  auto i = find_interruption(log);
  ASSERT_TRUE(i);
  EXPECT_EQ(i->line_number, 3u);
  EXPECT_EQ(i->signal, 15);
  EXPECT_EQ(i->quoted_line, "### tailor step 1 INTERRUPTED (signal 15) after 31.4 s");
  EXPECT_EQ(signal_label(15), "SIGTERM");
  EXPECT_EQ(signal_label(2), "SIGINT (Ctrl-C)");
  auto run_only =
      find_interruption("### tailor: interrupted by signal 2; the run stopped here\r\n");
  ASSERT_TRUE(run_only);
  EXPECT_EQ(run_only->signal, 2);
  EXPECT_EQ(run_only->quoted_line, "### tailor: interrupted by signal 2; the run stopped here");
  // A failed step, or a package that prints the words, is no interruption.
  EXPECT_FALSE(
      find_interruption("### tailor step 1 FAILED: exit 1 after 2.0 s\nKeyboardInterrupt\n"));
  EXPECT_FALSE(find_interruption("  ### tailor step 1 INTERRUPTED (signal 2) after 1 s\n"));
}

}  // namespace
}  // namespace tailor::diagnose
