#include "plan/torch_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tailor::plan {

namespace {
constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;

double device_factor(const std::string& compress, const EstimateCoefficients& k) {
  if (compress == "size") return k.device_factor_size;
  if (compress == "none") return k.device_factor_none;
  return 1.0;  // the coefficients were measured with nvcc's default compression
}
}  // namespace

void estimate_jobs(const EstimateInput& in, const EstimateCoefficients& k, TorchPlan& plan) {
  PlanEstimate& out = plan.estimate;
  double per_job = !in.cuda             ? k.gib_per_job_cpu
                   : in.flash_attention ? k.gib_per_job_flash_attention
                                        : k.gib_per_job_cuda;
  int cores = in.cores > 0 ? in.cores : 1;
  out.gib_per_job = per_job;
  out.reserve_gib = k.reserve_gib;
  if (in.usable_memory == 0) {
    plan.jobs = cores;
    plan.jobs_reason =
        fmt::format("{} cores; usable memory unknown, so not limited by memory", cores);
    return;
  }
  double usable_gib = static_cast<double>(in.usable_memory) / k_gib;
  int by_memory = static_cast<int>(std::floor(std::max(0.0, usable_gib - k.reserve_gib) / per_job));
  plan.jobs = std::max(1, std::min(cores, by_memory));
  plan.jobs_reason = fmt::format(
      "min({} cores, floor(({:.1f} GiB usable - {:.0f} GiB reserve) / {:.1f} GiB per job) = {}) = "
      "{}; "
      "{:.1f} GiB per job for {} (basis: {})",
      cores, usable_gib, k.reserve_gib, per_job, by_memory, plan.jobs, per_job,
      !in.cuda             ? "CPU-only compiles"
      : in.flash_attention ? "CUDA with FlashAttention kernels"
                           : "CUDA compiles",
      k.jobs_source);
}

void estimate_outputs(const EstimateInput& in, const EstimateCoefficients& k, int jobs_in,
                      PlanEstimate& out) {
  int sass = 0, ptx = 0;
  for (const auto& t : in.targets.targets) (t.kind == cuda::TargetKind::sass ? sass : ptx)++;
  double factor = device_factor(in.compress, k);
  out.per_target_mib.clear();
  if (!in.cuda || sass + ptx == 0) {
    out.wheel_mib = k.cpu_only_mib;
    out.wheel_formula =
        fmt::format("CPU-only wheel ~{:.0f} MiB (basis: {})", k.cpu_only_mib, k.size_source);
  } else {
    // The first SASS target carries the host code too; its device share is one "extra" slope.
    double host_part = k.first_sass_mib - k.per_extra_sass_mib;
    double device = (sass * k.per_extra_sass_mib + ptx * k.per_ptx_mib) * factor;
    out.wheel_mib = host_part + device;
    for (const auto& t : in.targets.targets)
      out.per_target_mib[t.name()] =
          (t.kind == cuda::TargetKind::sass ? k.per_extra_sass_mib : k.per_ptx_mib) * factor;
    out.wheel_formula = fmt::format(
        "{:.0f} MiB host code + ({} SASS x {:.0f} + {} PTX x {:.0f}) MiB x {:.2f} ({} compression) "
        "= {:.0f} MiB; basis: {}",
        host_part, sass, k.per_extra_sass_mib, ptx, k.per_ptx_mib, factor,
        in.compress.empty() ? "default" : in.compress, out.wheel_mib, k.size_source);
  }
  int jobs = std::max(1, jobs_in);
  double core_hours = !in.cuda ? k.cpu_only_core_hours
                               : k.cuda_first_target_core_hours +
                                     std::max(0, sass + ptx - 1) * k.per_extra_target_core_hours;
  out.build_hours = core_hours / jobs;
  out.time_formula = fmt::format(
      "{:.1f} core-hours / {} jobs = {:.1f} h without a warm compiler cache (basis: {})",
      core_hours, jobs, out.build_hours, k.time_source);
  int targets = std::max(1, sass + ptx);
  out.disk_gib = !in.cuda ? k.disk_cpu_only_gib : k.disk_base_gib + targets * k.disk_per_target_gib;
  out.disk_formula =
      !in.cuda
          ? fmt::format("{:.0f} GiB for a CPU-only build ({})", k.disk_cpu_only_gib, k.disk_source)
          : fmt::format("{:.0f} GiB + {} target(s) x {:.0f} GiB = {:.0f} GiB ({})", k.disk_base_gib,
                        targets, k.disk_per_target_gib, out.disk_gib, k.disk_source);
}

}  // namespace tailor::plan
