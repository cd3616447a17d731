// What `tailor build` prints about an extension build's result: the "built" line and the
// failure details (preflight problems, the first error block, diagnoses with their fix,
// where the log is). Colour (`--color`, NO_COLOR) marks the status words only, as on
// inspect and plan: built green, the first error red, a diagnosis yellow.
#pragma once
#include <string>

#include "workflow/extension_build.h"

namespace tailor::cli {

/// stdout after a successful build: "built WHEEL for TARGETS" and the report's summary.
std::string render_build_success(const workflow::ExtensionBuildResult& r);
/// stderr after a failed one, below the "tailor: error:" line.
std::string render_build_failure(const workflow::ExtensionBuildResult& r);

}  // namespace tailor::cli
