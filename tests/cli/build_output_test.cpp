// `tailor build`'s result lines follow --color as inspect's and plan's do (issue 27):
// with --color=always the status words carry SGR sequences even when piped, with
// --color=never (and by default when not a terminal) the text has none.
#include "cli/build_output.h"

#include <gtest/gtest.h>

#include "util/terminal_style.h"

namespace tailor::cli {
namespace {

workflow::ExtensionBuildResult failed_build() {
  workflow::ExtensionBuildResult r;
  r.status = workflow::BuildStatus::build_failed;
  r.error_block = diagnose::ErrorBlock{
      22, 23, {"FAILED: a.o", "csrc/a.cu(10): error: identifier \"x\" is undefined"}};
  diagnose::Diagnosis d;
  d.pattern_id = "compile-error";
  d.line_number = 23;
  d.quoted_line = "csrc/a.cu(10): error: identifier \"x\" is undefined";
  d.cause = "the compiler stopped";
  d.fix = "fix line 10 of csrc/a.cu";
  r.diagnoses.push_back(d);
  r.report.log_path = "/work/build.log";
  return r;
}

struct ColorModeGuard {
  ~ColorModeGuard() { set_color_mode(ColorMode::automatic); }
};

TEST(BuildOutput, ColorAlwaysPaintsTheStatusWords) {
  ColorModeGuard guard;
  set_color_mode(ColorMode::always);
  const std::string failure = render_build_failure(failed_build());
  EXPECT_NE(failure.find("\x1b[1;31mfirst error\x1b[0m (log lines 22-23):"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("\x1b[33mdiagnosis [compile-error]\x1b[0m (line 23)"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("\x1b[1mfix:\x1b[0m"), std::string::npos) << failure;
  workflow::ExtensionBuildResult ok;
  ok.status = workflow::BuildStatus::ok;
  ok.report.wheel = "tiny_ext-0.1.0-cp311-cp311-linux_x86_64.whl";
  ok.report.targets = {"sm_75"};
  const std::string success = render_build_success(ok);
  EXPECT_EQ(success.rfind(
                "\x1b[32mbuilt\x1b[0m tiny_ext-0.1.0-cp311-cp311-linux_x86_64.whl for sm_75\n", 0),
            0u)
      << success;
}

TEST(BuildOutput, ColorNeverLeavesPlainText) {
  ColorModeGuard guard;
  set_color_mode(ColorMode::never);
  const std::string failure = render_build_failure(failed_build());
  EXPECT_EQ(failure.find('\x1b'), std::string::npos) << failure;
  EXPECT_NE(failure.find("\nfirst error (log lines 22-23):\n  | FAILED: a.o\n"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("diagnosis [compile-error] (line 23): csrc/a.cu(10)"), std::string::npos)
      << failure;
  EXPECT_NE(failure.find("  cause: the compiler stopped\n  fix:   fix line 10 of csrc/a.cu\n"),
            std::string::npos)
      << failure;
  EXPECT_NE(failure.find("full log: /work/build.log\nnothing was written to the output folder\n"),
            std::string::npos)
      << failure;
}

}  // namespace
}  // namespace tailor::cli
