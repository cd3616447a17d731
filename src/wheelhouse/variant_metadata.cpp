#include "wheelhouse/variant_metadata.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cuda/cuda_version.h"
#include "data/toml_document.h"

namespace tailor::wheelhouse {

namespace {

struct VariantFacts {
  std::string schema_url, file, ns, sm_arch, real, virtual_, cuda_lower, cuda_upper;
};

const VariantFacts& facts() {
  static const VariantFacts f = [] {
    const auto& doc = data::toml_document("wheelhouse/variants.toml");
    return VariantFacts{doc["schema_url"].string(),           doc["file"].string(),
                        doc["nvidia"]["namespace"].string(),  doc["nvidia"]["sm_arch"].string(),
                        doc["nvidia"]["real"].string(),       doc["nvidia"]["virtual"].string(),
                        doc["nvidia"]["cuda_lower"].string(), doc["nvidia"]["cuda_upper"].string()};
  }();
  return f;
}

std::string replaced(std::string text, const std::string& key, const std::string& value) {
  for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
    text.replace(at, key.size(), value);
  return text;
}

// "sm_86" -> "86_real", "compute_90" -> "90_virtual"; nullopt for "sm_90a" and the like.
std::optional<std::string> sm_arch_value(const std::string& target) {
  std::string digits;
  const std::string* form = nullptr;
  if (target.starts_with("sm_")) {
    digits = target.substr(3);
    form = &facts().real;
  } else if (target.starts_with("compute_")) {
    digits = target.substr(8);
    form = &facts().virtual_;
  }
  if (!form || digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return replaced(*form, "{number}", digits);
}

std::string toolchain_text(const WheelEntry& e, const char* key) {
  if (!e.provenance.is_object() || !e.provenance.contains("toolchain")) return {};
  const auto& t = e.provenance["toolchain"];
  auto it = t.find(key);
  return t.is_object() && it != t.end() && it->is_string() ? it->get<std::string>() : "";
}

// The CUDA the wheel's code runs against: its torch's ("2.11.0+cu130 (CUDA 13.0)"), else the
// torch version's label (+cu130), else nvcc's.
std::optional<cuda::CudaVersion> wheel_cuda(const WheelEntry& e) {
  const std::string torch = toolchain_text(e, "torch");
  if (auto at = torch.find("(CUDA "); at != std::string::npos) {
    auto end = torch.find(')', at);
    if (auto v = cuda::parse_cuda_version(torch.substr(at + 6, end - at - 6))) return *v;
  }
  if (auto at = torch.find("+cu"); at != std::string::npos)
    if (auto v = cuda::parse_cuda_version(torch.substr(at + 1, torch.find(' ', at) - at - 1)))
      return *v;
  if (auto v = cuda::parse_cuda_version(toolchain_text(e, "nvcc"))) return *v;
  return std::nullopt;
}

// "fused_ops-0.1.0" from the wheel's file name: the draft's {name}-{version}.
std::string name_version(const std::string& file) {
  auto first = file.find('-');
  auto second = file.find('-', first + 1);
  return file.substr(0, second);
}

}  // namespace

std::optional<WheelVariant> wheel_variant(const WheelEntry& e) {
  if (e.foreign || e.targets.empty()) return std::nullopt;
  auto cuda = wheel_cuda(e);
  if (!cuda) return std::nullopt;
  std::vector<std::string> sm;
  for (const auto& t : e.targets) {
    auto v = sm_arch_value(t);
    if (!v) return std::nullopt;
    sm.push_back(*v);
  }
  std::sort(sm.begin(), sm.end());
  sm.erase(std::unique(sm.begin(), sm.end()), sm.end());
  const VariantFacts& f = facts();
  WheelVariant w;
  std::string set = e.target_set;
  std::replace(set.begin(), set.end(), '-', '_');
  w.label = set + "_" + cuda->label();
  auto& nvidia = w.properties[f.ns];
  nvidia[f.sm_arch] = sm;
  nvidia[f.cuda_lower] = {cuda->to_string()};
  nvidia[f.cuda_upper] = {std::to_string(cuda->major + 1)};
  return w;
}

std::vector<IndexFile> render_variant_files(const std::string& target_set,
                                            const std::vector<WheelEntry>& wheels) {
  // project -> {name}-{version} -> label -> properties
  std::map<std::string, std::map<std::string, std::map<std::string, nlohmann::json>>> files;
  for (const auto& e : wheels) {
    if (e.target_set != target_set) continue;
    auto v = wheel_variant(e);
    if (!v) continue;
    files[e.project][name_version(e.file)][v->label] = v->properties;
  }
  std::vector<IndexFile> out;
  const VariantFacts& f = facts();
  for (const auto& [project, versions] : files)
    for (const auto& [nv, variants] : versions) {
      nlohmann::json j = {{"$schema", f.schema_url},
                          {"default-priorities", {{"namespace", {f.ns}}}},
                          {"variants", variants}};
      const auto dash = nv.find('-');
      std::string name = replaced(f.file, "{name}", nv.substr(0, dash));
      name = replaced(name, "{version}", nv.substr(dash + 1));
      out.push_back({target_set + "/simple/" + project + "/" + name, j.dump(1) + "\n"});
    }
  return out;
}

}  // namespace tailor::wheelhouse
