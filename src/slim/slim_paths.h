// `tailor slim` over what users have: single libraries, wheels, and installed
// environments (a virtual environment or a site-packages folder).
//  - A library is rewritten to --out DIR or in place (temporary file beside it, checked,
//    renamed over it with the same permissions).
//  - A wheel is rewritten member by member: libraries with device code are inflated to a
//    private temporary folder, slimmed and deflated again; every other member is copied in
//    its compressed form. RECORD gets the new hashes and sizes, the tags stay, and
//    `<dist-info>/tailor-slim.json` records what was kept and the original's sha256.
//  - Containers embedded in a library's own sections are compacted in place and their freed
//    bytes zeroed (elf_slim.h); a library written to disk (in place, --out, in an
//    environment) has those zeros punched out of the file where the filesystem allows, so
//    its disk usage drops although its size does not.
//  - With `device_files`, device code shipped as files of their own (cubins, PTX, fatbin
//    files: device_files.h) that no kept GPU can load is removed too: from a wheel, member
//    and RECORD row; from an environment, file and RECORD row. On by default (the CLI's
//    --no-device-files turns it off) since an H200 run proved the rule
//    (scripts/gpu_slim_device_files.sh). Checksum manifests stay as they are.
//  - An environment is slimmed in place, distribution by distribution: each library its
//    RECORD lists, then RECORD itself (new rows, plus the tailor-slim.json marker), so
//    `pip uninstall` and `pip check` keep working. One run at a time per environment (an
//    flock on its folder): a second waits, then finds the libraries already slimmed.
// Libraries are processed in parallel. Every output is written beside its destination
// and renamed into place only when complete and re-read: an error or an interrupt leaves
// the input as it was and no partial output.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "formats/wheel.h"
#include "slim/device_files.h"
#include "slim/elf_slim.h"
#include "util/expected.h"

namespace tailor::slim {

inline constexpr const char* k_slim_marker = formats::k_tailor_slim_marker;

struct SlimOptions {
  KeepPolicy policy;
  std::string out_dir;  ///< --out; empty with in_place or dry_run
  bool in_place = false;
  bool dry_run = false;
  unsigned jobs = 0;            ///< worker threads; 0 = one per CPU
  std::string tool = "tailor";  ///< "tailor 0.1.0", recorded in the marker
  /// --device-files: also remove device code files (cubins, PTX, fatbin files) that no kept
  /// GPU can load (choose_device_file); off, they are not even read.
  bool device_files = false;
  /// Called once when another `tailor slim` holds the environment and this run waits for it.
  std::function<void(const std::string& message)> on_wait;
};

enum class InputKind { library, wheel, environment };
std::string_view input_kind_key(InputKind kind);  ///< "library", "wheel", "environment"

struct SlimmedFile {
  std::string path;  ///< inside the wheel or environment; the path itself for a library
  LibrarySlim lib;
};

struct InputSlim {
  std::string input;
  std::string output;  ///< written (or, for a dry run, would be written)
  InputKind kind = InputKind::library;
  std::vector<SlimmedFile> files;            ///< the files with device code, in path order
  uint64_t libraries_scanned = 0;            ///< ELF files looked at
  uint64_t size_before = 0, size_after = 0;  ///< the wheel file, or the library files
  uint64_t installed_before = 0, installed_after = 0;  ///< uncompressed library bytes
  /// On disk (st_blocks * 512): the wheel file, or the library files; after is 0 for a dry
  /// run (not known until written).
  uint64_t disk_before = 0, disk_after = 0;
  uint64_t zeroed_bytes = 0;     ///< freed bytes left as zeros inside sections (LibrarySlim)
  uint64_t punchable_bytes = 0;  ///< of those, whole 4 KiB pages
  uint64_t punched_bytes = 0;    ///< disk bytes freed by punching holes
  std::string punch_note;        ///< the first file whose filesystem refused to punch, why
  /// --device-files: the device code files read, and per package what stayed and went
  /// (packages in name order; those without device files are not listed).
  uint64_t device_files_scanned = 0;
  std::vector<DeviceFilePackage> device_packages;
  /// A wheel or environment an earlier `tailor slim` slimmed (it carries tailor-slim.json):
  /// what it lacks was removed then, not by this run.
  bool slimmed_before = false;
  double seconds = 0;
};

struct SlimReport {
  std::string policy;                ///< KeepPolicy::describe()
  std::vector<std::string> devices;  ///< the kept GPUs, "9.0"
  bool dry_run = false;
  bool device_files = false;  ///< --device-files: device code files were read and judged
  std::vector<InputSlim> inputs;
};

/// Punches the whole filesystem blocks (at least a page) of `ranges` out of the file `fd`
/// (fallocate PUNCH_HOLE | KEEP_SIZE): the bytes read as zeros as before, the file keeps
/// its size, and `du` counts less. Returns why nothing more was punched (a filesystem that
/// cannot, EOPNOTSUPP), or an empty string; never fails the slim.
std::string punch_zeroed_ranges(int fd, const std::vector<ByteRange>& ranges);

/// Slims each path (wheel, library, venv or site-packages folder). Errors name the input.
Expected<SlimReport> slim_paths(const std::vector<std::string>& paths, const SlimOptions& options);

}  // namespace tailor::slim
