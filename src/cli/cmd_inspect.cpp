// `tailor inspect WHEEL|LIB|DIR...`: what is inside, what it needs, and verdicts for CI.
// Exit 0 when every check holds, 1 when a finding fails the run (inspect_outcome.h: a
// verdict, the RECORD check, a manylinux tag the CUDA and CPU libraries do not fit), with
// one stderr line naming why; findings that only warn get a stderr line each and exit 0.
// Exit 2 for unreadable or malformed input (one error line, nothing on stdout).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "inspect/inspect_outcome.h"
#include "inspect/inspect_report.h"
#include "inspect/render.h"
#include "inspect/verdicts.h"
#include "util/files.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"

namespace tailor::cli {

namespace {

struct InspectArgs {
  std::vector<std::string> paths;
  bool json = false;
  bool all_libraries = false;
  bool verify_payloads = false;
  unsigned threads = 0;
  std::vector<std::string> gpu, require, exact;  ///< once per flag given: each may repeat
  std::string html;                              // --html FILE
};

int run_inspect(const InspectArgs& args) {
  inspect::InspectOptions options;
  options.verify_payloads = args.verify_payloads;
  options.threads = args.threads;
  // The verdict flags first, read once (each may repeat, as on every command): a typo in
  // --gpu should not cost a 2 GB read.
  auto targets = inspect::resolve_verdict_specs({args.gpu, args.require, args.exact});
  if (!targets) return report_error(targets.error().message, k_exit_bad_input);
  auto report = inspect::inspect_paths(args.paths, options);
  if (!report) return report_error(report.error().message, k_exit_bad_input);
  auto verdicts = inspect::evaluate(*report, *targets);
  if (!verdicts) return report_error(verdicts.error().message, k_exit_bad_input);
  const inspect::Verdicts* shown = targets->any() ? &*verdicts : nullptr;
  // The page first: a FILE that cannot be written is bad input, before anything is printed.
  if (!args.html.empty()) {
    auto written = write_file_atomic(args.html, inspect::render_html(*report, shown, args.paths));
    if (!written) return report_error("--html: " + written.error().message, k_exit_bad_input);
  }

  const auto outcome = inspect::judge(*report, shown);
  const int code = outcome.failed() ? k_exit_failed : k_exit_ok;
  if (args.json) {
    auto doc = inspect::to_json(*report, shown);
    doc["outcome"] = {
        {"exit", code}, {"failures", outcome.failures}, {"warnings", outcome.warnings}};
    std::cout << doc.dump(2) << "\n";
  } else {
    inspect::TextOptions text;
    text.all_libraries = args.all_libraries;
    std::cout << inspect::render_text(*report, shown, text);
  }
  std::cout.flush();
  // Every warning and every failed run says why on stderr, one line each: the report on
  // stdout may be long, or go to a file.
  for (const auto& w : outcome.warnings)
    std::fprintf(stderr, "%s %s\n", paint("tailor inspect: warning:", Paint::yellow, 2).c_str(),
                 terminal_safe(w).c_str());
  if (outcome.failed())
    std::fprintf(stderr, "%s %s\n", paint("tailor inspect: exit 1:", Paint::red, 2).c_str(),
                 terminal_safe(outcome.failure_line()).c_str());
  return code;
}

}  // namespace

void setup_inspect(CLI::App& sub, RunFn& run) {
  auto args = std::make_shared<InspectArgs>();
  sub.add_option("paths", args->paths, "Wheels (.whl), ELF libraries or directories")->required();
  sub.add_flag("--json", args->json, "Machine-readable output (stable field names)");
  // One value per --gpu (repeat it for several): the paths after it stay paths.
  sub.add_option("--gpu", args->gpu,
                 "Verdict: how this GPU runs each library (T4G, 9.0, H100, sm_120 ...); repeat it "
                 "for several")
      ->allow_extra_args(false);
  sub.add_option("--require", args->require,
                 "Verdict: every library with device code has these targets; repeat it for several")
      ->allow_extra_args(false);
  sub.add_option(
         "--exact", args->exact,
         "Verdict: every library with device code has exactly these targets; repeat it for several")
      ->allow_extra_args(false);
  sub.add_flag("--verify-payloads", args->verify_payloads,
               "Decompress every fatbin entry and check its size");
  sub.add_option(
         "--html", args->html,
         "Also write a self-contained HTML page (bars per target and library, verdicts) to FILE")
      ->type_name("FILE");
  sub.add_flag("--all", args->all_libraries, "Full detail also for libraries without device code");
  sub.add_option("--threads", args->threads, "Threads for wheel members (default: all cores)");
  sub.callback([&run, args] { run = [args] { return run_inspect(*args); }; });
}

}  // namespace tailor::cli
