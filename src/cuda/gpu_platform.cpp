#include "cuda/gpu_platform.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace tailor::cuda {

namespace {

/// "T4G (g5g)": a GPU with the instance families that carry it; "g5g.xlarge (T4G)": an
/// instance with its GPU; the name as typed.
std::string describe(const PlatformHint& h) {
  if (auto inst = find_instance(h.name)) return fmt::format("{} ({})", h.name, inst->gpu);
  std::vector<std::string> families;
  if (auto gpu = find_gpu(h.name))
    for (const auto& i : cloud_instances())
      if (i.gpu == gpu->name && i.host_arch == h.host_arch) families.push_back(i.family);
  return families.empty() ? h.name : fmt::format("{} ({})", h.name, join(families, "/"));
}

}  // namespace

std::string normalize_platform(std::string_view p) {
  std::string s = to_lower(trim(p));
  if (s == "arm64" || s == "sbsa") return "aarch64";
  if (s == "amd64" || s == "x64") return "x86_64";
  return s;
}

Expected<std::optional<ImpliedPlatform>> implied_platform(
    const std::vector<std::string>& gpu_specs) {
  std::vector<PlatformHint> hints;
  for (const auto& spec : gpu_specs)
    for (auto& h : platform_hints(spec)) hints.push_back(std::move(h));
  if (hints.empty()) return std::optional<ImpliedPlatform>{};
  ImpliedPlatform out;
  out.platform = hints.front().host_arch;
  out.cpu_target = hints.front().cpu_target;
  std::vector<std::string> names;
  for (const auto& h : hints) {
    if (h.host_arch != out.platform) {
      const auto& first = hints.front();
      return make_error(
          fmt::format("{} ({}) exists only on {}, {} ({}) only on {}: one build cannot serve both",
                      first.name, first.what, first.host_arch, h.name, h.what, h.host_arch));
    }
    if (h.cpu_target != out.cpu_target) out.cpu_target.clear();
    if (std::find(names.begin(), names.end(), h.name) == names.end()) names.push_back(h.name);
  }
  out.source = join(names, ", ");
  out.hints = std::move(hints);
  return std::optional<ImpliedPlatform>{out};
}

Expected<std::optional<std::string>> variant_platform(const std::optional<std::string>& asked,
                                                      const std::vector<std::string>& gpu_specs) {
  TAILOR_TRY(implied, implied_platform(gpu_specs));
  if (asked && implied && normalize_platform(*asked) != implied->platform)
    return make_error(fmt::format("platform {} conflicts with {}, which exists only on {}", *asked,
                                  implied->source, implied->platform));
  if (asked) return std::optional<std::string>{normalize_platform(*asked)};
  if (implied) return std::optional<std::string>{implied->platform};
  return std::optional<std::string>{};
}

std::string platform_mismatch(const ImpliedPlatform& implied, std::string_view machine,
                              std::string_view what) {
  std::string m = normalize_platform(machine);
  if ((m != "x86_64" && m != "aarch64") || m == implied.platform) return "";
  std::vector<std::string> names;
  for (const auto& h : implied.hints) {
    std::string d = describe(h);
    if (std::find(names.begin(), names.end(), d) == names.end()) names.push_back(d);
  }
  if (names.empty()) names.push_back(implied.source);
  return fmt::format("{} {} only on {}; {} is {}", join(names, ", "),
                     names.size() == 1 ? "exists" : "exist", implied.platform, what, m);
}

}  // namespace tailor::cuda
