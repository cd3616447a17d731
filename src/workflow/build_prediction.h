// A whole build's time and memory predicted from the units a (partial) build measured: the
// reports' `run.job_timeline` and `run.memory.unit_peaks_mib`, the tree's build.ninja for
// every unit (its rule's kind, its CMake target), the model in plan/torch_estimate.h.
// Behind `tailor plan torch --measured`, and the prediction a partial torch run's
// last-run.report.json carries.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/torch_estimate.h"
#include "util/expected.h"

namespace tailor::workflow {

/// Every unit of a build.ninja text: the edges that build something (not phony, not CMake's
/// utility targets such as install.util, not its re-run or clean), with kind and target.
std::vector<plan::BuildUnit> build_units_from_ninja(std::string_view build_ninja);

/// The units of one build report (its JSON) that are `units`, appended to `out` at
/// `base_s` on the one timeline, skipping outputs already in `out`; returns where the
/// report's last unit ends. An error when it is no build report (no run.job_timeline).
/// With `cpu_time`, a unit's seconds are its CPU time (run.memory.unit_cpu_ms: what it costs
/// whatever else the machine ran), and a unit without one is left out.
Expected<double> add_measured_units(const nlohmann::json& report,
                                    const std::vector<plan::BuildUnit>& units, double base_s,
                                    std::vector<plan::MeasuredUnit>& out, bool cpu_time = false);

struct PredictionInput {
  /// Build reports, or Ninja's .ninja_log of a run that left none (times, no peaks), one
  /// after another on the timeline.
  std::vector<std::string> reports;
  std::string build_ninja;
  int cores = 1;
  double memory_gib = 0;
  bool check = false;
  bool cpu_time = false;  ///< units' CPU time instead of their wall time
};
struct PredictionResult {
  plan::BuildPrediction prediction;
  std::vector<plan::PredictionCheck> checks;
};

/// The files read (bounded: 512 MiB each) and the prediction made; errors name the file.
Expected<PredictionResult> predict_from_files(const PredictionInput& in);

nlohmann::json prediction_json(const PredictionResult& r);

/// The prediction a partial run's report carries (`prediction`, for the machine it ran on):
/// from the report itself (its JSON) and the tree's build.ninja, with both checks; unset
/// when the tree has no build.ninja yet or the report measured none of its units.
std::optional<nlohmann::json> predict_for_report(const nlohmann::json& report,
                                                 const std::string& build_ninja, int cores,
                                                 double memory_gib);

}  // namespace tailor::workflow
