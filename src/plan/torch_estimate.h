// Estimates for a PyTorch build: parallel jobs from usable memory, wheel size per target,
// build time and disk. Linear models whose coefficients (and their sources) are in
// data/pytorch/estimates.toml; every result carries the formula it came from, so a user
// can see why tailor says 28 jobs or 4.1 hours.
#pragma once
#include <cstdint>

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

}  // namespace tailor::plan
