#include "cuda/cuda_target.h"

#include "util/strings.h"

namespace tailor::cuda {

std::string CudaTarget::digits() const {
  std::string d = std::to_string(cc.number());
  if (variant == ArchVariant::a) d += 'a';
  if (variant == ArchVariant::f) d += 'f';
  return d;
}

std::string CudaTarget::name() const {
  return (kind == TargetKind::sass ? "sm_" : "compute_") + digits();
}

std::strong_ordering CudaTarget::operator<=>(const CudaTarget& other) const {
  if (auto c = cc <=> other.cc; c != 0) return c;
  if (auto c = static_cast<int>(variant) <=> static_cast<int>(other.variant); c != 0) return c;
  return static_cast<int>(kind) <=> static_cast<int>(other.kind);
}

CudaTarget sass(ComputeCapability cc, ArchVariant variant) {
  return {TargetKind::sass, cc, variant};
}
CudaTarget ptx(ComputeCapability cc, ArchVariant variant) { return {TargetKind::ptx, cc, variant}; }

Expected<CudaTarget> parse_target_name(std::string_view name) {
  CudaTarget t;
  std::string_view rest;
  if (name.starts_with("sm_")) {
    t.kind = TargetKind::sass;
    rest = name.substr(3);
  } else if (name.starts_with("compute_")) {
    t.kind = TargetKind::ptx;
    rest = name.substr(8);
  } else {
    return make_error("not a CUDA target name: '" + std::string(name) +
                      "' (expected sm_XY or compute_XY)");
  }
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    t.variant = rest.back() == 'a' ? ArchVariant::a : ArchVariant::f;
    rest.remove_suffix(1);
  }
  auto cc = compute_capability_from_digits(rest);
  if (!cc) return make_error("not a CUDA target name: '" + std::string(name) + "'");
  t.cc = *cc;
  return t;
}

}  // namespace tailor::cuda
