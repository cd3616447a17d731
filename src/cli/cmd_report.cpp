// `tailor report REPORT.json --html OUT.html`: the page of an existing build report (the
// one `tailor build` writes beside the wheel as <wheel>.report.html), for reports copied
// from CI or written before the page existed. Exit 0 written, 2 unreadable or not JSON.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "build/report_page.h"
#include "cli/commands.h"
#include "util/files.h"
#include "util/user_file.h"

namespace tailor::cli {

namespace {

constexpr uint64_t k_max_report_bytes = uint64_t{64} << 20;
constexpr size_t k_max_depth = 32;

/// The deepest nesting of [ and { outside strings.
size_t json_nesting(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
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
};

int run_report(const ReportArgs& args) {
  auto text = read_text_file(args.report, k_max_report_bytes, BinaryData::refused);
  if (!text) return report_error(text.error().message);
  // Nesting is bounded before parsing: the page's walk over the document recurses.
  if (size_t depth = json_nesting(*text); depth > k_max_depth)
    return report_error(fmt::format("{}: nested {} levels deep, more than the {} a build report has", args.report, depth,
                                    k_max_depth));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    return report_error(fmt::format("{}: not JSON (byte {})", args.report, e.byte));
  }
  if (!j.is_object()) return report_error(args.report + ": not a build report (the top level is not an object)");
  auto written = write_file_atomic(args.html, build::render_report_html(j));
  if (!written) return report_error("--html: " + written.error().message);
  std::printf("wrote %s\n", args.html.c_str());
  return k_exit_ok;
}

}  // namespace

void setup_report(CLI::App& sub, RunFn& run) {
  auto args = std::make_shared<ReportArgs>();
  sub.add_option("report", args->report, "A build report (<wheel>.report.json)")->required();
  sub.add_option("--html", args->html, "Write the report page (job timeline, memory, cache, checks) to FILE")
      ->type_name("FILE")
      ->required();
  sub.callback([&run, args] { run = [args] { return run_report(*args); }; });
}

}  // namespace tailor::cli
