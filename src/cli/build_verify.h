// `tailor build --verify-reproducible WHEEL [SOURCE]`: the rebuild (workflow/reproduce.h)
// and what it prints: the same bytes (exit 0), the members that differ and the toolchain
// differences (exit 1), or why nothing could be rebuilt.
#pragma once
#include <string>

#include "workflow/extension_build.h"

namespace tailor::cli {

int run_verify_reproducible(const std::string& wheel, workflow::ExtensionBuildOptions core,
                            bool json);

}  // namespace tailor::cli
