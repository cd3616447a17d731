// `tailor stack`: which packages of a requirement list can be installed prebuilt for a
// target machine and its GPUs, which must be built, and which cannot be had, measured from
// the wheels themselves rather than from a hand-kept table.
//
// pip is the resolver and the downloader (stack/pip_target.py runs it with the target's
// marker environment, so a cross-platform resolution drops what the target's pip would
// drop); tailor reads pip's JSON report, downloads the native wheels into a cache keyed by
// sha256 and inspects them (device code per library, CUDA runtime needs, C++ ABI) against
// the target GPUs, the chosen torch and its CUDA. pip's resolution and each wheel's
// inspection are kept for the next run (stack_cache.h). The outcome per package is prebuilt,
// build (from its sdist with `tailor build`), unsupported, or unknown (what it covers is
// neither in tailor's data nor inspected: never called prebuilt), each with one line of
// reason; an unknown one names the command that decides it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cuda/compute_capability.h"
#include "cuda/cuda_version.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::stack {

// ---- facts (data/stack/stack.toml) -----------------------------------------------------
struct BuildNeed {
  std::string requirement, tool, what;
};
struct StackFacts {
  std::string default_target_glibc;
  std::vector<std::string> cuda_runtime_prefixes, cuda_runtime_exceptions;
  std::string torch_cxx11_abi_since;
  std::vector<BuildNeed> build_needs;
};
const StackFacts& facts();
/// The PyTorch wheel index folder for a CUDA version (13.0 -> .../whl/cu130), or for CPU
/// builds with none.
std::string pytorch_index_url(const std::optional<cuda::CudaVersion>& cuda);
/// `--cuda`, read once where it enters: nullopt when not given; an error names the flag.
Expected<std::optional<cuda::CudaVersion>> parse_cuda_flag(std::string_view text);
/// A package from NVIDIA's CUDA runtime family (nvidia-cublas, nvidia-cudnn-cu12 ...).
bool is_cuda_runtime_package(std::string_view normalised_name);
/// Its CUDA major: the -cuNN suffix, else the version's major when >= 13; empty if unknown.
std::string cuda_runtime_major(std::string_view normalised_name, std::string_view version);
/// A Python helper under data/stack/ ("pip_target.py").
std::string python_helper(std::string_view file);

// ---- the target -------------------------------------------------------------------------
struct Target {
  std::string platform;       ///< "x86_64" | "aarch64"
  std::string python;         ///< "3.10"
  std::string glibc;          ///< "2.35": the manylinux tags it accepts
  std::string host_platform;  ///< the resolving interpreter's machine
  bool cross = false;         ///< not the resolving interpreter's platform or Python
  std::string gpu_text;       ///< as given: "T4G", "8.6"
  std::vector<cuda::ComputeCapability> gpus;
  /// "T4G (7.5)", "8.6 and 9.0"
  std::string gpu_label() const;
};
/// pip's --platform values for the target: manylinux_2_X up to its glibc, the legacy
/// aliases, and linux_<arch>.
std::vector<std::string> pip_platform_tags(const Target& target);

// ---- pip --------------------------------------------------------------------------------
struct IndexOptions {
  std::string index_url;
  std::vector<std::string> extra_index_urls, find_links;
  bool no_index = false;
  std::vector<std::string> args() const;
};

/// One distribution of pip's report.
struct ResolvedDist {
  std::string name;  ///< as its metadata spells it
  std::string key;   ///< normalised (PEP 503)
  std::string version;
  std::string url, sha256, filename;
  bool wheel = true;
  bool requested = false;
  std::vector<std::string> requires_dist;
};

/// Parses a pip installation report (version 1). Errors name what is wrong.
Expected<std::vector<ResolvedDist>> parse_pip_report(std::string_view json);
/// The requirement pip could not satisfy ("No matching distribution found for X"), as its
/// normalised name; empty when the text has no such line.
std::string unsatisfied_requirement(std::string_view pip_stderr);
/// The first line of pip's stderr that says what went wrong ("ERROR: ..."), trimmed.
std::string pip_error_line(std::string_view pip_stderr);

// ---- the request and the result -----------------------------------------------------------
struct StackRequest {
  std::vector<std::string> packages;           ///< requirement strings
  std::vector<std::string> requirement_files;  ///< -r
  std::vector<std::string> gpu,
      arch;  ///< one of them (each may repeat), or neither (this machine's GPUs)
  std::string platform, python, glibc, cuda;
  std::string torch;  ///< a version, or an interpreter whose installed torch is used
  IndexOptions index;
  std::string cache_dir;  ///< default ${XDG_CACHE_HOME:-~/.cache}/tailor/stack
  /// --wheelhouse: a `tailor publish` wheelhouse (a folder, file://, http(s)://, s3://). A
  /// package the stack would build whose wheel for the same inputs (sdist sha256, the GPUs'
  /// targets, torch, Python, recipe: wheelhouse::stack_input_mismatch) is published there is
  /// prebuilt for those GPUs, installed from there.
  std::string wheelhouse;
  std::string interpreter = "python3";  ///< runs pip; --install replaces it with the venv's
  std::string self;                     ///< this tailor binary (for builds)
  /// --refresh: pip resolves again even where a stored resolution still holds
  /// (stack_cache.h); the new one replaces it.
  bool refresh = false;
  /// When set, one line per phase (resolving, checking a stored resolution, fetching,
  /// inspecting) while the stack is worked out.
  std::function<void(std::string_view)> progress;
  /// When set, what is under way within a phase: pip's own "Collecting ..." and
  /// "Downloading ..." lines, each wheel inspected.
  std::function<void(std::string_view)> progress_detail;
  /// When set, a stored resolution or inspection that does not read (ignored, redone).
  std::function<void(std::string_view)> warn;
};

enum class Kind { pure, native, cuda, cuda_runtime, torch, source };
std::string_view kind_key(Kind kind);  // "pure", "native", "cuda", "cuda-runtime", "torch", "sdist"
enum class Outcome { prebuilt, build, unsupported, installed, unknown };
std::string_view outcome_key(Outcome outcome);

struct TorchChoice {
  std::string version;                    ///< "2.11.0+cu130"
  std::optional<cuda::CudaVersion> cuda;  ///< the build's CUDA; nullopt for a CPU build
  std::string arch_list;                  ///< TORCH_CUDA_ARCH_LIST of that build, when known
  std::string source;                     ///< "resolved", "installed in PYTHON"
  std::optional<bool> cxx11_abi;
};

struct Row {
  std::string name, key, version;
  Kind kind = Kind::pure;
  bool wheel = false;           ///< a wheel was resolved for the target
  std::string covers = "-";     ///< "yes", "no", "?" (unknown) or "-" (no device code)
  std::string buildable = "-";  ///< "yes", "no" or "-" (not needed)
  Outcome outcome = Outcome::prebuilt;
  std::string reason;                               ///< one line
  std::string wheel_url, wheel_sha256, wheel_file;  ///< prebuilt
  std::string wheelhouse;  ///< prebuilt from --wheelhouse: its location (the wheel_url is in it)
  std::string sdist_url, sdist_sha256, sdist_file;  ///< build
  std::string recipe;                               ///< build: tailor's recipe, or "generic"
  std::vector<std::string> targets;                 ///< device targets found in the wheel
  std::vector<std::string> depends;  ///< normalised names of its resolved dependencies
  bool requested = false;
};

struct StackResult {
  Target target;
  TorchChoice torch;
  std::vector<Row> rows;  ///< dependency order: every package after what it depends on
  std::vector<std::string> notes;
  IndexOptions index;        ///< the indexes resolved against (with --cuda's PyTorch index)
  std::string torch_python;  ///< --torch PYTHON: the interpreter whose torch the stack uses
  std::string pip_command;   ///< the binary resolution, as run
  double resolve_seconds = 0, inspect_seconds = 0;
  unsigned downloads = 0, cache_hits = 0;
  bool resolution_reused = false;   ///< pip's stored resolution still held (stack_cache.h)
  unsigned inspections_reused = 0;  ///< wheels whose stored inspection was used
  bool ok() const;  ///< every row prebuilt, installed or build: none unsupported or unknown
};

/// The target from the request and this machine: --platform/--python/--gpu/--arch, else
/// the resolving interpreter and this machine's GPUs. A GPU or instance that exists on
/// one platform only (T4G, g5g.xlarge: aarch64) implies it; --platform contradicting it is
/// an error (cuda::variant_platform, the rule plan, build and inspect use).
/// `interpreter_path`, when given, gets the resolving interpreter's sys.executable.
Expected<Target> resolve_target(const StackRequest& request, CommandRunner& runner,
                                std::string* interpreter_path = nullptr);

/// torch's row from its resolved wheel: its CUDA build (the local label, else the
/// nvidia-cuda-runtime resolved with it) and the official arch list of that CUDA and the
/// target's platform (cuda/torch_wheels) against the target's GPUs. A list tailor's data
/// lacks is Outcome::unknown (covers "?"), with the commands that decide it: download the
/// wheel for the target and `tailor inspect` it with the target's GPUs. `asked_cuda`: --cuda.
/// The CUDA of a resolved torch from its METADATA (pip's report carries the wheel's
/// Requires-Dist), counting only the requirements pip resolved for the target: the release of
/// the CUDA runtime or cuda-toolkit it requires (nvidia-cuda-runtime-cu12 12.8.90: 12.8), else
/// the major an NVIDIA library's name states (nvidia-cudnn-cu13: 13); neither for a CPU build.
struct TorchCudaStated {
  std::optional<cuda::CudaVersion> release;
  std::optional<int> major_only;
  std::string from;  ///< "nvidia-cuda-runtime-cu12 12.8.90"
};
TorchCudaStated torch_cuda_from_metadata(const ResolvedDist& torch,
                                         const std::vector<ResolvedDist>& all);
void decide_torch(const Target& target, const std::optional<cuda::CudaVersion>& asked_cuda,
                  const ResolvedDist& torch, const std::vector<ResolvedDist>& resolved, Row& row,
                  TorchChoice& choice);

/// Resolves, inspects and decides. Errors are bad input (a requirement pip refuses, a
/// failed resolution, an unreadable file) and name the cause in one line.
Expected<StackResult> run_stack(const StackRequest& request, CommandRunner& runner);

// ---- outputs ------------------------------------------------------------------------------
/// The lock: every prebuilt wheel's URL and sha256, every build's sdist and `tailor build`
/// command, the target and torch. JSON, schema tailor.stack-lock/1; round-trips through
/// read_lock.
std::string render_lock(const StackResult& result);
Expected<StackResult> read_lock(std::string_view text);
/// A bash script that installs the stack into a venv exactly: hashed prebuilt wheels,
/// sdists (sha256 checked) built by tailor build in dependency order, then the
/// verification, which it prints as one JSON line. `bash SCRIPT VENV`.
std::string render_script(const StackResult& result);

struct InstallReport {
  std::string venv;
  std::vector<std::string> steps;  ///< what was done, in order
  std::vector<std::string> failures;
  std::string verification_json;
  bool ok() const { return failures.empty(); }
};
/// Installs into VENV by running render_script's script (so --install and --script are
/// the same steps): the venv is created when missing (with --torch PYTHON, a .pth makes
/// that interpreter's torch importable there), prebuilt wheels, builds in dependency
/// order, then the verification, judged against the target's GPUs. `on_line` gets the
/// script's output. A venv this call created is removed again when the script fails or is
/// interrupted.
Expected<InstallReport> install_stack(const StackResult& result, const std::string& venv,
                                      const StackRequest& request, CommandRunner& runner,
                                      std::function<void(std::string_view)> on_line);
/// Judges the verification JSON of verify_env.py: failed imports, a torch without CUDA
/// or without kernels for the target, a failed GPU smoke test. Empty when it passed.
std::vector<std::string> verification_failures(const StackResult& result, std::string_view json);

}  // namespace tailor::stack
