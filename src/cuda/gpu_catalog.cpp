#include "cuda/gpu_catalog.h"

#include <algorithm>
#include <cctype>

#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::cuda {

namespace {

constexpr std::string_view k_gpus_file = "cuda/gpus.toml";
constexpr std::string_view k_instances_file = "cuda/instances.toml";

ComputeCapability require_cc(const data::TomlValue& v) {
  auto cc = parse_compute_capability(v.string());
  if (!cc) v.fail(cc.error().message);
  return *cc;
}

struct Catalog {
  std::vector<CapabilityFacts> capabilities;
  std::vector<GpuModel> gpus;
  std::vector<CloudInstance> instances;
};

Catalog load_catalog() {
  Catalog c;
  const auto gpus = data::toml_document(k_gpus_file);
  for (const auto& n : gpus["capability"].array()) {
    CapabilityFacts info;
    info.cc = require_cc(n["cc"]);
    info.family = n["family"].string();
    info.tegra = n["tegra"].boolean_or(false);
    c.capabilities.push_back(info);
  }
  std::sort(c.capabilities.begin(), c.capabilities.end(),
            [](const CapabilityFacts& a, const CapabilityFacts& b) { return a.cc < b.cc; });
  for (const auto& n : gpus["gpu"].array()) {
    GpuModel g;
    g.name = n["name"].string();
    g.cc = require_cc(n["cc"]);
    g.host_arch = n["host"].string_or("any");
    if (g.host_arch != "any" && g.host_arch != "x86_64" && g.host_arch != "aarch64")
      n.fail("gpu '" + g.name + "': host '" + g.host_arch + "' (x86_64, aarch64 or any)");
    g.cpu_target = n["cpu_target"].string_or("");
    if (!g.cpu_target.empty() && g.host_arch == "any")
      n.fail("gpu '" + g.name + "': cpu_target without a host");
    g.aliases = n["aliases"].strings_or_empty();
    auto info = std::find_if(c.capabilities.begin(), c.capabilities.end(),
                             [&](const CapabilityFacts& i) { return i.cc == g.cc; });
    if (info == c.capabilities.end())
      n.fail("gpu '" + g.name + "' has CC " + g.cc.str() + " with no [[capability]] entry");
    g.family = info->family;
    g.tegra = info->tegra;
    c.gpus.push_back(std::move(g));
  }
  const auto inst = data::toml_document(k_instances_file);
  for (const auto& n : inst["instance"].array()) {
    CloudInstance i;
    i.family = n["family"].string();
    i.cloud = n["cloud"].string();
    i.gpu = n["gpu"].string();
    i.host_arch = n["host"].string();
    if (i.host_arch != "x86_64" && i.host_arch != "aarch64")
      n.fail("instance '" + i.family + "': host '" + i.host_arch + "' (x86_64 or aarch64)");
    i.cpu_target = n["cpu_target"].string_or("");
    if (std::none_of(c.gpus.begin(), c.gpus.end(),
                     [&](const GpuModel& g) { return g.name == i.gpu; }))
      n.fail("instance '" + i.family + "' names unknown gpu '" + i.gpu + "'");
    c.instances.push_back(std::move(i));
  }
  return c;
}

const Catalog& catalog() {
  static const Catalog c = load_catalog();
  return c;
}

/// Lowercase alphanumeric words: "NVIDIA A100-SXM4-80GB" -> {nvidia, a100, sxm4, 80gb}.
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool contains_run(const std::vector<std::string>& hay, const std::vector<std::string>& needle) {
  if (needle.empty() || needle.size() > hay.size()) return false;
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

}  // namespace

const std::vector<GpuModel>& gpu_catalog() { return catalog().gpus; }

const std::vector<CapabilityFacts>& known_capabilities() { return catalog().capabilities; }

std::optional<CapabilityFacts> find_capability(ComputeCapability cc) {
  for (const auto& i : known_capabilities())
    if (i.cc == cc) return i;
  return std::nullopt;
}

// Exact spelling (ignoring case, spaces and punctuation) wins; otherwise the longest
// known name that appears as whole words inside the text, so "NVIDIA GH200 480GB" is a
// GH200 (not an H200) and "NVIDIA L40S" an L40S (not an L40).
std::optional<GpuModel> find_gpu(std::string_view name) {
  const auto input = words(name);
  const std::string joined = join(input, "");
  if (joined.empty()) return std::nullopt;
  const GpuModel* best = nullptr;
  size_t best_words = 0, best_chars = 0;
  for (const auto& g : gpu_catalog()) {
    std::vector<std::string> spellings = g.aliases;
    spellings.insert(spellings.begin(), g.name);
    for (const auto& s : spellings) {
      auto w = words(s);
      if (join(w, "") == joined) return g;
      if (!contains_run(input, w)) continue;
      size_t chars = join(w, "").size();
      if (w.size() > best_words || (w.size() == best_words && chars > best_chars)) {
        best = &g;
        best_words = w.size();
        best_chars = chars;
      }
    }
  }
  if (best) return *best;
  return std::nullopt;
}

std::vector<GpuModel> gpus_with_capability(ComputeCapability cc) {
  std::vector<GpuModel> out;
  for (const auto& g : gpu_catalog())
    if (g.cc == cc) out.push_back(g);
  return out;
}

const std::vector<CloudInstance>& cloud_instances() { return catalog().instances; }

std::optional<CloudInstance> find_instance(std::string_view instance_type) {
  const std::string t = to_lower(trim(instance_type));
  const CloudInstance* best = nullptr;
  for (const auto& i : cloud_instances()) {
    const std::string f = to_lower(i.family);
    bool match = t == f || (t.size() > f.size() && t.starts_with(f) &&
                            (t[f.size()] == '.' || t[f.size()] == '-'));
    if (match && (!best || i.family.size() > best->family.size())) best = &i;
  }
  if (!best) return std::nullopt;
  // A bare family that is also exactly a GPU's name ("A2": the GPU, not GCP's a2 machines,
  // which are A100s) is the GPU; "a2-highgpu-1g" stays the instance.
  if (t == to_lower(best->family)) {
    const std::string joined = join(words(t), "");
    for (const auto& g : gpu_catalog()) {
      std::vector<std::string> spellings = g.aliases;
      spellings.push_back(g.name);
      for (const auto& sp : spellings)
        if (to_lower(join(words(sp), "")) == joined) return std::nullopt;
    }
  }
  return *best;
}

std::vector<PlatformHint> platform_hints(std::string_view spec) {
  std::vector<PlatformHint> out;
  auto add_name = [&](const std::string& name) {
    // The order of arch_spec: an instance type first, then a GPU name.
    if (auto inst = find_instance(name)) {
      out.push_back({name, "instance " + inst->family, inst->host_arch, inst->cpu_target});
      return true;
    }
    if (auto gpu = find_gpu(name)) {
      if (gpu->host_arch != "any")
        out.push_back({name, "GPU " + gpu->name, gpu->host_arch, gpu->cpu_target});
      return true;
    }
    return false;
  };
  for (const auto& entry : split_any(spec, ";,")) {
    std::string piece(trim(entry));
    if (piece.empty()) continue;
    auto ws = split_any(piece, " \t\n");
    // A GPU of several words ("Jetson AGX Orin") only when the words are exactly its name.
    if (ws.size() > 1) {
      if (auto gpu = find_gpu(piece)) {
        auto same = [&](const std::string& s) {
          return join(words(s), "") == join(words(piece), "");
        };
        if (same(gpu->name) || std::any_of(gpu->aliases.begin(), gpu->aliases.end(), same)) {
          if (gpu->host_arch != "any")
            out.push_back({piece, "GPU " + gpu->name, gpu->host_arch, gpu->cpu_target});
          continue;
        }
      }
    }
    for (const auto& w : ws) {
      if (w.empty() || w[0] == '-' || std::isdigit(static_cast<unsigned char>(w[0])))
        continue;  // flags, 8.6, 90a
      std::string lw = to_lower(w);
      if (lw.starts_with("sm_") || lw.starts_with("compute_") || lw.starts_with("arch=") ||
          lw.starts_with("code="))
        continue;
      add_name(w);
    }
  }
  return out;
}

}  // namespace tailor::cuda
