// What a build reaches the outside world through, for torch and extension builds alike
// (ninja's shape: the builder over a state and small interfaces). `run_plan`
// (builder/run_plan.h) makes its side effects only through a BuildSession: processes
// (CommandRunner), the files it reads and writes itself (DiskInterface), the caller's
// environment (Environment), the shared cache storage's check, the display, the clock,
// the fixed work path's route and the memory governor's start. `system_session` gives
// the real ones; unit tests hand in fakes and run a whole build with no process and no
// disk (tests/builder/run_plan_test.cpp, tests/workflow/*_steps_test.cpp).
#pragma once
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "builder/build_runner.h"
#include "cache/storage.h"
#include "governor/memory_governor.h"
#include "outputs/build_report.h"
#include "util/disk_interface.h"
#include "util/expected.h"
#include "util/process.h"
#include "workpath/fixed_path.h"

namespace tailor::builder {

/// The caller's environment, read once: what getenv would say, and the whole of it
/// (PATH goes after the toolkit's bin/ folder in the steps' environment).
class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string> variables)
      : m_variables(std::move(variables)) {}
  /// The value; nullopt when unset.
  std::optional<std::string> get(std::string_view name) const;
  /// The value, "" when unset.
  std::string value(std::string_view name) const { return get(name).value_or(""); }
  const std::map<std::string, std::string>& variables() const { return m_variables; }
  void set(const std::string& name, std::string value) { m_variables[name] = std::move(value); }

 private:
  std::map<std::string, std::string> m_variables;
};

struct BuildSession {
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using FixedPathOpener =
      std::function<workpath::FixedPathChoice(const std::string& real, const std::string& fixed,
                                              std::optional<workpath::FixedPathRoute> forced)>;
  using GovernorStarter =
      std::function<Expected<std::unique_ptr<governor::MemoryGovernor>>(governor::GovernorOptions)>;

  CommandRunner& runner;
  DiskInterface& disk;
  /// What the run records (ninja's build log): the caller fills the targets and env, the
  /// run adds the log, the work path, the governor, the cache's counts, --dist's counts,
  /// the job timeline, the reused units and the unit times.
  outputs::BuildReport& report;
  Environment environment;
  /// Whether a shared cache storage answers (cache::check_shared_storage); unset: not asked.
  std::function<Expected<cache::StorageCheck>(const cache::CacheSettings&)> check_storage;
  /// The build step's live progress; null: run_plan makes one for `status` in `style`.
  ProgressDisplay* display = nullptr;
  DisplayStyle style = DisplayStyle::plain;
  /// Headlines ("==> building ..."); null: quiet.
  std::FILE* status = stderr;
  /// Warnings; null: `status`, else stderr.
  std::FILE* warnings = nullptr;
  Clock clock = [] { return std::chrono::steady_clock::now(); };
  /// How the steps see their folder at the fixed path (workpath/fixed_path.h); unset: no
  /// route, the warning says why.
  FixedPathOpener fixed_path;
  /// The memory governor over a jobserver (MemoryGovernor::start); unset: the static count.
  GovernorStarter start_governor;
  /// The machine's usable memory now (the governor's view); unset: probe's.
  std::function<uint64_t()> available_memory;
  /// Where earlier builds' job peaks and unit times are kept (governor_profile.h); "": nowhere.
  std::string profile_path;
  /// Whether a finished build adds its cache counts to the user's ledger (cache_ledger.h).
  bool record_cache_use = true;
  /// The user's folder the build compiled a copy of: a failed step's diagnosis names its
  /// files (diagnose/source_paths.h); "": the paths inside the package.
  std::string diagnose_source_dir;

  /// One headline on `status`.
  void say(std::string_view line) const;
  /// "tailor: warning: ..." on `warnings`, else `status`, else stderr.
  void warn(std::string_view line) const;
};

/// How the real session sees a folder at a fixed path: tailor's own namespace, bubblewrap
/// on PATH, or the real fixed folder (workpath/fixed_path.h), best first.
BuildSession::FixedPathOpener system_fixed_path(CommandRunner& runner);

/// The real session: the system's file system, the process environment, the cache storage's
/// check, the fixed path's routes (tailor's own namespace, bubblewrap, the real fixed
/// folder), the memory governor and the learned records in the user's cache folder.
/// `disk` null: the real file system.
BuildSession system_session(CommandRunner& runner, outputs::BuildReport& report, std::FILE* status,
                            DisplayStyle style, DiskInterface* disk = nullptr);

}  // namespace tailor::builder
