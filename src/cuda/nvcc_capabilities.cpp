#include "cuda/nvcc_capabilities.h"

#include <algorithm>
#include <map>

#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::cuda {

namespace {
constexpr std::string_view k_file = "cuda/nvcc_targets.toml";

std::map<CudaVersion, NvccCapabilities> load() {
  std::map<CudaVersion, NvccCapabilities> out;
  for (const auto& n : data::toml_document(k_file)["cuda"].array()) {
    NvccCapabilities caps;
    auto version = parse_cuda_version(n["version"].string());
    if (!version) n["version"].fail(version.error().message);
    caps.cuda_version = *version;
    caps.source = "table";
    for (const auto& d : n["targets"].array()) {
      auto parsed = parse_target_name("sm_" + d.string());
      if (!parsed) d.fail("not a target: " + parsed.error().message);
      caps.sass.push_back(*parsed);
      caps.ptx.push_back(ptx(parsed->cc, parsed->variant));
    }
    std::sort(caps.sass.begin(), caps.sass.end());
    std::sort(caps.ptx.begin(), caps.ptx.end());
    out[caps.cuda_version] = std::move(caps);
  }
  return out;
}

const std::map<CudaVersion, NvccCapabilities>& table() {
  static const auto t = load();
  return t;
}

std::vector<CudaTarget> parse_listing(std::string_view text) {
  std::vector<CudaTarget> out;
  for (const auto& line : split_any(text, "\n\r \t"))
    if (auto t = parse_target_name(line)) out.push_back(*t);
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

bool NvccCapabilities::can_produce(const CudaTarget& t) const {
  const auto& list = t.kind == TargetKind::sass ? sass : ptx;
  return std::binary_search(list.begin(), list.end(), t);
}

std::vector<CudaVersion> known_cuda_versions() {
  std::vector<CudaVersion> out;
  for (const auto& [v, caps] : table()) out.push_back(v);  // the map keeps them ascending
  return out;
}

Expected<NvccCapabilities> nvcc_capabilities_from_table(const CudaVersion& cuda_version) {
  auto it = table().find(cuda_version);
  if (it == table().end())
    return make_error("CUDA " + cuda_version.to_string() +
                      " is not in tailor's nvcc table (known: " +
                      join(to_strings(known_cuda_versions()), ", ") + ")");
  return it->second;
}

Expected<NvccCapabilities> nvcc_capabilities_from_table(std::string_view cuda_version) {
  TAILOR_TRY(version, parse_cuda_version(cuda_version));
  return nvcc_capabilities_from_table(version);
}

Expected<NvccCapabilities> nvcc_capabilities_from_nvcc(const std::string& nvcc,
                                                       CommandRunner& runner) {
  auto run = [&](const char* flag) {
    return runner.run(CommandSpec{{nvcc, flag}, std::chrono::seconds(30)});
  };
  CommandResult version = run("--version");
  if (!version.ok()) return make_error("could not run '" + nvcc + " --version'");
  // "Cuda compilation tools, release 13.0, V13.0.88"
  auto pos = version.out.find("release ");
  if (pos == std::string::npos)
    return make_error("'" + nvcc + " --version' printed no release line");
  auto end = version.out.find_first_of(", \n", pos + 8);
  NvccCapabilities caps;
  auto release = parse_cuda_version(std::string_view(version.out).substr(pos + 8, end - pos - 8));
  if (!release) return make_error("'" + nvcc + " --version': unreadable release number");
  caps.cuda_version = *release;
  CommandResult code = run("--list-gpu-code");
  CommandResult arch = run("--list-gpu-arch");
  if (!code.ok() || !arch.ok())
    return make_error("'" + nvcc + " --list-gpu-code' failed (nvcc older than 11.0?)");
  caps.sass = parse_listing(code.out);
  caps.ptx = parse_listing(arch.out);
  if (caps.sass.empty()) return make_error("'" + nvcc + " --list-gpu-code' listed no targets");
  caps.source = "nvcc --list-gpu-code";
  // nvcc lists only plain targets; add the a/f variants the table knows for this version
  // when their plain CC is listed.
  if (auto t = table().find(caps.cuda_version); t != table().end()) {
    auto add_variants = [](std::vector<CudaTarget>& listed, const std::vector<CudaTarget>& known) {
      std::vector<CudaTarget> extra;
      for (const auto& k : known) {
        if (k.variant == ArchVariant::none) continue;
        CudaTarget plain = k;
        plain.variant = ArchVariant::none;
        if (std::binary_search(listed.begin(), listed.end(), plain)) extra.push_back(k);
      }
      listed.insert(listed.end(), extra.begin(), extra.end());
      std::sort(listed.begin(), listed.end());
    };
    add_variants(caps.sass, t->second.sass);
    add_variants(caps.ptx, t->second.ptx);
    caps.source += " + table for a/f variants";
  }
  return caps;
}

std::vector<std::string> unsupported_by(const TargetSet& set, const NvccCapabilities& nvcc) {
  std::vector<std::string> out;
  for (const auto& t : set.targets) {
    if (nvcc.can_produce(t)) continue;
    // The range is told in plain targets: "its highest is 9.0 (sm_90)", not sm_90a.
    std::vector<CudaTarget> plain;
    for (const auto& c : t.kind == TargetKind::sass ? nvcc.sass : nvcc.ptx)
      if (c.variant == ArchVariant::none) plain.push_back(c);
    std::string msg = "CUDA " + nvcc.cuda_version.to_string() + " cannot target " + t.name();
    if (!plain.empty() && t.cc < plain.front().cc)
      msg += "; its lowest is " + plain.front().cc.str() + " (" + plain.front().name() + ")";
    else if (!plain.empty() && t.cc > plain.back().cc)
      msg += "; its highest is " + plain.back().cc.str() + " (" + plain.back().name() + ")";
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace tailor::cuda
