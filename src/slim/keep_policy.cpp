#include "slim/keep_policy.h"

#include <algorithm>

#include "cuda/compatibility.h"
#include "cuda/fatbin_code.h"
#include "util/strings.h"

namespace tailor::slim {

using cuda::RunMode;

std::string KeepPolicy::describe() const {
  std::string out;
  for (const auto& cc : devices) {
    if (!out.empty()) out += ", ";
    out += cuda::sass(cc).name() + " (" + cc.str() + ")";
  }
  for (const auto& t : ptx_asked) out += (out.empty() ? "" : ", ") + t.name();
  switch (ptx) {
    case PtxPolicy::needed:
      out += "; PTX only where no SASS runs";
      break;
    case PtxPolicy::keep:
      out += "; PTX kept";
      break;
    case PtxPolicy::drop:
      out += "; PTX dropped";
      break;
  }
  if (lto == LtoPolicy::drop) out += "; LTO IR dropped";
  return out;
}

KeepPolicy keep_policy_for(const cuda::TargetSet& targets, PtxPolicy ptx) {
  KeepPolicy p;
  p.devices = targets.capabilities();
  for (const auto& t : targets.targets)
    if (t.kind == cuda::TargetKind::ptx) p.ptx_asked.push_back(t);
  p.ptx = ptx;
  return p;
}

std::string why_kept(const cuda::CudaTarget& target, const KeepPolicy& policy) {
  // The kept GPUs per way of running, in the order the policy names them.
  std::vector<std::string> native, compatible, jit;
  for (const auto& device : policy.devices) {
    switch (cuda::run_mode(target, device)) {
      case RunMode::native:
        native.push_back(device.str());
        break;
      case RunMode::compatible_sass:
        compatible.push_back(device.str());
        break;
      case RunMode::ptx_jit:
        jit.push_back(device.str());
        break;
      case RunMode::none:
        break;
    }
  }
  std::vector<std::string> parts;
  if (!native.empty()) parts.push_back("runs on " + join(native, ", "));
  if (!compatible.empty())
    parts.push_back("runs on " + join(compatible, ", ") + " as compatible SASS");
  if (!jit.empty()) parts.push_back("runs on " + join(jit, ", ") + " through PTX JIT");
  return parts.empty() ? "named in --keep" : join(parts, "; ");
}

namespace {

// Keeps, among the entries `mode` accepts on `device`, those with the best CC (every
// variant of it: sm_90 and sm_90a are both native on 9.0). Returns whether any was kept.
bool keep_best(const std::vector<std::optional<cuda::CudaTarget>>& targets,
               cuda::ComputeCapability device, const std::vector<RunMode>& modes,
               std::vector<bool>& keep) {
  std::optional<cuda::ComputeCapability> best;
  for (const auto& t : targets) {
    if (!t) continue;
    auto m = cuda::run_mode(*t, device);
    if (std::find(modes.begin(), modes.end(), m) == modes.end()) continue;
    if (!best || *best < t->cc) best = t->cc;
  }
  if (!best) return false;
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    if (!t || t->cc != *best) continue;
    auto m = cuda::run_mode(*t, device);
    if (std::find(modes.begin(), modes.end(), m) != modes.end()) keep[i] = true;
  }
  return true;
}

}  // namespace

ContainerChoice choose_entries(const formats::FatbinContainer& c, const KeepPolicy& policy) {
  ContainerChoice choice;
  choice.keep.assign(c.entries.size(), false);
  std::vector<std::optional<cuda::CudaTarget>> targets;  // nullopt for LTO IR
  for (const auto& e : c.entries) {
    const cuda::FatbinCode code = cuda::fatbin_code(e);
    if (code.is_lto_ir()) {
      targets.push_back(std::nullopt);
      continue;
    }
    auto t = code.target();
    if (!t || e.compression == formats::FatbinCompression::unknown) {
      choice.whole = true;
      choice.note = "an entry of kind " + std::to_string(e.kind) +
                    (t ? " with an old compression scheme" : "") + " that this tool does not read";
      choice.keep.assign(c.entries.size(), true);
      return choice;
    }
    targets.push_back(t);
  }
  std::vector<std::string> jit_for, none_for;
  for (const auto& device : policy.devices) {
    bool sass = keep_best(targets, device, {RunMode::native}, choice.keep) ||
                keep_best(targets, device, {RunMode::compatible_sass}, choice.keep);
    bool ptx_wanted = policy.ptx == PtxPolicy::keep || (!sass && policy.ptx == PtxPolicy::needed);
    bool ptx = ptx_wanted && keep_best(targets, device, {RunMode::ptx_jit}, choice.keep);
    if (!sass && ptx) jit_for.push_back(device.str());
    if (!sass && !ptx) {
      // Without PTX by request, but the PTX was the only code: keep it after all.
      if (policy.ptx == PtxPolicy::drop &&
          keep_best(targets, device, {RunMode::ptx_jit}, choice.keep)) {
        jit_for.push_back(device.str() + " (despite --drop-ptx: nothing else runs there)");
        continue;
      }
      none_for.push_back(device.str());
    }
  }
  for (const auto& asked : policy.ptx_asked)
    for (size_t i = 0; i < targets.size(); ++i)
      if (targets[i] && *targets[i] == asked) choice.keep[i] = true;
  if (policy.lto == LtoPolicy::keep)
    for (size_t i = 0; i < c.entries.size(); ++i)
      if (cuda::fatbin_code(c.entries[i]).is_lto_ir()) choice.keep[i] = choice.lto_kept = true;
  if (!jit_for.empty()) {
    choice.ptx_only = true;
    choice.note = "PTX kept: the only code for ";
    for (size_t i = 0; i < jit_for.size(); ++i) choice.note += (i ? ", " : "") + jit_for[i];
  }
  if (std::find(choice.keep.begin(), choice.keep.end(), true) == choice.keep.end() &&
      !c.entries.empty()) {
    // Nothing here runs on a kept GPU, before either: the container is emptied to its header.
    choice.no_code_for_kept = true;
    std::string had;
    for (const auto& e : c.entries) had += (had.empty() ? "" : " ") + cuda::fatbin_code(e).name();
    choice.note = (none_for.empty() ? std::string("only LTO IR, dropped")
                                    : "no code for " + join(none_for, ", ") + " before either") +
                  " (it had " + had + "): emptied to its header";
  }
  return choice;
}

DeviceFileChoice choose_device_file(const std::vector<cuda::FatbinCode>& codes,
                                    const KeepPolicy& policy) {
  if (codes.empty()) return {true, "no entry this tool reads: kept"};
  std::vector<std::string> names;
  for (const auto& code : codes) {
    if (code.is_lto_ir()) return {true, code.name() + " is LTO IR, which a package links itself"};
    auto t = code.target();
    if (!t) return {true, "an entry (" + code.name() + ") this tool does not read"};
    for (const auto& device : policy.devices)
      if (cuda::run_mode(*t, device) != RunMode::none) return {true, why_kept(*t, policy)};
    if (std::find(policy.ptx_asked.begin(), policy.ptx_asked.end(), *t) != policy.ptx_asked.end())
      return {true, "named in --keep"};
    names.push_back(code.name());
  }
  std::string devices;
  for (const auto& d : policy.devices) devices += (devices.empty() ? "" : ", ") + d.str();
  return {false, "no kept GPU (" + devices + ") loads " + join(names, " ")};
}

}  // namespace tailor::slim
