// The record of one build: inputs, resolved environment, toolchain, time, jobs, cache
// hits, the wheel (name, sha256, size, bytes per target) and the checks it passed.
// One model, two renderers: JSON (written beside the wheel) and a short human summary.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_settings.h"
#include "governor/memory_governor.h"
#include "outputs/ninja_log.h"

namespace tailor::outputs {

/// warning: the check ran and found what `tailor inspect` warns about; it does not stop the build.
enum class CheckStatus { passed, failed, skipped, warning };
std::string_view check_status_name(CheckStatus s);  // "passed", "failed", "skipped", "warning"

struct CheckResult {
  std::string name;  ///< "targets", "import", "cpu-tests", "gpu-smoke"
  CheckStatus status = CheckStatus::skipped;
  std::string detail;  ///< why skipped / what failed / what ran
};

/// What a wheel was built from and with: written into the wheel as
/// `<name>.dist-info/tailor-provenance.json` and into the report. The wheel's copy holds
/// only what decides the wheel's bytes, so it is the same on every machine that builds
/// the same source with the same plan: no times of the run, no paths, no host name, no
/// job counts or compiler caches (those are named in `left_out` and kept in the report).
struct BuildProvenance {
  std::string tool_version;
  std::string package, recipe;
  std::vector<std::string> targets;
  std::string source_kind;  ///< "example", "directory", "sdist", "index", "git", "torch-source"
  std::string source_name;  ///< sdist file name, NAME==VERSION, git URL@ref; empty for folders
  std::string digest_kind;  ///< "sdist-sha256", "git-commit", "tree-sha256"
  std::string digest;
  int64_t source_date_epoch = 0;
  std::string epoch_from;
  std::map<std::string, std::string>
      toolchain;  ///< versions: nvcc, gcc, python, torch, ninja, cmake
  std::map<std::string, std::string> environment;  ///< plan variables that decide the bytes
  std::vector<std::string> left_out;  ///< plan variables that do not (jobs, caches, paths)
  std::string compressor;             ///< "zlib 1.2.13, level 6"
  std::string profile;                ///< the recipe's restriction profile (--profile), "" none
  /// CUDA units the build split with nvcc -split-compile=K on their own (K changes their
  /// bytes): source in the package -> K. A rebuild from the provenance splits the same.
  std::map<std::string, int> split_units;
  /// The torch the wheel pins ("torch==2.11.0") when its libraries link torch, "" else: the
  /// same requirement as its METADATA's (inspect/torch_pin.h).
  std::string torch_requirement;
};

/// Splits a plan's environment: variables naming parallelism (`parallel_variables`), a
/// path on this machine (an absolute path in the value: toolkit root, compilers, cache
/// wrappers) or SOURCE_DATE_EPOCH (a field of its own) go to `left_out`, the rest to
/// `environment`. Toolchain values lose a trailing " (/path)".
void fill_provenance_environment(BuildProvenance& provenance,
                                 const std::map<std::string, std::string>& env,
                                 const std::vector<std::string>& parallel_variables);
void fill_provenance_toolchain(BuildProvenance& provenance,
                               const std::map<std::string, std::string>& toolchain);
/// The wheel's tailor-provenance.json (sorted keys, two-space indent, a final newline).
std::string provenance_file_text(const BuildProvenance& provenance);

struct BuildReport {
  // inputs
  std::string tool_version;
  std::string package;               ///< distribution name
  std::string source;                ///< as given: dir, sdist, NAME==VERSION, git URL@ref
  std::string source_kind;           ///< "directory", "sdist", "index", "git", "example"
  std::vector<std::string> targets;  ///< canonical names asked for: "sm_75"
  std::string targets_spec;          ///< as given, e.g. "--arch 7.5" or "GPU 0: Tesla T4 (7.5)"
  std::string recipe;
  /// --platform of a cross build ("aarch64"); "" for the host's own.
  std::string platform;
  // resolved environment and toolchain
  std::map<std::string, std::string> env;
  std::vector<std::string> unset_env;
  std::map<std::string, std::string> toolchain;  ///< nvcc, gcc, python, torch, ninja, ccache
  std::string python;
  // run
  std::string started_at;  ///< ISO 8601 UTC
  double duration_s = 0;
  /// Where the time went, in order: "inputs", "toolchain", "prepare", "build" (pip or
  /// CMake, compiles and link), "verify", "import", "tests", "publish" (the report is
  /// written during publish, so its own phase is not in it).
  struct Phase {
    std::string name;
    double seconds = 0;
  };
  std::vector<Phase> phases;
  int jobs = 0;
  std::string jobs_reason;
  cache::CacheTool cache_tool = cache::CacheTool::none;
  std::optional<uint64_t> cache_hits, cache_misses;
  std::string cache_storage;  ///< "local ~/.cache/sccache", "redis://host:6379": no secrets
  uint64_t cache_errors = 0;  ///< storage reads/writes that failed
  /// Hits and misses per step kind: "C/C++", "CUDA (nvcc)", "PTX (cicc)", "cubin (ptxas)"
  /// (sccache; ccache counts whole compiles and leaves this empty).
  std::map<std::string, std::pair<uint64_t, uint64_t>> cache_categories;
  /// --dist: where compiles were sent and how many went (sccache's counts, this build's own).
  struct Dist {
    std::string scheduler_url, client_config;
    uint64_t compilations = 0, dist_compiles = 0, dist_errors = 0, not_distributable = 0;
    std::map<std::string, uint64_t> per_server;
    std::vector<std::string> notes;  ///< what ran locally and why
  };
  std::optional<Dist> dist;
  /// Where the build's steps saw the work folder: the fixed path (workpath/fixed_path.h:
  /// the same bytes from any folder) and the route that gave it ("namespace", "bwrap",
  /// "folder"), or the folder itself (route "none") with `work_path_note`, the warning
  /// that says why and what would fix it (no namespace could be made, --dist).
  std::string work_path;
  std::string work_path_route;
  std::string work_path_note;
  std::string work_path_tried;  ///< the better routes tried and why each was not taken
  bool sandbox = false;  ///< --sandbox: no network, writes only to the work folder and the cache
  /// Compile steps an earlier (perhaps interrupted) run in the same work folder had
  /// already done, of all the build's compile steps; `units_source` says how that was
  /// counted. Unset when unknown (no Ninja lines, no earlier run).
  std::optional<uint64_t> units_reused, units_total;
  std::string units_source;
  /// How parallelism was decided while the build ran: the memory governor's record, or
  /// the static count and why (unset for builds that never ran).
  std::optional<governor::GovernorReport> governor;
  /// Compile jobs from the build folder's .ninja_log (what this run appended), on one
  /// timeline in ms; at most NinjaLogLimits::max_jobs, the rest counted in job_timeline_dropped.
  std::vector<NinjaJob> job_timeline;
  uint64_t job_timeline_dropped = 0;
  /// nvcc's -split-compile=K given to every CUDA unit (0: none); each split job says it too.
  int split_compile = 0;
  /// What tailor took back from the package's own build choices, one line each with the
  /// package's file and line ("setup.py:31: nvcc -arch=compute_50 (extension foo) replaced
  /// by the requested targets (9.0)"), as the build driver said them.
  std::vector<std::string> package_choices;
  /// A known API removal bridged in tailor's copy of the source (compat/bridge.h), with the
  /// package's file and line and the release that removed the API.
  struct CompatChange {
    std::string file;
    size_t line = 0;
    std::string removal, from, to, removed_in;
    std::string text;  ///< the summary's line
  };
  std::vector<CompatChange> compat_changes;
  /// Removals the source uses that were left alone, and why.
  std::vector<std::string> compat_left_alone;
  /// Requested targets the package builds as their arch-specific variant, because its
  /// kernels need that variant's instructions: "sm_90" -> "sm_90a". Verification expects
  /// the variant for them.
  std::map<std::string, std::string> package_variants;
  /// CUDA units split on their own because they set the wall (learned unit times), or as a
  /// reproduced wheel's provenance says: source in the package -> K.
  std::map<std::string, int> split_units;
  /// Compile units whose time is known, from an earlier build of the same key
  /// (governor/governor_profile.h) or measured for the recipe (data/build/unit_times.toml):
  /// the build started them longest first. 0: nothing known, CUDA units first, source order.
  size_t units_known = 0;
  /// Where those times come from: "earlier builds on this machine", or how the times
  /// shipped in data/build/unit_times.toml were measured.
  std::string unit_times_from;
  // result
  std::string wheel;       ///< file name
  std::string wheel_path;  ///< published path
  /// Where the wheel came from when it was not compiled: the wheelhouse file it was fetched
  /// from (`tailor build --wheelhouse`); "" when built.
  std::string wheel_from;
  std::string sha256;
  uint64_t size = 0;
  std::map<std::string, uint64_t> bytes_per_target;
  std::vector<CheckResult> checks;
  std::string log_path;
  bool ok = false;
  std::optional<BuildProvenance> provenance;  ///< set once the source is identified
  /// What only `tailor build torch` reports, beside the rest of this one record.
  struct Torch {
    nlohmann::json plan;  ///< the TorchPlan, as `tailor plan --json` writes it
    std::vector<std::string> targets_verified;  ///< in libtorch_cuda.so
    std::string manylinux_needed;               ///< the tag the libraries need
    nlohmann::json import_check;                ///< what the clean venv's torch said
    std::string gpu_smoke_test;                 ///< "ok", or "skipped (...)"
    std::vector<std::string> runtime_packages;  ///< the apt packages of the runtime image
  };
  std::optional<Torch> torch;
};

/// Seconds from the first compile job's start to the last one's end (the ninja log's
/// timeline); nullopt without jobs.
std::optional<double> compile_span_s(const std::vector<NinjaJob>& jobs);
nlohmann::json to_json(const BuildReport& report);
nlohmann::json to_json(const BuildProvenance& provenance);
/// Eight lines or so for people: wheel, size, targets with bytes, time, jobs, cache, checks.
std::string render_summary(const BuildReport& report);

}  // namespace tailor::outputs
