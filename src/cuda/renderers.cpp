#include "cuda/renderers.h"

#include <map>

#include "cuda/arch_spec.h"
#include "util/strings.h"

namespace tailor::cuda {

namespace {

// Entries grouped by (CC, variant): which of SASS and PTX the set has for each.
struct Slot {
  bool sass = false;
  bool ptx = false;
};
using Slots = std::map<std::pair<ComputeCapability, ArchVariant>, Slot>;

Slots slots_of(const TargetSet& set) {
  Slots s;
  for (const auto& t : set.targets) {
    auto& slot = s[{t.cc, t.variant}];
    (t.kind == TargetKind::sass ? slot.sass : slot.ptx) = true;
  }
  return s;
}

std::string suffix(ArchVariant v) {
  return v == ArchVariant::a ? "a" : v == ArchVariant::f ? "f" : "";
}

std::string cc_digits(ComputeCapability cc, ArchVariant v) {
  return std::to_string(cc.number()) + suffix(v);
}

/// SASS CCs only, variants dropped: the shape flash-attn and bitsandbytes take.
std::string render_sass_numbers(const TargetSet& set) {
  std::vector<std::string> out;
  for (const auto& t : set.targets) {
    if (t.kind != TargetKind::sass) continue;
    std::string n = std::to_string(t.cc.number());
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return join(out, ";");
}

Expected<TargetSet> parse_sass_numbers(std::string_view text, std::string_view what) {
  TargetSet set;
  for (const auto& piece : split_any(text, "; ,")) {
    auto cc = compute_capability_from_digits(piece);
    if (!cc) return make_error(std::string(what) + ": '" + piece + "' is not a CC number like 80");
    set.add(sass(*cc));
  }
  return set;
}

}  // namespace

std::string render_torch_arch_list(const TargetSet& set) {
  std::vector<std::string> out;
  for (const auto& [key, slot] : slots_of(set)) {
    auto [cc, variant] = key;
    // torch has no `f` spelling: the plain CC is the nearest (see render_losses).
    std::string entry = cc.str() + (variant == ArchVariant::a ? "a" : "");
    if (slot.ptx) entry += "+PTX";
    if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(entry);
  }
  return join(out, ";");
}

std::string render_cmake_architectures(const TargetSet& set) {
  std::vector<std::string> out;
  for (const auto& [key, slot] : slots_of(set)) {
    std::string entry = cc_digits(key.first, key.second);
    if (!slot.ptx) entry += "-real";
    if (!slot.sass) entry += "-virtual";
    out.push_back(entry);
  }
  return join(out, ";");
}

std::vector<std::string> render_gencode_flags(const TargetSet& set) {
  std::vector<std::string> out;
  for (const auto& t : set.targets)
    out.push_back("-gencode=arch=compute_" + t.digits() + ",code=" + t.name());
  return out;
}

std::string render_flash_attn_archs(const TargetSet& set) { return render_sass_numbers(set); }

std::string render_bnb_compute_capability(const TargetSet& set) { return render_sass_numbers(set); }

std::string render_for(Consumer consumer, const TargetSet& set) {
  switch (consumer) {
    case Consumer::torch:
      return render_torch_arch_list(set);
    case Consumer::cmake:
      return render_cmake_architectures(set);
    case Consumer::nvcc:
      return join(render_gencode_flags(set), " ");
    case Consumer::flash_attn:
      return render_flash_attn_archs(set);
    case Consumer::bitsandbytes:
      return render_bnb_compute_capability(set);
  }
  return {};
}

std::vector<std::string> render_losses(Consumer consumer, const TargetSet& set) {
  std::vector<std::string> out;
  switch (consumer) {
    case Consumer::cmake:
    case Consumer::nvcc:
      break;
    case Consumer::torch:
      for (const auto& [key, slot] : slots_of(set)) {
        auto [cc, variant] = key;
        if (variant == ArchVariant::f)
          out.push_back("TORCH_CUDA_ARCH_LIST has no family targets: " + cc_digits(cc, variant) +
                        " is spelled " + cc.str() + " (sm_" + std::to_string(cc.number()) +
                        ", this CC only)");
        else if (!slot.sass)
          out.push_back("TORCH_CUDA_ARCH_LIST cannot say PTX only: compute_" +
                        cc_digits(cc, variant) + " is spelled " + cc.str() + suffix(variant) +
                        "+PTX, which adds sm_" + cc_digits(cc, variant));
      }
      break;
    case Consumer::flash_attn:
    case Consumer::bitsandbytes: {
      std::string var(consumer_variable(consumer));
      for (const auto& t : set.targets) {
        if (t.kind == TargetKind::ptx)
          out.push_back(var + " names SASS only: " + t.name() +
                        " is left to the package's own build");
        else if (t.variant != ArchVariant::none)
          out.push_back(var + " has no a/f variants: " + t.name() + " is spelled " +
                        std::to_string(t.cc.number()));
      }
      break;
    }
  }
  return out;
}

Expected<TargetSet> parse_for(Consumer consumer, std::string_view text) {
  switch (consumer) {
    case Consumer::torch:
    case Consumer::cmake:
    case Consumer::nvcc:
      return parse_arch_spec(text);
    case Consumer::flash_attn:
    case Consumer::bitsandbytes:
      return parse_sass_numbers(text, consumer_variable(consumer));
  }
  return make_error("unknown consumer");
}

std::string_view consumer_variable(Consumer consumer) {
  switch (consumer) {
    case Consumer::torch:
      return "TORCH_CUDA_ARCH_LIST";
    case Consumer::cmake:
      return "CMAKE_CUDA_ARCHITECTURES";
    case Consumer::nvcc:
      return "nvcc -gencode";
    case Consumer::flash_attn:
      return "FLASH_ATTN_CUDA_ARCHS";
    case Consumer::bitsandbytes:
      return "COMPUTE_CAPABILITY";
  }
  return "";
}

}  // namespace tailor::cuda
