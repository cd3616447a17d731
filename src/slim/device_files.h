// Device code shipped as files of its own (formats/device_file.h: cubins, PTX text, fatbin
// files) in a wheel or an environment, as `tailor slim --device-files` judges it: each file
// read whole (a cubin's sections must lie in the file, a fatbin's sizes must walk), its
// codes kept or removed by choose_device_file (keep_policy.h), and the outcome added up per
// package and target. A file this tool cannot tell is kept.
//
// How packages pick such a file at run time, and what their checksum manifests mean for a
// file removed beside them, is data/slim/device_file_packages.toml's (read once here:
// `device_file_package_facts`). The rule above holds whatever the package's own rule: it
// removes only what the driver refuses on every kept GPU (CUDA_ERROR_NO_BINARY_FOR_GPU).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/fatbin_code.h"
#include "formats/device_file.h"
#include "slim/keep_policy.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::slim {

/// One device file's codes, each with its bytes: a cubin or PTX file is one code of the
/// whole file's size; a fatbin file has its entries' stored bytes per code.
struct DeviceFileCodes {
  formats::DeviceFileKind kind = formats::DeviceFileKind::none;
  std::vector<cuda::FatbinCode> codes;  ///< canonical order, each once
  std::vector<uint64_t> bytes;          ///< per code
};

/// Reads a whole file that classify_device_file called `kind`. Errors (a cubin cut short or
/// whose sections run past its end, a fatbin whose sizes lie, PTX with no target) give the
/// offset, as inspect's do; the caller prefixes the path.
Expected<DeviceFileCodes> read_device_file(Bytes file, formats::DeviceFileKind kind);

/// One device file judged: its place, size, codes and whether it stays.
struct DeviceFileDecision {
  std::string path;  ///< the wheel member, or the path in the environment
  uint64_t size = 0;
  DeviceFileCodes codes;
  DeviceFileChoice choice;
};

/// Reads a device file's whole bytes and judges them under `policy`; errors name `path`.
Expected<DeviceFileDecision> judge_device_file(Bytes file, formats::DeviceFileKind kind,
                                               std::string path, const KeepPolicy& policy);

/// One target of a package's device files: the files that carry it and their bytes (a
/// fatbin file's bytes are its entries' for this target), kept and removed.
struct DeviceTargetTally {
  cuda::FatbinCode code;
  uint64_t files_kept = 0, bytes_kept = 0, files_removed = 0, bytes_removed = 0;
};

/// What a package's device files came to.
struct DeviceFilePackage {
  std::string package;  ///< the distribution, as its dist-info folder names it
  uint64_t files_kept = 0, bytes_kept = 0, files_removed = 0, bytes_removed = 0;
  std::vector<DeviceTargetTally> targets;  ///< canonical order
  std::vector<std::string> removed;        ///< paths, in order
  std::vector<std::string> kept_reasons;   ///< why files stayed (each reason once, first 8)
};

/// Adds one decision to its package's tally (the targets stay in canonical order).
void add_device_file(DeviceFilePackage& package, const DeviceFileDecision& decision);

/// What data/slim/device_file_packages.toml says of a package that ships device files.
struct DeviceFilePackageFacts {
  std::string name;                         ///< normalized (PEP 503)
  std::string picks;                        ///< how it picks a file at run time
  std::string manifests;                    ///< its checksum files, and why they stay as they are
  std::vector<std::string> manifest_names;  ///< file names never removed or edited
};

/// The facts for a distribution name in any spelling ("flashinfer_cubin"), or null.
const DeviceFilePackageFacts* device_file_package_facts(std::string_view distribution);

/// Whether `path` (inside the package `distribution`) is a manifest the facts name: never
/// removed, never edited.
bool is_package_manifest(std::string_view distribution, std::string_view path);

/// "flashinfer_cubin" of "flashinfer_cubin-0.6.13.dist-info" (a path to it, too).
std::string distribution_of_dist_info(std::string_view dist_info);

}  // namespace tailor::slim
