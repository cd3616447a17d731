// Placeholder until `tailor build torch` lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_build_torch(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'build torch' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
