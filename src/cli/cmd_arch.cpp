// Placeholder until the arch command lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_arch(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'arch' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
