// CUDA fatbin containers (.nv_fatbin, __nv_relfatbin, and containers that libraries keep in
// their own sections and load themselves): the container and entry headers as
// reverse-engineered by several public projects and checked against CUDA 13.0 nvcc output.
// Only headers are read; payload bytes are touched only by decompress_entry (decompress.h),
// when a caller asks for it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::formats {

enum class FatbinCompression { none, lz4, zstd, unknown };

/// "none", "lz4", "zstd", "unknown".
std::string_view compression_name(FatbinCompression c);

inline constexpr uint16_t k_fatbin_kind_ptx = 1;
inline constexpr uint16_t k_fatbin_kind_cubin = 2;
/// NVVM LTO IR (payload magic 0x7F4E43ED), linked at run time by the library itself
/// (cuFFT's LTO callbacks): nvcc's `code=lto_<arch>`. The driver does not load it.
inline constexpr uint16_t k_fatbin_kind_lto_ir = 8;

struct FatbinEntry {
  uint16_t kind = 0;  // 1 PTX, 2 cubin
  uint32_t arch = 0;  // SM number as decimal: 75, 90, 120
  bool arch_specific = false, family = false;
  uint64_t header_offset = 0;      // in the file
  uint32_t header_size = 0;        // payload starts at header_offset + header_size
  uint64_t stored_size = 0;        // on-disk payload bytes (padded to 8)
  uint64_t compressed_size = 0;    // exact compressed length, 0 if not compressed
  uint64_t uncompressed_size = 0;  // exact length after decompression (= stored if none)
  FatbinCompression compression = FatbinCompression::none;
  uint64_t flags = 0;
  std::string identifier;  // source file name recorded by nvcc, may be empty; cut at 4 KiB

  // No name here: what an entry is, as a target, is the CUDA model's (cuda::fatbin_code(entry)
  // and FatbinCode::name(), cuda/fatbin_code.h); formats' own messages give the raw fields.
  uint64_t payload_offset() const { return header_offset + header_size; }
};

struct FatbinContainer {
  uint64_t offset = 0;  // of the 16-byte header, in the file
  uint64_t size = 0;    // 16 + fatSize
  std::vector<FatbinEntry> entries;
};

/// Walks the containers of one section. section_file_offset places the section in the
/// file so that offsets in results and errors are file offsets. Every size is checked:
/// a container or entry that runs past its bound, a header smaller than 64 bytes or a
/// walk that would not advance is an error naming the file offset. So is a container with
/// more than 65536 entries or more than 1 MiB of entry identifiers in all. A container of
/// its header alone (payload size 0: what `tailor slim` leaves of one with no code for the
/// kept GPUs) is a container with no entries, and the walk goes on after it.
Expected<std::vector<FatbinContainer>> parse_fatbin_section(Bytes section,
                                                            uint64_t section_file_offset);

/// The same walk, handing each container to `visit` as soon as it is read, so that a
/// caller over a memory map can release the pages behind it (a 456 MB library has
/// thousands of containers; keeping their pages mapped costs hundreds of MB of RSS).
/// A visit error stops the walk and is returned.
using FatbinVisitor = std::function<Expected<void>(FatbinContainer&&)>;
Expected<void> for_each_fatbin_container(Bytes section, uint64_t section_file_offset,
                                         const FatbinVisitor& visit);

/// Fatbin containers that a library keeps outside .nv_fatbin/__nv_relfatbin, in a section of
/// its own choosing (cuFFT: .data/.ldata, cuBLASLt: .cask_resource, cuSPARSE: .rodata) and
/// hands to the driver itself. The scan looks for the container magic at every offset that
/// is 8-aligned in the address space (section_address + offset; every container in real
/// libraries is, as the ones nvcc places in .nv_fatbin) and keeps a candidate only when its
/// version is 1, its header 16 bytes, header + size stays inside the section and its entries
/// walk as in .nv_fatbin (at least one entry, same checks and caps: a header alone holds
/// nothing, and 16 bytes are too little evidence to call it a container). Candidates that
/// do not validate are skipped, not errors; the scan goes on after each container found, so
/// containers never overlap and a magic inside a container's payload is not another one.
/// `progress` (optional) is called with a file offset below which the scan will read
/// nothing more, after each container and after each 4 MiB searched, so that a caller over
/// a memory map can hand pages back. The only errors: a visit error, and candidates that
/// fail only after many entry headers (hostile input: the work on failed candidates is
/// bounded by the section's size).
using ScanProgress = std::function<void(uint64_t file_offset)>;
Expected<void> for_each_embedded_fatbin(Bytes section, uint64_t section_file_offset,
                                        uint64_t section_address, const FatbinVisitor& visit,
                                        const ScanProgress& progress = nullptr);

/// The same scan, collecting the containers.
Expected<std::vector<FatbinContainer>> find_embedded_fatbins(Bytes section,
                                                             uint64_t section_file_offset,
                                                             uint64_t section_address);

}  // namespace tailor::formats
