// Placeholder until the doctor command lands.
#include "cli/commands.h"

namespace tailor::cli {

void setup_doctor(CLI::App& sub, RunFn& run) {
  sub.allow_extras();
  sub.callback([&run] { run = [] { return report_error("'doctor' is not built yet", k_exit_failed); }; });
}

}  // namespace tailor::cli
