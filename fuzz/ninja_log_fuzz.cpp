// libFuzzer target for the Ninja log reader behind the build report's job timeline and
// `tailor report --ninja-log`: any text is a log or one error, never a crash; jobs stay
// within the bounds, start before they end, and the timeline packs into lanes whose
// count never exceeds the jobs. The first byte picks an offset, the second splits the
// input into a log and a build.ninja.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "outputs/ninja_log.h"
#include "outputs/report_page.h"
#include "util/html.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor;
  if (size < 2) return 0;
  size_t offset = data[0];
  size_t split = data[1] * (size - 2) / 255;
  std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  std::string_view text = rest.substr(0, split), build_ninja = rest.substr(split);
  outputs::NinjaLogLimits limits;
  limits.max_jobs = 64;
  auto log = outputs::parse_ninja_log(text, offset, limits);
  if (!log) return 0;
  if (log->jobs.size() > limits.max_jobs) std::abort();
  outputs::classify_jobs(log->jobs, build_ninja);
  outputs::place_invocations(log->jobs);
  std::vector<html::Interval> iv;
  for (const auto& j : log->jobs) {
    if (j.start_ms > j.end_ms || j.kind.empty()) std::abort();
    iv.push_back({double(j.start_ms), double(j.end_ms)});
  }
  for (size_t lane : html::pack_lanes(iv))
    if (lane >= iv.size()) std::abort();
  nlohmann::json report = {{"run", {{"job_timeline", outputs::jobs_to_json(log->jobs)}}}};
  if (outputs::render_report_html(report).find("<script") != std::string::npos) std::abort();
  return 0;
}
