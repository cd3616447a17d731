// What any build, torch's or an extension's, reaches the outside world through: the
// process runner, the caller's environment, the shared cache storage's check, the fixed
// work path's route, the progress display and the builder's disk. `system` gives the real
// ones; tests hand in fakes. The one builder's session (builder/build_session.h) is made
// from it in one place; the torch and extension contexts only add what is theirs.
#pragma once
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "builder/build_session.h"
#include "cache/storage.h"
#include "outputs/build_report.h"
#include "util/process.h"

namespace tailor::workflow {

struct BuildContext {
  CommandRunner& runner;
  /// The caller's environment: SOURCE_DATE_EPOCH, TAILOR_CACHE(_URL), SCCACHE_* (which pick
  /// the cache); PATH goes after the toolkit's bin/.
  std::map<std::string, std::string> environment;
  /// Whether a shared cache storage answers (cache::check_shared_storage); unset (tests):
  /// not asked.
  std::function<Expected<cache::StorageCheck>(const cache::CacheSettings&)> check_storage;
  /// How the build sees its folder at a fixed path (workpath/fixed_path.h): `system` tries
  /// tailor's own namespace, bubblewrap, then the real fixed folder (only when
  /// TAILOR_FIXED_PATH_ROUTE forces it); unset (tests): none, with the warning.
  builder::BuildSession::FixedPathOpener fixed_path;
  /// The build step's live progress; null: one made for the session's status stream.
  builder::ProgressDisplay* display = nullptr;
  /// The files the builder reads and writes itself; null: the real file system.
  DiskInterface* disk = nullptr;

  /// The real runner's context: the process environment, the storage check, the routes.
  static BuildContext system(CommandRunner& runner);
  /// The one builder's session over this context, recording into `report`: headlines on
  /// `status` in `style`, warnings on `warnings` (null: `status`); the system's governor and
  /// learned records.
  builder::BuildSession session(outputs::BuildReport& report, std::FILE* status,
                                builder::DisplayStyle style, std::FILE* warnings = nullptr) const;
};

}  // namespace tailor::workflow
