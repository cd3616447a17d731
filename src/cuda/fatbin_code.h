// What one fatbin entry holds, in the CUDA model: the one conversion from a fatbin entry's
// header fields (its kind, its arch number, the `a`/`f` flags) to a CudaTarget. formats
// reads those fields from untrusted bytes and knows no CUDA rules, and cuda may not include
// formats (ARCHITECTURE.md), so the conversion takes the plain values; `fatbin_code(entry)`
// copies them from a formats::FatbinEntry (or any value with the same four fields).
//
// SASS (a cubin, kind 2) and PTX (kind 1) are targets the driver loads. LTO IR (kind 8,
// nvcc's `code=lto_<arch>`) is not: the library links it itself (nvJitLink), so it has no
// CudaTarget and `is_lto_ir()` says so; "lto_90" is only its display name. Any other kind,
// an arch number that is no CC (below 10, above k_max_fatbin_arch) or both flags at once
// is not a target either. Compare and group by FatbinCode or CudaTarget; render `name()`
// only at the output.
#pragma once
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "cuda/cuda_target.h"

namespace tailor::cuda {

/// The kind field of a fatbin entry header (formats/fatbin.h reads it; the values are
/// fixed by NVIDIA's format).
inline constexpr uint16_t k_fatbin_kind_ptx = 1;
inline constexpr uint16_t k_fatbin_kind_cubin = 2;
inline constexpr uint16_t k_fatbin_kind_lto_ir = 8;

/// The largest arch number read as a CC (99.9). Real entries carry two or three digits
/// (75, 90, 121); a larger number in an entry header is damage, not a future GPU.
inline constexpr uint32_t k_max_fatbin_arch = 999;

struct FatbinCode {
  uint16_t kind = 0;  ///< k_fatbin_kind_*; any other value is a kind this model does not know
  uint32_t arch = 0;  ///< the SM number as decimal: 75, 90, 120
  bool arch_specific = false;  ///< the `a` flag (sm_90a)
  bool family = false;         ///< the `f` flag (sm_100f)

  /// The SASS or PTX target the driver would load; nullopt for LTO IR, unknown kinds, an
  /// arch number that is no CC (0-9, above k_max_fatbin_arch) and `a` and `f` together.
  std::optional<CudaTarget> target() const;
  /// LTO IR (kind 8), whatever its arch: never a loadable target.
  bool is_lto_ir() const { return kind == k_fatbin_kind_lto_ir; }
  /// The display name: the target's ("sm_90a", "compute_120f"); "lto_75" for LTO IR;
  /// "kind4_75" for an unknown kind; "sm_0", "sm_90af" for SASS/PTX that is no target.
  std::string name() const;

  bool operator==(const FatbinCode&) const = default;
  /// Targets first, in CudaTarget's order (sm_75 < sm_90 < compute_90 < sm_100); then LTO
  /// IR by arch (lto_50 < lto_100); then SASS/PTX that is no target, then unknown kinds,
  /// each by kind, arch and flags.
  std::strong_ordering operator<=>(const FatbinCode& other) const;
};

/// The code of a fatbin entry: its kind, arch and flags copied from the header that
/// formats read (formats::FatbinEntry).
template <class Entry>
requires requires(const Entry& e) {
  e.kind;
  e.arch;
  e.arch_specific;
  e.family;
}
FatbinCode fatbin_code(const Entry& e) {
  return {static_cast<uint16_t>(e.kind), static_cast<uint32_t>(e.arch),
          static_cast<bool>(e.arch_specific), static_cast<bool>(e.family)};
}

}  // namespace tailor::cuda
