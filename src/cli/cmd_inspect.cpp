// Placeholder until the inspect command lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_inspect(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'inspect' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
