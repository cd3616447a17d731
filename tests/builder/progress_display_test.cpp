// The one progress display (builder/progress_display.h) for a command of phases, as
// `tailor stack` uses it, and its status line's cut, over a memory stream and a fake clock.
#include "builder/progress_display.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "builder/build_runner.h"

using namespace std::chrono_literals;
using tailor::builder::DisplayStyle;
using tailor::builder::fit_status_line;
using tailor::builder::HeartbeatOptions;
using tailor::builder::make_progress_display;

namespace {

/// What a display wrote into a memory stream, with a fake clock it can move.
struct Captured {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  std::chrono::steady_clock::time_point now{};
  HeartbeatOptions fake_clock() {
    return HeartbeatOptions{30s, [this] { return now; }, false};
  }
  std::string text() {
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    return out;
  }
};

TEST(PhaseDisplay, PlainSaysEachPhaseDetailAndWarningAsALine) {
  Captured c;
  {
    auto d = make_progress_display(DisplayStyle::plain, c.f, c.fake_clock(), "tailor stack");
    d->phase("resolving kernptx for x86_64 Python 3.12");
    d->detail("pip: Collecting kernptx");
    d->warn("stored resolution unreadable; ignored");
    d->stop();
  }
  EXPECT_EQ(c.text(),
            "tailor stack: resolving kernptx for x86_64 Python 3.12\n"
            "tailor stack: pip: Collecting kernptx\n"
            "tailor stack: warning: stored resolution unreadable; ignored\n");
}

TEST(PhaseDisplay, LiveRedrawsOneStatusLineBelowThePhases) {
  Captured c;
  {
    auto d = make_progress_display(DisplayStyle::live, c.f, c.fake_clock(), "tailor stack");
    d->detail("before any phase: not drawn");
    d->phase("resolving kernptx");
    d->detail("pip: Collecting kernptx");
    c.now += 3s;
    d->tick();
    d->warn("odd");
    d->stop();
    d->detail("after stop: not drawn");
    d->tick();
  }
  std::string out = c.text();
  EXPECT_EQ(out.find("not drawn"), std::string::npos) << out;
  EXPECT_EQ(out.find("tailor stack: resolving kernptx\n"), 0u) << out;
  EXPECT_NE(out.find("\r\033[K  | 0 s  pip: Collecting kernptx"), std::string::npos) << out;
  // A tick moves the spinner and the phase's seconds.
  EXPECT_NE(out.find("\r\033[K  / 3 s  pip: Collecting kernptx"), std::string::npos) << out;
  // A warning clears the status line, goes above it, and the status line comes back.
  EXPECT_NE(out.find("\r\033[Ktailor stack: warning: odd\n\r\033[K  / 3 s  "), std::string::npos)
      << out;
  // stop() leaves the line cleared: the result printed next starts on a clean line.
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K") << out;
}

TEST(PhaseDisplay, QuietShowsOnlyWarnings) {
  Captured c;
  {
    auto d = make_progress_display(DisplayStyle::quiet, c.f, c.fake_clock(), "tailor stack");
    d->phase("resolving");
    d->detail("pip: Collecting x");
    d->warn("kept going");
    d->stop();
  }
  EXPECT_EQ(c.text(), "tailor stack: warning: kept going\n");
}

TEST(StatusLine, CutAtACharacterBoundaryWithDots) {
  EXPECT_EQ(fit_status_line("short", 80), "short");
  EXPECT_EQ(fit_status_line("abcdefghij", 8), "abcd...");
  // "é" is two bytes: a cut after "abc" + its first byte would leave half a character.
  EXPECT_EQ(fit_status_line("abc\xc3\xa9xyzuvw", 8), "abc...");
}

// The build's live line is cut the same way: a title of several-byte characters never ends
// in half a character (it was cut at COLUMNS - 1 bytes).
TEST(StatusLine, TheBuildsLiveLineKeepsWholeCharacters) {
  setenv("COLUMNS", "25", 1);
  Captured c;
  {
    auto d = make_progress_display(DisplayStyle::live, c.f, c.fake_clock());
    tailor::plan::Step step;
    step.title =
        "b\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
        "\xa9\xc3\xa9\xc3\xa9";
    d->step_started(step, 0, 1);
  }
  unsetenv("COLUMNS");
  std::string out = c.text();
  ASSERT_EQ(out.rfind("\r\033[K", 0), 0u) << out;
  std::string line = out.substr(4);
  EXPECT_EQ(line,
            "b\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
            "\xc3\xa9...");
}

}  // namespace
