// `tailor report REPORT.json --html OUT.html`: the page of an existing build report (the
// one `tailor build` writes beside the wheel as <wheel>.report.html), for reports copied
// from CI or written before the page existed. Exit 0 written, 2 unreadable or not JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "outputs/ninja_log.h"
#include "outputs/report_page.h"
#include "util/files.h"
#include "util/text_escape.h"
#include "util/user_file.h"

namespace tailor::cli {

namespace {

constexpr uint64_t k_max_report_bytes = uint64_t{64} << 20;
constexpr uint64_t k_max_ninja_log_bytes = uint64_t{256} << 20;
constexpr size_t k_max_depth = 32;

/// The deepest nesting of [ and { outside strings.
size_t json_nesting(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

struct ReportArgs {
  std::string report;
  std::string html;
  std::string ninja_log;  // --ninja-log: the job timeline from this log instead of the report's
};

int run_report(const ReportArgs& args) {
  auto text = read_text_file(args.report, k_max_report_bytes, BinaryData::refused);
  if (!text) return report_error(text.error().message);
  // Nesting is bounded before parsing: the page's walk over the document recurses.
  if (size_t depth = json_nesting(*text); depth > k_max_depth)
    return report_error(
        fmt::format("{}: nested {} levels deep, more than the {} a build report has", args.report,
                    depth, k_max_depth));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    return report_error(
        fmt::format("{}: not JSON (byte {}); `tailor report` reads the <wheel>.report.json a build "
                    "writes beside its wheel",
                    args.report, e.byte));
  }
  if (!j.is_object())
    return report_error(args.report + ": not a build report (the top level is not an object)");
  if (!args.ninja_log.empty()) {
    auto log_text = read_text_file(args.ninja_log, k_max_ninja_log_bytes, BinaryData::refused);
    if (!log_text) return report_error(log_text.error().message);
    auto log = outputs::parse_ninja_log(*log_text);
    if (!log) return report_error(args.ninja_log + ": " + log.error().message);
    auto build_ninja =
        read_file((std::filesystem::path(args.ninja_log).parent_path() / "build.ninja").string());
    outputs::classify_jobs(log->jobs,
                           build_ninja ? std::string_view(*build_ninja) : std::string_view());
    outputs::place_invocations(log->jobs);
    if (!j["run"].is_object()) j["run"] = nlohmann::json::object();
    j["run"]["job_timeline"] = outputs::jobs_to_json(log->jobs);
    j["run"]["job_timeline_dropped"] = log->dropped;
    if (log->skipped)
      std::fprintf(stderr, "tailor: %s: %llu malformed lines skipped\n",
                   terminal_safe(args.ninja_log).c_str(),
                   static_cast<unsigned long long>(log->skipped));
  }
  auto written = write_file_atomic(args.html, outputs::render_report_html(j));
  if (!written) return report_error("--html: " + written.error().message);
  std::printf("wrote %s\n", args.html.c_str());
  return k_exit_ok;
}

}  // namespace

void setup_report(CLI::App& sub, RunFn& run) {
  auto args = std::make_shared<ReportArgs>();
  sub.add_option("REPORT", args->report, "A build report (<wheel>.report.json)")->required();
  sub.add_option("--html", args->html,
                 "Write the report page (job timeline, memory, cache, checks) to FILE")
      ->type_name("FILE")
      ->required();
  sub.add_option("--ninja-log", args->ninja_log,
                 "Draw the job timeline from this .ninja_log (v5-v7) instead of the report's "
                 "run.job_timeline")
      ->type_name("FILE");
  sub.callback([&run, args] { run = [args] { return run_report(*args); }; });
}

}  // namespace tailor::cli
