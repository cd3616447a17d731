// Estimates for a PyTorch build: parallel jobs from usable memory, wheel size per target,
// build time and disk. Linear models whose coefficients (and their sources) are in
// data/pytorch/estimates.toml; every result carries the formula it came from, so a user
// can see why tailor says 28 jobs or 4.1 hours.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/target_set.h"
#include "plan/torch_catalog.h"
#include "plan/torch_plan.h"

namespace tailor::plan {

struct EstimateInput {
  bool cuda = false;
  cuda::TargetSet targets;
  bool flash_attention = false;
  std::string compress;        ///< size | speed | none | "" (nvcc's default)
  uint64_t usable_memory = 0;  ///< bytes; 0 = unknown
  int cores = 0;               ///< the CPUs the build may use (HostCpu::build_cores()); 0 = unknown
};

/// MAX_JOBS: min(cores, floor((usable - reserve) / GiB per job)), at least 1.
/// Sets the plan's jobs and jobs_reason, and the rule's terms in its estimate.
void estimate_jobs(const EstimateInput& in, const EstimateCoefficients& k, TorchPlan& plan);
/// Wheel size, per-target shares, build time (with `jobs`) and disk.
void estimate_outputs(const EstimateInput& in, const EstimateCoefficients& k, int jobs,
                      PlanEstimate& out);

// ---- the whole build from its measured units ---------------------------------------------
// A (partial) build's report measured some units (time, peak); the tree's build.ninja lists
// every unit. A unit not built yet takes the mean time of the measured units of its kind
// and CMake target, else of its kind, else of every measured unit (its kind then "not
// measured"); a job is expected to peak at the heaviest measured peak. On C cores and M GiB:
// jobs = min(C, floor((M - reserve) / peak)), wall = CPU time / jobs.

struct BuildUnit {
  std::string output;
  std::string kind;    ///< "cu", "cpp", "c", "link", "other" (the rule's)
  std::string target;  ///< the CMake target ("torch_cpu" from .../CMakeFiles/torch_cpu.dir/...)
};

struct MeasuredUnit {
  BuildUnit unit;
  double seconds = 0;
  double end_s = 0;                  ///< on the measured runs' one timeline (checks split by it)
  std::optional<uint64_t> peak_mib;  ///< its process tree's peak, when sampled
  std::optional<double> cpu_s;       ///< its process tree's CPU time, when sampled
};

/// The CMake target of an output path, "" when none.
std::string cmake_target_of(std::string_view output);

struct KindPrediction {
  std::string kind;
  size_t total = 0, measured = 0;
  double mean_s = 0;       ///< over the measured units of the kind; 0 when none
  uint64_t peak_mib = 0;   ///< the highest measured peak of the kind
  double predicted_s = 0;  ///< CPU seconds of its units not measured
};

struct BuildPrediction {
  size_t units_total = 0, units_measured = 0, units_with_peak = 0;
  std::vector<KindPrediction> kinds;
  std::vector<std::string> kinds_not_measured;
  double measured_cpu_s = 0, remaining_cpu_s = 0;
  int cores = 0;
  double memory_gib = 0, reserve_gib = 0;
  int jobs = 1;
  uint64_t peak_per_job_mib = 0;
  double memory_needed_gib = 0;
  double whole_wall_h = 0, remaining_wall_h = 0;
  double whole_cpu_s() const { return measured_cpu_s + remaining_cpu_s; }
};

/// The whole build's CPU time, jobs and wall time on `cores` and `memory_gib`. A measured
/// unit that is not one of `units` is left out (another Ninja's, or a configure check's).
BuildPrediction predict_build(const std::vector<MeasuredUnit>& measured,
                              const std::vector<BuildUnit>& units, int cores, double memory_gib,
                              const EstimateCoefficients& k);

/// The model checked on the units it measured: fitted on some, predicting the others' total
/// CPU time. "interleaved": every other unit (by end time) from the rest; "halves": the
/// units that ended in the second half of the measured span from those of the first.
struct PredictionCheck {
  std::string name;
  size_t fit_units = 0, test_units = 0;
  double predicted_s = 0, measured_s = 0;
  std::vector<std::string> kinds_not_fitted;  ///< test units' kinds the fit never measured
  double error() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }
};
std::vector<PredictionCheck> check_prediction(std::vector<MeasuredUnit> measured);

std::string render_prediction(const BuildPrediction& p);
std::string render_check(const PredictionCheck& c);

}  // namespace tailor::plan
