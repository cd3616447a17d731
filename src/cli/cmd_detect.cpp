// Placeholder until the detect command lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_detect(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'detect' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
