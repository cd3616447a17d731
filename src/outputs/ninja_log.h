// The compile jobs of a build, from Ninja's own record: `.ninja_log` in each build folder
// (format v5, v6, v7: a "# ninja log vN" line, then one tab-separated line per finished
// edge: start_ms, end_ms, mtime, output, hash). Times are milliseconds since that Ninja
// invocation started; a new invocation appending to the same log starts again near 0.
// The build report carries the jobs as `run.jobs` (bounded), the report page draws them.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/disk_interface.h"
#include "util/expected.h"

namespace tailor::outputs {

struct NinjaJob {
  std::string output;
  uint64_t start_ms = 0, end_ms = 0;  ///< on the build's timeline once placed (place_invocations)
  std::string kind;                   ///< "cu", "cpp", "c", "link", "other"
  std::string input;                  ///< the edge's first input (classify_jobs), "" unknown
  /// nvcc's -split-compile=K of this unit (0: not split); the report says it per unit.
  int split = 0;
};

struct NinjaLog {
  int version = 0;
  std::vector<NinjaJob> jobs;  ///< in log order
  uint64_t skipped = 0;        ///< malformed lines (field count, numbers, start after end)
  uint64_t dropped = 0;        ///< well-formed lines past the bound
};

struct NinjaLogLimits {
  size_t max_jobs = 20000;
  uint64_t max_ms = uint64_t{1} << 40;  ///< ~35 years: larger times are malformed
  size_t max_output = 4096;             ///< bytes of one output path
};

/// Parses a whole log. The first line must be "# ninja log v5", "v6" or "v7" (an error
/// otherwise: "not a Ninja log (...)"); malformed entries are counted in `skipped`,
/// entries past `max_jobs` in `dropped`. `from_offset` > 0 parses only the lines after
/// that byte (what a run appended to an existing log); a line cut by the offset is
/// skipped. Never throws, bounded by the text's size.
Expected<NinjaLog> parse_ninja_log(std::string_view text, size_t from_offset = 0,
                                   const NinjaLogLimits& limits = {});

/// Ninja's log has one time origin per invocation: a run that starts Ninja several times
/// (one extension after another) appends entries whose times start again near 0. Entries
/// are appended as edges finish, so a drop of end_ms of more than a second marks a new
/// invocation; each is moved to start where the one before it ended (`base_ms` for the
/// first). Returns where the last one ends.
uint64_t place_invocations(std::vector<NinjaJob>& jobs, uint64_t base_ms = 0);

/// A build.ninja's edges: each "build OUT...: RULE IN..." line's first output, rule and
/// first input, in order, at most `max_edges` (linear in the text; never throws). Its
/// `include`d and `subninja` files are not read.
struct NinjaEdge {
  std::string output, rule, input;
};
std::vector<NinjaEdge> parse_ninja_edges(std::string_view build_ninja, size_t max_edges);

/// An edge that is no work of the build: Ninja's phony, CMake's regeneration (RERUN_CMAKE),
/// clean and help, and its utility targets (install, edit_cache: outputs named *.util).
bool is_bookkeeping_edge(std::string_view rule, std::string_view output);

/// A job's kind from the rule that made it, where the rule says what it runs (CMake's
/// CUDA_COMPILER/CXX_COMPILER/C_COMPILER/*_LINKER/CUSTOM_COMMAND, cpp_extension's
/// cuda_compile and link), else from the input's (or output's) extension.
std::string job_kind(std::string_view rule, std::string_view input, std::string_view output);

/// The job kind of an output from the rule that made it (a build.ninja text: "build OUT:
/// RULE IN ..." lines, read up to its first 16 MiB) and the input's extension: ".cu" ->
/// "cu", ".cpp/.cc/.cxx/.C" -> "cpp", ".c" -> "c", a link rule or a .so/.a/executable
/// output -> "link", else "other".
void classify_jobs(std::vector<NinjaJob>& jobs, std::string_view build_ninja);

/// The jobs of the .ninja_log files under `build_root` (searched up to 6 levels and 20000
/// entries deep), each parsed from the offset recorded in `offsets_before` (its size
/// before this run; absent: whole), logs ordered by modification time and placed one
/// after another. Missing folder: no jobs.
struct BuildJobs {
  std::vector<NinjaJob> jobs;
  uint64_t dropped = 0, skipped = 0;
  std::vector<std::string> logs;  ///< the logs read
};
std::vector<std::pair<std::string, uint64_t>> ninja_log_sizes(DiskInterface& disk,
                                                              const std::string& build_root);
BuildJobs collect_build_jobs(DiskInterface& disk, const std::string& build_root,
                             const std::vector<std::pair<std::string, uint64_t>>& offsets_before,
                             const NinjaLogLimits& limits = {});

/// What a build teaches the next one about its compile units: each compile job's time in
/// ms, keyed by its source made relative to the first of `roots` it lies under (the
/// source folder, seen from inside and outside the fixed work path), so the key is the same
/// from any work folder: "csrc/causal_conv1d_bwd.cu". Jobs with no known source, links and
/// other edges are left out; a unit seen twice keeps its longest time.
std::map<std::string, uint64_t> unit_times(const std::vector<NinjaJob>& jobs,
                                           const std::vector<std::string>& roots);

/// `run.jobs`: [{"output", "start_ms", "end_ms", "kind"}] (and "split": K for a split
/// unit), and the counts beside it.
nlohmann::json jobs_to_json(const std::vector<NinjaJob>& jobs);

}  // namespace tailor::outputs
