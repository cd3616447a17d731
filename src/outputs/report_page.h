// The build report as one self-contained HTML page (util/html.h): the compile jobs on a
// timeline (run.job_timeline, from Ninja's log, lanes packed so parallel jobs show), the
// slowest translation units, the memory governor's curve (run.memory.series), the
// compiler cache (run.cache), the checks and the bytes per target. Written beside every
// `<wheel>.report.json` and by `tailor report REPORT.json --html OUT.html`.
//
// It reads the report's JSON, not the BuildReport struct, so it renders reports of
// `tailor build` and of `tailor build torch` alike, and reports written by other versions:
// a section that is missing or malformed is left out with a short note, never an error.
// Every string from the report is escaped; counts are bounded.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tailor::outputs {

std::string render_report_html(const nlohmann::json& report);

}  // namespace tailor::outputs
