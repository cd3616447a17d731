// `tailor __governed --build-dir DIR --work-dir DIR [--max-jobs N] [--timeout SECONDS]
//  [--prior-job-mib MIB] [--report FILE] TARGET...` (hidden: not in help, completions or the
// man page): chosen Ninja targets of a configured tree built under the one builder and its
// memory governor, each unit's time and peak in the report (workflow/governed_targets.h).
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/build_interrupt.h"
#include "cli/commands.h"
#include "workflow/governed_targets.h"

namespace tailor::cli {

namespace {
bool parse_count(const std::string& text, int64_t& value) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && p == text.data() + text.size();
}
}  // namespace

int run_governed_command(const std::vector<std::string>& args) {
  workflow::GovernedOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    int64_t n = 0;
    if (a == "--") {
      o.targets.insert(o.targets.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (!a.starts_with("--")) {
      o.targets.push_back(a);
      continue;
    }
    if (!has_value) return report_error("__governed: " + a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--build-dir") {
      o.build_dir = v;
    } else if (a == "--work-dir") {
      o.work_dir = v;
    } else if (a == "--report") {
      o.report_path = v;
    } else if (a == "--max-jobs" || a == "--timeout" || a == "--prior-job-mib") {
      if (!parse_count(v, n) || n <= 0 || n > (int64_t{1} << 30))
        return report_error("__governed: " + a + " '" + v + "': expected a positive number");
      if (a == "--max-jobs")
        o.max_jobs = static_cast<int>(n);
      else if (a == "--timeout")
        o.timeout = std::chrono::seconds(n);
      else
        o.prior_job_bytes = static_cast<uint64_t>(n) << 20;
    } else {
      return report_error("__governed: unknown option " + a);
    }
  }
  auto checked = workflow::check_governed_options(std::move(o));
  if (!checked) return report_error(checked.error().message);
  install_interrupt_handlers();
  SystemCommandRunner runner;
  auto result = workflow::run_governed(*checked, runner, stdout);
  if (int sig = interrupt_signal(); sig != 0) return report_interrupt(sig, false);
  if (!result.ok)
    return report_error(result.stop.empty() ? "the targets did not build" : result.stop,
                        k_exit_failed);
  return k_exit_ok;
}

}  // namespace tailor::cli
