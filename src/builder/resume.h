// Resuming an extension build in its work folder. The source copy keeps its build/ tree
// between runs (extension_source's sync keeps it and preserves source times), so Ninja
// redoes only what is missing or out of date. The tree is kept only while the build is
// configured the same (same steps, environment, targets): setuptools skips an extension
// whose library is newer than its sources, so a tree built for other targets must go.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "util/disk_interface.h"

namespace tailor::builder {

/// Compares `fingerprint` with the one the previous run saved in `work_dir`; when they
/// differ (or none was saved) removes `source_dir`/build and saves the new one. Returns
/// whether an earlier build tree was kept.
bool keep_build_tree_if_unchanged(DiskInterface& disk, const std::string& source_dir,
                                  const std::string& work_dir, const std::string& fingerprint);

struct ReusedUnits {
  uint64_t reused = 0;
  uint64_t total = 0;
  std::string source;  ///< how it was counted, for the report
};

/// After a run: the steps that a fresh tree needed are saved in `work_dir` (a run on a
/// fresh tree counts them); with a kept tree, reused = that total - the steps run now
/// (`steps_run`: the run's Ninja steps, builder/build_runner.h's NinjaStepCount).
/// Unset when nothing is known.
std::optional<ReusedUnits> account_reused_units(DiskInterface& disk, const std::string& work_dir,
                                                bool tree_kept, std::optional<uint64_t> steps_run);

}  // namespace tailor::builder
