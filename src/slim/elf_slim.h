// Cuts device code out of one linked ELF file (a .so or an executable, x86_64 or aarch64),
// keeping it loadable and actually smaller on disk.
//
// 1. Each `.nv_fatbin` container keeps the entries keep_policy.h chooses; the kept entries
//    move up inside it and its fatSize shrinks. A container with no code for the kept GPUs
//    keeps none: it becomes its header alone (16 bytes, fatSize 0), which the CUDA runtime
//    still registers and answers, for its kernels, "no kernel image for this device", as it
//    did for the original on those GPUs (ContainerChoice::no_code_for_kept).
// 2. When every container is referenced by exactly the registration wrappers in
//    `.nvFatBinSegment` (the data pointer at +8, a RELATIVE relocation in a .so), the
//    containers are packed together at the start of `.nv_fatbin` and each wrapper's pointer
//    (relocation addend and the word in place) is moved with its container. The freed tail
//    is one range.
// 3. That range, rounded inward to the largest segment alignment, is cut out of the file:
//    the load segment that holds it is split in two (the part after the cut keeps its
//    virtual addresses, so nothing that refers PC-relatively moves) and every later file
//    offset moves down by the cut, a multiple of every p_align, so offsets stay congruent
//    to addresses. A split needs one more program header: the table moves into the freed
//    range, inside the first half of the split segment (the old table stays where it was,
//    unused). `.nv_fatbin`'s size becomes the packed size.
// Anything else pointing into `.nv_fatbin` (a relocation that is not a wrapper's, a
// container no wrapper names) means containers must stay where they are: entries are still
// compacted inside each container and the freed bytes zeroed (they cost nothing in a
// compressed wheel or image), and the result says the file was not shrunk and why.
// `__nv_relfatbin` (-rdc relocatable device code, read only by a later device link) is
// left as it is.
// 4. Containers a library keeps in its own allocated sections and hands to the driver
//    itself (cuFFT's .data/.ldata, cuBLASLt's .cask_resource, cuSPARSE's .rodata; found by
//    formats::for_each_embedded_fatbin in the sections inspect searches) are chosen from by
//    the same rules and keep their address: the code that loads them names them by
//    address, PC-relatively or through data this tool cannot see. Their kept entries move to
//    the container's start, the header's size shrinks, and the freed bytes up to the old
//    end are zeroed: they lie in the middle of a section, so they cannot be cut out of the
//    file, but zeros compress away in a wheel and can be punched out of a file on disk
//    (LibrarySlim::zeroed). A relocation that points inside such a container (not at its
//    start) keeps it whole. One emptied to its header stays a header at its address
//    (cuModuleLoadData on it: CUDA_ERROR_NO_BINARY_FOR_GPU, as for the original); the
//    embedded scan does not report it (it holds nothing).
// The result accounts for every target left in the file, and why (TargetLeft): it runs on
// a kept GPU, its container was kept whole, it is LTO IR, or it is relocatable device
// code; and it counts the containers emptied to their header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/fatbin_code.h"
#include "slim/keep_policy.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::slim {

struct TargetBytes {
  std::string target;  ///< "sm_90", "compute_120": code.name()
  cuda::FatbinCode code;
  uint64_t kept_bytes = 0, removed_bytes = 0;  ///< entry headers and stored payloads
  uint32_t kept = 0, removed = 0;              ///< entries
};

/// Why a target is still in the file after slimming.
enum class LeftReason {
  runs,          ///< runs on a kept GPU (or was named in --keep)
  whole,         ///< in a container kept whole (detail: why)
  link_time_ir,  ///< LTO IR, kept (LtoPolicy::keep): the library links it itself
  relocatable,   ///< in __nv_relfatbin (-rdc relocatable device code), not slimmed
};
/// "runs_on_kept_gpu", "container_kept_whole", "link_time_ir",
/// "relocatable_device_code"
std::string_view left_reason_key(LeftReason reason);

/// One target left in the file, for one reason. A target can be left for several reasons
/// (sm_80 kept in one container, LTO IR in another): one row each.
struct TargetLeft {
  std::string target;  ///< "sm_86", "compute_90"
  LeftReason reason = LeftReason::runs;
  /// runs: "runs on 8.6" (keep_policy.h, why_kept); whole: the container's note;
  /// link_time_ir: why it stays; relocatable: empty.
  std::string detail;
  uint64_t bytes = 0;  ///< entry headers and stored payloads
  uint32_t entries = 0;
  cuda::FatbinCode code;  ///< what `target` names; rows are ordered by it
};

/// Adds `row` to `rows`, summed into the row of the same code, reason and detail; rows
/// stay ordered by reason, then detail, then code (canonical order: sm_75 < sm_120, SASS
/// before PTX, LTO IR and unknown kinds last).
void add_left(std::vector<TargetLeft>& rows, const TargetLeft& row);

enum class SlimOutcome {
  slimmed,         ///< entries were removed
  unchanged,       ///< device code found, all of it needed
  no_device_code,  ///< no .nv_fatbin
  left_untouched,  ///< not understood: see note; the file is not rewritten
};

std::string_view outcome_key(SlimOutcome outcome);  ///< "slimmed", "unchanged", ...

/// The containers found in one section other than .nv_fatbin/__nv_relfatbin.
struct EmbeddedSection {
  std::string section;  ///< ".data", ".cask_resource"
  uint64_t containers = 0, containers_changed = 0, containers_whole = 0;
  uint64_t containers_emptied =
      0;  ///< of the changed: emptied to their header (no code for the kept GPUs)
  uint64_t device_before = 0, device_after = 0;  ///< entry headers and stored payloads
};

/// A range of the output file, [offset, offset + size).
struct ByteRange {
  uint64_t offset = 0, size = 0;
};

struct LibrarySlim {
  SlimOutcome outcome = SlimOutcome::no_device_code;
  std::string note;                          ///< left_untouched: why; slimmed but not shrunk: why
  uint64_t size_before = 0, size_after = 0;  ///< file bytes (the apparent size)
  /// Fatbin entry bytes (headers and stored payloads) in .nv_fatbin and in the embedded
  /// containers (`embedded` splits out the latter).
  uint64_t device_before = 0, device_after = 0;
  uint64_t relocatable_bytes = 0;  ///< __nv_relfatbin, left as is
  uint64_t containers = 0;         ///< in .nv_fatbin (embedded ones: `embedded`)
  /// These count .nv_fatbin's and the embedded containers together.
  uint64_t containers_whole = 0;  ///< kept whole (ContainerChoice::whole, or pointed into)
  /// Had no code for the kept GPUs before either (ContainerChoice::no_code_for_kept): every
  /// entry removed, emptied to their header.
  uint64_t containers_emptied = 0;
  uint64_t containers_ptx_only = 0;  ///< run on a kept GPU only through PTX JIT (kept)
  uint64_t containers_pinned =
      0;  ///< .nv_fatbin containers that kept their address (named by code, not only by a wrapper)
  uint64_t embedded_containers() const {
    uint64_t n = 0;
    for (const auto& e : embedded) n += e.containers;
    return n;
  }
  /// Of those, the ones emptied to their header: a re-read's embedded scan does not find them.
  uint64_t embedded_emptied() const {
    uint64_t n = 0;
    for (const auto& e : embedded) n += e.containers_emptied;
    return n;
  }
  bool packed = false;               ///< containers packed and the file cut
  bool split = false;                ///< a load segment was split (program headers moved)
  std::vector<TargetBytes> targets;  ///< sorted by target
  /// Every target left in the file (.nv_fatbin, embedded containers and __nv_relfatbin),
  /// and why (add_left's order). Empty for left_untouched (nothing was read) and no_device_code.
  std::vector<TargetLeft> left;
  /// Containers kept whole or emptied (no code for the kept GPUs), one line each (at most
  /// 20; the counters count all).
  std::vector<std::string> warnings;
  /// Sections other than .nv_fatbin holding containers, in file order.
  std::vector<EmbeddedSection> embedded;
  /// Freed bytes left in the output as zeros (embedded containers, and the part of
  /// .nv_fatbin's freed tail that the cut could not take), each run of at least 4 KiB, in
  /// file order: what a filesystem can punch out (punch_zeroed_ranges, slim_paths.h).
  /// Filled by a dry run too.
  std::vector<ByteRange> zeroed;
  uint64_t zeroed_bytes = 0;     ///< all freed bytes written as zeros, any run length
  uint64_t punchable_bytes = 0;  ///< of `zeroed`, the whole 4 KiB pages
  /// On disk (st_blocks * 512), filled by slim_paths for files it reads and writes; 0 when
  /// unknown (a dry run's after, a library inside a wheel).
  uint64_t disk_before = 0, disk_after = 0;
  uint64_t punched_bytes =
      0;  ///< disk bytes freed by punching holes (disk before - after, of the written file)
  std::string punch_note;  ///< why holes were not punched (the filesystem refused), else empty
  uint64_t removed_bytes() const { return device_before - device_after; }
};

/// What a file holds in .nv_fatbin and in embedded containers (the sections slim_elf
/// searches): containers, entries and entry bytes. __nv_relfatbin is not counted. A
/// header-only container counts in .nv_fatbin; embedded, the scan does not find it.
/// `file_is_mapped`: as for slim_elf, the pages searched are handed back behind the scan.
struct DeviceCount {
  uint64_t fatbin_containers = 0, embedded_containers = 0, entries = 0, bytes = 0;
};
Expected<DeviceCount> count_device_code(Bytes file, bool file_is_mapped = false);

/// Plans the slimming of the ELF file `file` and, when `out_fd` is not -1 and entries are
/// removed, writes the whole result to `out_fd` (from offset 0). Damaged input (an ELF or
/// fatbin that does not parse) is an error; a layout this tool does not handle is
/// SlimOutcome::left_untouched with the reason. `file_is_mapped`: the bytes are a read-only
/// map of a file, whose pages may be handed back to the kernel once written out (never set
/// it for bytes in ordinary memory: handing those back would zero them).
Expected<LibrarySlim> slim_elf(Bytes file, const KeepPolicy& policy, int out_fd = -1,
                               bool file_is_mapped = false);

}  // namespace tailor::slim
