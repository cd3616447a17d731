// CUDA device code shipped as files of its own rather than inside a host library: a cubin
// (an ELF file whose e_machine is EM_CUDA), PTX text (`.version` and `.target` directives
// at the top) and a fatbin file (containers as in .nv_fatbin, magic at offset 0). Packages
// load such files at run time (cuModuleLoad): flashinfer-cubin ships 16,000 cubins,
// Triton and JIT caches ship PTX and cubins. What a file is is told from its first bytes,
// never from its name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/elf.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::formats {

enum class DeviceFileKind { none, cubin, ptx, fatbin };
/// "cubin", "ptx", "fatbin" ("none" for none).
std::string_view device_file_kind_name(DeviceFileKind kind);

/// How many first bytes classify_device_file needs to tell every kind (a PTX header
/// comes after a few comment lines; nvcc's is under 300 bytes).
inline constexpr size_t k_device_file_head_bytes = 4096;

/// What a file's first bytes (up to k_device_file_head_bytes, or the whole file when it is
/// shorter) say it is: an ELF header with e_machine 190 is a cubin, the fatbin container
/// magic (0xBA55ED50) with version 1 a fatbin, text whose first directive lines are
/// `.version` and then `.target` (comments and blank lines before them) PTX. Anything
/// else, a host ELF file included, is none. Only a claim: the parsers below check it.
DeviceFileKind classify_device_file(Bytes head);

/// Whether these first bytes could start PTX text (so that a caller that read only a few
/// bytes knows whether reading k_device_file_head_bytes is worth it).
bool may_start_ptx(Bytes first);

/// The SASS target of a cubin: the SM number from e_flags (ELF ABI version 7: bits 0-7,
/// later: bits 8-15); `a` from e_flags (0x800 / 0x8) or the toolkit note
/// (.note.nv.tkinfo's "-arch sm_90a": CUDA 13 leaves the bit clear on sm_90a), `f` from the
/// note alone (e_flags never records it; cuobjdump shows sm_100f cubins as sm_100).
struct CubinTarget {
  uint32_t arch = 0;  // 75, 90, 100
  bool arch_specific = false, family = false;
};
/// Errors: not EM_CUDA, an SM number of 0, a section (any but SHT_NOBITS) that runs past
/// the end of the file, a tkinfo note whose sizes run past its section.
Expected<CubinTarget> cubin_target(Bytes file, const ElfFile& elf);

/// The `.target` of PTX text: the PTX ISA version and the first target ("sm_90a" gives
/// arch 90 with the `a` flag; PTX is loaded as compute_<arch>).
struct PtxHeader {
  std::string version;  // "9.0"
  uint32_t arch = 0;
  bool arch_specific = false, family = false;
};
/// Errors: no `.version` or `.target` directive in the head, a target that is not
/// sm_<digits>[a|f] or compute_<digits>[a|f].
Expected<PtxHeader> parse_ptx_header(Bytes head);

}  // namespace tailor::formats
