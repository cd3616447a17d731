// A progress display (builder::ProgressDisplay) that writes nothing and remembers what the
// build runner told it: "start TITLE i/n" and "end TITLE ok|failed", in order. For the tests
// that run a build's steps over a fake command runner (tests/workflow). Header only; it
// needs the builder module, which only the tests of builder and above link.
#pragma once
#include <string>
#include <vector>

#include "builder/build_runner.h"

namespace tailor::test {

class RecordingDisplay : public builder::ProgressDisplay {
 public:
  std::vector<std::string> events;
  void step_started(const plan::Step& step, size_t index, size_t count) override {
    events.push_back("start " + step.title + " " + std::to_string(index + 1) + "/" +
                     std::to_string(count));
  }
  void progress(const builder::BuildProgress&) override {}
  void step_finished(const builder::StepOutcome& outcome) override {
    events.push_back("end " + outcome.title + (outcome.ok() ? " ok" : " failed"));
  }
};

}  // namespace tailor::test
