#include "workflow/build_prediction.h"

#include <map>
#include <set>

#include "outputs/ninja_log.h"
#include "plan/torch_catalog.h"
#include "util/user_file.h"

namespace tailor::workflow {

namespace {
constexpr uint64_t k_max_input_bytes = uint64_t{512} << 20;
constexpr size_t k_max_edges = 2000000;
}  // namespace

std::vector<plan::BuildUnit> build_units_from_ninja(std::string_view build_ninja) {
  std::vector<plan::BuildUnit> units;
  for (const auto& e : outputs::parse_ninja_edges(build_ninja, k_max_edges)) {
    if (outputs::is_bookkeeping_edge(e.rule, e.output)) continue;
    units.push_back(
        {e.output, outputs::job_kind(e.rule, e.input, e.output), plan::cmake_target_of(e.output)});
  }
  return units;
}

Expected<double> add_measured_units(const nlohmann::json& report,
                                    const std::vector<plan::BuildUnit>& units, double base_s,
                                    std::vector<plan::MeasuredUnit>& out, bool cpu_time) {
  const nlohmann::json* run =
      report.is_object() && report.contains("run") && report["run"].is_object() ? &report["run"]
                                                                                : nullptr;
  if (!run || !run->contains("job_timeline") || !(*run)["job_timeline"].is_array())
    return make_error("no run.job_timeline (not a tailor build report)");
  std::map<std::string, const plan::BuildUnit*> known;
  for (const auto& u : units) known.emplace(u.output, &u);
  std::set<std::string> seen;
  for (const auto& m : out) seen.insert(m.unit.output);
  std::map<std::string, uint64_t> peaks, cpu_ms;
  if (auto m = run->find("memory"); m != run->end() && m->is_object()) {
    auto read = [&](const char* key, std::map<std::string, uint64_t>& into) {
      if (auto p = m->find(key); p != m->end() && p->is_object())
        for (const auto& [path, v] : p->items())
          if (v.is_number_unsigned()) into[path] = v.get<uint64_t>();
    };
    read("unit_peaks_mib", peaks);
    read("unit_cpu_ms", cpu_ms);
  }
  double last = base_s;
  for (const auto& job : (*run)["job_timeline"]) {
    if (!job.is_object()) continue;
    auto output = job.find("output");
    auto start = job.find("start_ms");
    auto end = job.find("end_ms");
    if (output == job.end() || start == job.end() || end == job.end() || !output->is_string() ||
        !start->is_number_unsigned() || !end->is_number_unsigned())
      continue;
    const double s0 = static_cast<double>(start->get<uint64_t>()) / 1000.0;
    const double s1 = static_cast<double>(end->get<uint64_t>()) / 1000.0;
    auto it = known.find(output->get<std::string>());
    if (it == known.end() || s1 < s0 || !seen.insert(it->first).second) continue;
    plan::MeasuredUnit m{*it->second, s1 - s0, base_s + s1, std::nullopt, std::nullopt};
    if (auto p = peaks.find(it->first); p != peaks.end()) m.peak_mib = p->second;
    if (auto c = cpu_ms.find(it->first); c != cpu_ms.end())
      m.cpu_s = static_cast<double>(c->second) / 1000.0;
    if (cpu_time) {
      if (!m.cpu_s) continue;
      m.seconds = *m.cpu_s;
    }
    out.push_back(std::move(m));
    last = std::max(last, base_s + s1);
  }
  return last;
}

namespace {
PredictionResult predict(const std::vector<plan::MeasuredUnit>& measured,
                         const std::vector<plan::BuildUnit>& units, int cores, double memory_gib,
                         bool check) {
  PredictionResult r;
  r.prediction =
      plan::predict_build(measured, units, cores, memory_gib, plan::torch_catalog().estimates);
  if (check) r.checks = plan::check_prediction(measured);
  return r;
}
}  // namespace

Expected<PredictionResult> predict_from_files(const PredictionInput& in) {
  TAILOR_TRY(text, read_text_file(in.build_ninja, k_max_input_bytes, BinaryData::refused));
  std::vector<plan::BuildUnit> units = build_units_from_ninja(text);
  if (units.empty()) return make_error(in.build_ninja + ": no build edges (not a build.ninja)");
  std::vector<plan::MeasuredUnit> measured;
  double base = 0;
  for (const auto& path : in.reports) {
    TAILOR_TRY(report_text, read_text_file(path, k_max_input_bytes, BinaryData::refused));
    nlohmann::json j;
    if (report_text.starts_with("# ninja log v")) {
      // Ninja's own log (a run that left no report): its times, no peaks, its
      // invocations one after another.
      auto log = outputs::parse_ninja_log(report_text);
      if (!log) return make_error(path + ": " + log.error().message);
      outputs::place_invocations(log->jobs);
      j["run"]["job_timeline"] = outputs::jobs_to_json(log->jobs);
    } else {
      j = nlohmann::json::parse(report_text, nullptr, false);
      if (j.is_discarded())
        return make_error(path + ": not JSON (a tailor build report or a .ninja_log)");
    }
    auto end = add_measured_units(j, units, base, measured, in.cpu_time);
    if (!end) return make_error(path + ": " + end.error().message);
    base = *end;
  }
  if (measured.empty())
    return make_error("the reports measured no unit of " + in.build_ninja +
                      (in.cpu_time ? " with its CPU time" : " (a report of another tree?)"));
  return predict(measured, units, in.cores, in.memory_gib, in.check);
}

nlohmann::json prediction_json(const PredictionResult& r) {
  const plan::BuildPrediction& p = r.prediction;
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& k : p.kinds)
    kinds[k.kind] = {{"total", k.total},
                     {"measured", k.measured},
                     {"mean_s", k.mean_s},
                     {"peak_mib", k.peak_mib},
                     {"predicted_cpu_s", k.predicted_s}};
  nlohmann::json j = {{"units_total", p.units_total},
                      {"units_measured", p.units_measured},
                      {"units_with_peak", p.units_with_peak},
                      {"kinds", kinds},
                      {"kinds_not_measured", p.kinds_not_measured},
                      {"measured_cpu_s", p.measured_cpu_s},
                      {"remaining_cpu_s", p.remaining_cpu_s},
                      {"whole_cpu_s", p.whole_cpu_s()},
                      {"machine",
                       {{"cores", p.cores},
                        {"memory_gib", p.memory_gib},
                        {"reserve_gib", p.reserve_gib},
                        {"jobs", p.jobs},
                        {"peak_per_job_mib", p.peak_per_job_mib},
                        {"memory_needed_gib", p.memory_needed_gib},
                        {"whole_wall_h", p.whole_wall_h},
                        {"remaining_wall_h", p.remaining_wall_h}}}};
  for (const auto& c : r.checks)
    j["checks"][c.name] = {{"fit_units", c.fit_units},
                           {"test_units", c.test_units},
                           {"predicted_cpu_s", c.predicted_s},
                           {"measured_cpu_s", c.measured_s},
                           {"error", c.error()},
                           {"kinds_not_fitted", c.kinds_not_fitted}};
  return j;
}

std::optional<nlohmann::json> predict_for_report(const nlohmann::json& report,
                                                 const std::string& build_ninja, int cores,
                                                 double memory_gib) {
  auto text = read_text_file(build_ninja, k_max_input_bytes, BinaryData::refused);
  if (!text) return std::nullopt;
  std::vector<plan::BuildUnit> units = build_units_from_ninja(*text);
  std::vector<plan::MeasuredUnit> measured;
  if (!add_measured_units(report, units, 0, measured) || measured.empty()) return std::nullopt;
  nlohmann::json j = prediction_json(predict(measured, units, cores, memory_gib, true));
  j["build_ninja"] = build_ninja;
  return j;
}

}  // namespace tailor::workflow
