#include "cli/build_output.h"

#include <fmt/format.h>

#include "util/terminal_style.h"

namespace tailor::cli {

std::string render_build_success(const workflow::ExtensionBuildResult& r) {
  // A wheel from the wheelhouse was fetched, not built here.
  return fmt::format("{} {} for {}\n{}",
                     r.report.wheel_from.empty() ? paint("built", Paint::green, 1)
                                                 : paint("fetched", Paint::green, 1),
                     r.report.wheel, fmt::join(r.report.targets, ", "),
                     outputs::render_summary(r.report));
}

std::string render_build_failure(const workflow::ExtensionBuildResult& r) {
  std::string out;
  if (!r.preflight.ok())
    out += builder::render_preflight(r.preflight, builder::PreflightVerbosity::problems);
  if (r.error_block) {
    out += fmt::format("\n{} (log lines {}-{}):\n", paint("first error", Paint::red, 2),
                       r.error_block->first_line, r.error_block->last_line);
    for (const auto& l : r.error_block->lines) out += fmt::format("  | {}\n", l);
  }
  for (const auto& d : r.diagnoses) {
    out += fmt::format("\n{} (line {}): {}\n",
                       paint(fmt::format("diagnosis [{}]", d.pattern_id), Paint::yellow, 2),
                       d.line_number, d.quoted_line);
    out += fmt::format("  {} {}\n  {}   {}\n", paint("cause:", Paint::bold, 2), d.cause,
                       paint("fix:", Paint::bold, 2), d.fix);
  }
  if (r.status == workflow::BuildStatus::build_failed && r.diagnoses.empty() &&
      !r.report.log_path.empty())
    out += fmt::format(
        "\nno known failure pattern matched; `tailor explain {}` shows the same analysis\n",
        r.report.log_path);
  if (!r.check_output.empty()) out += fmt::format("\n{}\n", r.check_output);
  if (!r.report.log_path.empty() && r.status != workflow::BuildStatus::preflight_failed)
    out += fmt::format("{} {}\nnothing was written to {}\n", paint("full log:", Paint::bold, 2),
                       r.report.log_path,
                       r.report.wheel_path.empty() ? "the output folder" : r.report.wheel_path);
  return out;
}

}  // namespace tailor::cli
