#include "builder/step_list.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

namespace tailor::builder {
namespace {

struct Stop {
  std::string why;
  bool operator==(const Stop&) const = default;
};

struct Ran {
  std::vector<std::string> run, done;
};

// Steps named by what they do: "ok" goes on, "stop" ends the run, "signal" is a step
// during which SIGTERM arrives and which itself finishes well.
std::optional<Stop> run_all(const std::vector<std::string>& steps, Ran& r) {
  return run_step_list(
      steps,
      [&](const std::string& s) -> std::optional<Stop> {
        r.run.push_back(s);
        if (s == "signal") ::raise(SIGTERM);
        if (s == "stop") return Stop{"stopped at " + std::to_string(r.run.size())};
        return std::nullopt;
      },
      [&](const std::string& s) { r.done.push_back(s); }, Stop{"interrupted"});
}

class StepList : public ::testing::Test {
 protected:
  void SetUp() override {
    install_interrupt_handlers();
    reset_interrupt_for_testing();
  }
  void TearDown() override { reset_interrupt_for_testing(); }
};

TEST_F(StepList, EveryStepInOrderThenNothing) {
  Ran r;
  EXPECT_EQ(run_all({"ok", "ok", "ok"}, r), std::nullopt);
  EXPECT_EQ(r.run.size(), 3u);
  EXPECT_EQ(r.done, r.run);
}

TEST_F(StepList, TheFirstStopEndsTheRunAfterItsStepIsDone) {
  Ran r;
  EXPECT_EQ(run_all({"ok", "stop", "ok"}, r), (Stop{"stopped at 2"}));
  EXPECT_EQ(r.run, (std::vector<std::string>{"ok", "stop"}));
  EXPECT_EQ(r.done, r.run);  // the stopping step's time is still recorded
}

TEST_F(StepList, ASignalDuringAStepEndsTheRunThereEvenAfterTheLast) {
  Ran r;
  EXPECT_EQ(run_all({"ok", "signal", "ok"}, r), (Stop{"interrupted"}));
  EXPECT_EQ(r.run, (std::vector<std::string>{"ok", "signal"}));
  reset_interrupt_for_testing();
  Ran last;
  EXPECT_EQ(run_all({"ok", "signal"}, last), (Stop{"interrupted"}));
}

TEST_F(StepList, ASignalBeforeTheFirstStepRunsNothing) {
  ::raise(SIGTERM);
  Ran r;
  EXPECT_EQ(run_all({"ok"}, r), (Stop{"interrupted"}));
  EXPECT_TRUE(r.run.empty());
  EXPECT_TRUE(r.done.empty());
}

}  // namespace
}  // namespace tailor::builder
