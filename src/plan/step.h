// The one step type: a process a build plan runs. Plan writes steps (torch's clone, venv,
// requirements and setup.py; an extension's CMake and PEP 517 wheel), the builder runs
// them (builder/build_runner.h) and renders them (`--print-env`, the log header, the sh
// script). No other step type exists.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace tailor::plan {

/// What a step is for, so a run may leave one out (a clone already made, the venv that
/// --no-venv does without) without reading its title.
enum class StepRole { build, clone, make_venv, install_requirements };

struct Step {
  std::string title;  ///< "pip wheel", "cmake configure"
  std::vector<std::string> argv;
  std::string cwd;                         ///< empty: the directory tailor runs in
  std::map<std::string, std::string> env;  ///< set on top of the inherited environment
  std::vector<std::string> unset_env;      ///< removed from the inherited environment
  std::chrono::seconds timeout{std::chrono::hours(24)};
  /// When argv runs one of tailor's helper files: the command a person would type for the
  /// same result (--print-env shows it; the build runs argv).
  std::vector<std::string> by_hand;
  /// Runs with the plan's build environment (`BuildPlan::env`, the cache's variables): the
  /// compile itself, not the clone or the venv. The builder fills `env` from the plan.
  bool uses_plan_env = false;
  StepRole role = StepRole::build;
};

}  // namespace tailor::plan
