#include "plan/torch_estimate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tailor::plan {

namespace {
constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;

double device_factor(const std::string& compress, const EstimateCoefficients& k) {
  if (compress == "size") return k.device_factor_size;
  if (compress == "none") return k.device_factor_none;
  return 1.0;  // the coefficients were measured with nvcc's default compression
}

// The jobs that fit in `memory_gib` less the reserve at `gib_per_job` each (the coefficient
// estimate and the measured prediction alike); the caller bounds it by the cores.
int jobs_that_fit(double memory_gib, double reserve_gib, double gib_per_job) {
  return static_cast<int>(std::floor(std::max(0.0, memory_gib - reserve_gib) / gib_per_job));
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
  int by_memory = jobs_that_fit(usable_gib, k.reserve_gib, per_job);
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

namespace tailor::plan {

std::string cmake_target_of(std::string_view output) {
  size_t at = output.find("CMakeFiles/");
  if (at == std::string_view::npos) return "";
  std::string_view rest = output.substr(at + 11);
  size_t dir = rest.find(".dir/");
  return dir == std::string_view::npos ? "" : std::string(rest.substr(0, dir));
}

namespace {
// Mean seconds by (kind, target), by kind and over all of a sample.
struct UnitModel {
  std::map<std::pair<std::string, std::string>, std::pair<double, size_t>> by_group;
  std::map<std::string, std::pair<double, size_t>> by_kind;
  double total = 0;
  size_t count = 0;

  explicit UnitModel(const std::vector<const MeasuredUnit*>& sample) {
    for (const MeasuredUnit* m : sample) {
      auto& g = by_group[{m->unit.kind, m->unit.target}];
      g.first += m->seconds;
      ++g.second;
      auto& k = by_kind[m->unit.kind];
      k.first += m->seconds;
      ++k.second;
      total += m->seconds;
      ++count;
    }
  }
  double estimate(const BuildUnit& u) const {
    if (auto g = by_group.find({u.kind, u.target}); g != by_group.end())
      return g->second.first / static_cast<double>(g->second.second);
    if (auto k = by_kind.find(u.kind); k != by_kind.end())
      return k->second.first / static_cast<double>(k->second.second);
    return count ? total / static_cast<double>(count) : 0;
  }
  bool knows(const std::string& kind) const { return by_kind.count(kind) != 0; }
};
}  // namespace

BuildPrediction predict_build(const std::vector<MeasuredUnit>& measured,
                              const std::vector<BuildUnit>& units, int cores, double memory_gib,
                              const EstimateCoefficients& k) {
  BuildPrediction p;
  std::map<std::string, const BuildUnit*> known;
  for (const auto& u : units) known.emplace(u.output, &u);
  std::vector<const MeasuredUnit*> sample;
  std::set<std::string> seen;
  for (const auto& m : measured)
    if (known.count(m.unit.output) && seen.insert(m.unit.output).second) sample.push_back(&m);
  UnitModel model(sample);
  std::map<std::string, KindPrediction> kinds;
  for (const auto& u : units) {
    KindPrediction& kp = kinds[u.kind];
    kp.kind = u.kind;
    ++kp.total;
  }
  for (const MeasuredUnit* m : sample) {
    KindPrediction& kp = kinds[m->unit.kind];
    ++kp.measured;
    kp.mean_s += m->seconds;
    p.measured_cpu_s += m->seconds;
    if (m->peak_mib) {
      ++p.units_with_peak;
      kp.peak_mib = std::max(kp.peak_mib, *m->peak_mib);
      p.peak_per_job_mib = std::max(p.peak_per_job_mib, *m->peak_mib);
    }
  }
  for (const auto& u : units) {
    if (seen.count(u.output)) continue;
    double s = model.estimate(u);
    kinds[u.kind].predicted_s += s;
    p.remaining_cpu_s += s;
  }
  for (auto& [name, kp] : kinds) {
    if (kp.measured) kp.mean_s /= static_cast<double>(kp.measured);
    if (!kp.measured && kp.total) p.kinds_not_measured.push_back(name);
    p.kinds.push_back(kp);
  }
  p.units_total = units.size();
  p.units_measured = sample.size();
  p.cores = std::max(1, cores);
  p.memory_gib = memory_gib;
  p.reserve_gib = k.reserve_gib;
  int by_memory = p.cores;
  if (p.peak_per_job_mib > 0)
    by_memory =
        jobs_that_fit(memory_gib, k.reserve_gib, static_cast<double>(p.peak_per_job_mib) / 1024.0);
  p.jobs = std::max(1, std::min(p.cores, by_memory));
  p.memory_needed_gib = k.reserve_gib + p.jobs * static_cast<double>(p.peak_per_job_mib) / 1024.0;
  p.whole_wall_h = p.whole_cpu_s() / p.jobs / 3600.0;
  p.remaining_wall_h = p.remaining_cpu_s / p.jobs / 3600.0;
  return p;
}

namespace {
PredictionCheck run_check(std::string name, const std::vector<const MeasuredUnit*>& fit,
                          const std::vector<const MeasuredUnit*>& test) {
  PredictionCheck c;
  c.name = std::move(name);
  c.fit_units = fit.size();
  c.test_units = test.size();
  UnitModel model(fit);
  std::set<std::string> missing;
  for (const MeasuredUnit* m : test) {
    c.predicted_s += model.estimate(m->unit);
    c.measured_s += m->seconds;
    if (!model.knows(m->unit.kind)) missing.insert(m->unit.kind);
  }
  c.kinds_not_fitted.assign(missing.begin(), missing.end());
  return c;
}
}  // namespace

std::vector<PredictionCheck> check_prediction(std::vector<MeasuredUnit> measured) {
  std::stable_sort(measured.begin(), measured.end(),
                   [](const MeasuredUnit& a, const MeasuredUnit& b) { return a.end_s < b.end_s; });
  std::vector<const MeasuredUnit*> even, odd, first, second;
  if (measured.empty()) return {};
  double t0 = measured.front().end_s, t1 = measured.back().end_s;
  for (const auto& m : measured) t0 = std::min(t0, m.end_s - m.seconds);
  const double mid = t0 + (t1 - t0) / 2;
  for (size_t i = 0; i < measured.size(); ++i) {
    (i % 2 ? odd : even).push_back(&measured[i]);
    (measured[i].end_s <= mid ? first : second).push_back(&measured[i]);
  }
  return {run_check("interleaved", even, odd), run_check("halves", first, second)};
}

std::string render_prediction(const BuildPrediction& p) {
  std::string out = fmt::format(
      "whole build: {:.1f} CPU-hours ({:.1f} measured, {:.1f} predicted), {:.1f} h on {} cores / "
      "{:.0f} GiB ({} jobs of {:.1f} GiB, {:.1f} GiB with the {:.0f} GiB reserve), from {} "
      "measured units of {} kinds",
      p.whole_cpu_s() / 3600, p.measured_cpu_s / 3600, p.remaining_cpu_s / 3600, p.whole_wall_h,
      p.cores, p.memory_gib, p.jobs, static_cast<double>(p.peak_per_job_mib) / 1024.0,
      p.memory_needed_gib, p.reserve_gib, p.units_measured,
      p.kinds.size() - p.kinds_not_measured.size());
  out += p.kinds_not_measured.empty()
             ? "\n"
             : fmt::format("; kinds not measured (every unit's mean used): {}\n",
                           fmt::join(p.kinds_not_measured, ", "));
  for (const auto& k : p.kinds)
    out += fmt::format(
        "  {:<6} {:>5} units, {:>5} measured, mean {}, peak {}, {:.1f} CPU-hours predicted\n",
        k.kind, k.total, k.measured, k.measured ? fmt::format("{:.1f} s", k.mean_s) : "-",
        k.peak_mib ? fmt::format("{} MiB", k.peak_mib) : "-", k.predicted_s / 3600);
  return out;
}

std::string render_check(const PredictionCheck& c) {
  return fmt::format(
      "check {}: fitted on {} units, {} predicted: {:.0f} s against {:.0f} s measured ({:+.1f}%){}",
      c.name, c.fit_units, c.test_units, c.predicted_s, c.measured_s, c.error() * 100,
      c.kinds_not_fitted.empty() ? ""
                                 : fmt::format(" (kinds the fit never measured: {})",
                                               fmt::join(c.kinds_not_fitted, ", ")));
}

}  // namespace tailor::plan
