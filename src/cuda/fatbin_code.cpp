#include "cuda/fatbin_code.h"

namespace tailor::cuda {
namespace {

// The order of the classes of code: loadable targets, LTO IR, SASS/PTX that is no target,
// kinds this model does not know.
enum class CodeClass { target, lto_ir, not_a_target, unknown_kind };

CodeClass class_of(const FatbinCode& c, const std::optional<CudaTarget>& target) {
  if (target) return CodeClass::target;
  if (c.is_lto_ir()) return CodeClass::lto_ir;
  if (c.kind == k_fatbin_kind_cubin || c.kind == k_fatbin_kind_ptx) return CodeClass::not_a_target;
  return CodeClass::unknown_kind;
}

}  // namespace

std::optional<CudaTarget> FatbinCode::target() const {
  if (kind != k_fatbin_kind_cubin && kind != k_fatbin_kind_ptx) return std::nullopt;
  if (arch < 10 || arch > k_max_fatbin_arch) return std::nullopt;
  if (arch_specific && family) return std::nullopt;
  // nvcc spells the CC's digits with the last one as the minor: 90 -> 9.0, 121 -> 12.1.
  const ComputeCapability cc{static_cast<int>(arch / 10), static_cast<int>(arch % 10)};
  const ArchVariant variant = arch_specific ? ArchVariant::a
                              : family      ? ArchVariant::f
                                            : ArchVariant::none;
  return kind == k_fatbin_kind_cubin ? sass(cc, variant) : ptx(cc, variant);
}

std::string FatbinCode::name() const {
  if (auto t = target()) return t->name();
  std::string out;
  if (kind == k_fatbin_kind_cubin)
    out = "sm_";
  else if (kind == k_fatbin_kind_ptx)
    out = "compute_";
  else if (kind == k_fatbin_kind_lto_ir)
    out = "lto_";
  else
    out = "kind" + std::to_string(kind) + "_";
  out += std::to_string(arch);
  if (arch_specific) out += 'a';
  if (family) out += 'f';
  return out;
}

std::strong_ordering FatbinCode::operator<=>(const FatbinCode& other) const {
  const auto ta = target(), tb = other.target();
  const CodeClass ca = class_of(*this, ta), cb = class_of(other, tb);
  if (ca != cb) return static_cast<int>(ca) <=> static_cast<int>(cb);
  // Within the targets the conversion is one to one, so equal targets are equal codes.
  if (ca == CodeClass::target) return *ta <=> *tb;
  if (auto c = kind <=> other.kind; c != 0) return c;
  if (auto c = arch <=> other.arch; c != 0) return c;
  if (auto c = arch_specific <=> other.arch_specific; c != 0) return c;
  return family <=> other.family;
}

}  // namespace tailor::cuda
