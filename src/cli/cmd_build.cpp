// Placeholder until the build command lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_build(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'build' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
