// The result model of `tailor inspect`: libraries (each the per-library analysis plus how
// its needed libraries are provided and the manylinux tag it fits) and wheels (name, tags,
// RECORD check, target totals, manylinux needed vs claimed). Renderers (render.h) and
// verdicts (verdicts.h) read this model; the build layer calls inspect_paths to verify the
// wheels it makes.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cuda/fatbin_code.h"
#include "inspect/device_file_report.h"
#include "inspect/library_report.h"
#include "inspect/manylinux_policy.h"
#include "util/expected.h"

namespace tailor::inspect {

struct InspectOptions {
  bool verify_payloads = false;  // decompress every fatbin entry and check its size
  unsigned threads = 0;          // 0 = hardware concurrency
};

enum class NeededKind {
  bundled,  // the loader's search (RUNPATH/RPATH) reaches it inside the wheel / among the inputs
  whitelisted,   // on the manylinux whitelist (libc, libstdc++ ...)
  cuda_runtime,  // a CUDA library provided by an nvidia-* wheel or the toolkit
  cuda_driver,   // libcuda.so.1 and friends, from the driver
  torch,         // comes with torch (libc10.so, libtorch_cpu.so ...), loaded by `import torch`
  found,         // on disk, outside the inputs, where the search path resolves it (directories)
  not_found,  // a file of that name is in the wheel (or the inputs), but no search path reaches it
  system,     // anything else: must come from the system
};
/// "bundled", "manylinux-whitelist", "cuda-runtime", "cuda-driver", "torch", "found",
/// "not-found", "system"
std::string_view needed_kind_key(NeededKind kind);

struct NeededLibrary {
  std::string soname;
  NeededKind kind = NeededKind::system;
  std::vector<std::string> wheels;   // nvidia-* wheels providing it (cuda_runtime)
  std::vector<std::string> systems;  // apt packages providing it (cuda_runtime)
  std::string what;                  // cuda_runtime: "CUDA runtime", "cuBLAS" ...
  std::string resolved;  // where the loader finds it: a member / input path, or a file on disk
  std::string via;       // the search entry that found it: "RUNPATH $ORIGIN/../lib"
  std::string
      note;  // not_found: "a file of that name is in the wheel at X, but no RUNPATH reaches it"
};

/// One ELF library: elf's analysis plus the classification of what it needs.
struct InspectedLibrary : LibraryReport {
  std::vector<NeededLibrary> needed_libraries;
  ManylinuxFit manylinux;
  uint64_t member_compressed_bytes = 0;  // size inside the wheel (0 outside a wheel)
  /// Search-path problems: build-machine RUNPATH entries, $LIB/$PLATFORM tokens, entries
  /// relative to the working directory or above the install root, a capped search path.
  std::vector<std::string> loader_warnings;
  /// C++ runtime problems: a library that links torch's libraries but carries its own
  /// static C++ runtime (torch's exceptions crash it).
  std::vector<std::string> runtime_warnings;
};

struct RecordMismatch {
  std::string path;
  std::string
      what;  // "sha256 differs: RECORD abc..., content xyz..." / "size 10 in RECORD, 12 in archive"
};

struct RecordCheck {
  bool present = false;  // the wheel has a RECORD at all
  uint64_t ok = 0;       // members whose hash and size match
  std::vector<RecordMismatch> mismatches;
  std::vector<std::string> unlisted;  // in the archive, not in RECORD
  std::vector<std::string> missing;   // in RECORD, not in the archive
  bool passed() const {
    return present && mismatches.empty() && unlisted.empty() && missing.empty();
  }
};

struct TargetTotal {
  std::string name;  // code.name(), for display
  uint64_t libraries = 0, entries = 0, stored_bytes = 0, uncompressed_bytes = 0;
  std::set<std::string> compression;
  double share = 0;       // stored_bytes / the wheel's installed (uncompressed) bytes
  cuda::FatbinCode code;  // what the entries hold: compare and group by this
};

struct WheelReport {
  std::string path;
  uint64_t file_size = 0;
  std::string name, version, local_label, build;
  std::vector<std::string> tags_from_name, tags_from_wheel_file;
  bool tags_consistent = true;  // the two tag sets are equal
  std::string metadata_name, metadata_version;
  std::vector<std::string> requires_dist;  // METADATA's, as written
  uint64_t members = 0, installed_bytes = 0;
  RecordCheck record;
  std::vector<InspectedLibrary> libraries;
  /// Cubins, PTX and fatbin files of their own (device_file_report.h), in path order.
  std::vector<DeviceFile> device_files;
  std::vector<TargetTotal> targets;  // canonical order, libraries and device files together
  std::string manylinux_needed;      // "manylinux_2_28_x86_64" or "linux_x86_64"
  std::vector<std::string> manylinux_limiting;  // needs/libraries that set it
  std::string manylinux_claimed;                // the platform tags of the name, '.'-joined
  bool claim_ok = true;
  std::string claim_problem;  // why the claim does not hold
  /// Libraries that are another GPU platform's backend (they need a ROCm or oneAPI
  /// runtime: loaded only on such GPUs), in path order.
  struct OtherGpuLibrary {
    std::string path, platform;  // "pkg/libk_rocm64.so", "ROCm"
  };
  std::vector<OtherGpuLibrary> other_gpu_libraries;
  /// The claim checked over the CUDA and CPU libraries only: when only the other
  /// platforms' libraries break it, inspect warns instead of failing (inspect_outcome.h).
  bool claim_ok_without_other_gpu = true;
  std::string claim_problem_without_other_gpu;

  std::vector<std::string> target_names() const;
};

struct InspectReport {
  std::vector<InspectedLibrary> libraries;  // ELF files given directly or found in directories
  std::vector<WheelReport> wheels;
  /// Files and folders under a directory argument that could not be read, each
  /// "PATH: why" (permission denied ...). Listed by both renderers.
  std::vector<std::string> skipped;
  /// Device files given directly or found in directories (device_file_report.h), path order.
  std::vector<DeviceFile> device_files;
  /// Every target in any library or wheel, canonical order (cuda::FatbinCode's).
  std::vector<cuda::FatbinCode> target_codes() const;
  /// The names of target_codes().
  std::vector<std::string> targets_union() const;
};

/// Inspects .whl files, ELF files, device files and directories (searched for both). Unreadable or
/// malformed input is an error naming the file and the offset.
Expected<InspectReport> inspect_paths(const std::vector<std::string>& paths,
                                      const InspectOptions& options = {});

/// Inspects one wheel given as bytes (a mapped file); `path` names it in messages.
Expected<WheelReport> inspect_wheel(Bytes file, const std::string& path,
                                    const InspectOptions& options = {});

}  // namespace tailor::inspect
