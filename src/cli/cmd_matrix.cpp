// Placeholder until the matrix command lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_matrix(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'matrix' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
