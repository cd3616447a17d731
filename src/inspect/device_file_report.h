// Device code shipped as files of its own (formats/device_file.h: cubins, PTX text, fatbin
// files), as inspect counts it: each file under its targets, with entries and bytes as a
// library's fatbin entries are counted, and the files grouped per folder. A package loads
// such files itself and picks the one for the GPU at run time, so a folder of them is judged
// as one unit, as a library whose fatbin holds the same targets would be (verdicts.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "formats/device_file.h"
#include "inspect/library_report.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::inspect {

/// One standalone device file: a cubin or PTX file is one entry of its target (its bytes
/// are the file's); a fatbin file holds the entries of its containers.
struct DeviceFile {
  std::string path;  // the wheel member, or the file
  formats::DeviceFileKind kind = formats::DeviceFileKind::none;
  uint64_t file_size = 0;
  uint64_t member_compressed_bytes = 0;  // size inside the wheel (0 outside a wheel)
  std::vector<TargetStats> targets;      // canonical order (cuda::FatbinCode's)
};

/// Analyzes a file classify_device_file called `kind` (given whole, or mapped). Errors (a
/// cubin whose sections run past its end, a fatbin whose sizes lie, PTX without a target
/// name) name the path and the offset, as analyze_library's do.
Expected<DeviceFile> analyze_device_file(Bytes file, std::string path, formats::DeviceFileKind kind,
                                         const LibraryOptions& options = {});

/// A PTX file from its first bytes alone (parse_ptx_header reads no more): what a
/// streamed member needs.
Expected<DeviceFile> analyze_ptx_head(Bytes head, std::string path, uint64_t file_size);

/// The same for a file on disk (mapped; only the pages its headers live on are read, but a
/// fatbin file's entry headers are walked).
Expected<DeviceFile> analyze_device_file_at(const std::string& path, formats::DeviceFileKind kind,
                                            const LibraryOptions& options = {});

/// One target of a folder's device files, summed over the files that carry it.
struct DeviceFolderTarget : TargetStats {
  uint64_t files = 0;
};

/// The device files of one folder, with their targets summed.
struct DeviceFolder {
  std::string folder;  // "pkg/cubins" ("" for the top of a wheel)
  uint64_t files = 0, bytes = 0;
  uint64_t cubins = 0, ptx = 0, fatbins = 0;
  std::vector<DeviceFolderTarget> targets;  // canonical order
};

/// The folders of `files`, in path order.
std::vector<DeviceFolder> device_folders(const std::vector<DeviceFile>& files);

/// "pkg/cubins/" for a folder ("./" for the top): how reports and verdicts name it.
std::string device_folder_label(const DeviceFolder& folder);

}  // namespace tailor::inspect
