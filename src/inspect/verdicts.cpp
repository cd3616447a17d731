#include "inspect/verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cuda/arch_spec.h"
#include "cuda/compatibility.h"
#include "cuda/cuda_target.h"
#include "cuda/fatbin_code.h"
#include "cuda/gpu_platform.h"
#include "cuda/target_request.h"
#include "cuda/target_set.h"
#include "util/strings.h"

namespace tailor::inspect {

namespace {

// What a verdict judges: a library with device code, or a folder of device files (a
// package picks one of them at run time, as the driver picks one entry of a library).
struct DeviceLibrary {
  std::string label;
  std::string machine;  // the host's; "cuda" for device files (no platform of their own)
  std::vector<const TargetStats*> targets;
};

std::vector<DeviceLibrary> libraries_with_device_code(const InspectReport& report,
                                                      std::vector<DeviceFolder>& folders) {
  std::vector<DeviceLibrary> out;
  auto library = [&](const InspectedLibrary& lib, std::string label) {
    DeviceLibrary d{std::move(label), lib.machine, {}};
    for (const auto& t : lib.targets) d.targets.push_back(&t);
    out.push_back(std::move(d));
  };
  // `folders` owns the folders' sums; reserved first, so the pointers into it stay valid.
  size_t folder_count = device_folders(report.device_files).size();
  for (const auto& w : report.wheels) folder_count += device_folders(w.device_files).size();
  folders.reserve(folder_count);
  auto folder_set = [&](const std::vector<DeviceFile>& files, const std::string& prefix) {
    for (auto& f : device_folders(files)) {
      folders.push_back(std::move(f));
      const DeviceFolder& kept = folders.back();
      DeviceLibrary d{prefix + device_folder_label(kept), "cuda", {}};
      for (const auto& t : kept.targets) d.targets.push_back(&t);
      out.push_back(std::move(d));
    }
  };
  for (const auto& lib : report.libraries)
    if (lib.has_device_code) library(lib, lib.path);
  folder_set(report.device_files, "");
  for (const auto& w : report.wheels) {
    for (const auto& lib : w.libraries)
      if (lib.has_device_code) library(lib, w.path + "!" + lib.path);
    folder_set(w.device_files, w.path + "!");
  }
  return out;
}

Expected<cuda::TargetSet> target_set_of(const DeviceLibrary& lib) {
  cuda::TargetSet set;
  for (const TargetStats* t : lib.targets) {
    // LTO IR (cuFFT's embedded lto_<arch> entries) is linked by the library itself through
    // nvJitLink; the driver loads none of it, so it covers no GPU.
    if (t->code.is_lto_ir()) continue;
    auto target = t->code.target();
    if (!target)
      return make_error(fmt::format("{}: unknown target '{}'", lib.label, t->code.name()));
    set.add(*target);
  }
  return set;
}

}  // namespace

std::string_view verdict_check_key(VerdictCheck check) {
  switch (check) {
    case VerdictCheck::gpu:
      return "gpu";
    case VerdictCheck::require:
      return "require";
    case VerdictCheck::exact:
      return "exact";
  }
  return "gpu";
}

bool Verdicts::pass() const {
  if (!problems.empty()) return false;
  for (const auto& v : items)
    if (!v.pass) return false;
  return true;
}

std::string LibraryVerdict::device_label() const {
  return gpu_names.empty() ? device.str() : join(gpu_names, ", ") + " (" + device.str() + ")";
}

Expected<VerdictTargets> resolve_verdict_specs(const VerdictSpecs& specs) {
  VerdictTargets out;
  if (!specs.gpu.empty()) {
    cuda::TargetRequest request;
    request.gpu = specs.gpu;
    request.arch_flag = "";
    TAILOR_TRY(resolved, cuda::resolve_target_request(request));
    out.devices = resolved.devices;
    for (const auto& spec : specs.gpu)
      for (const auto& [cc, names] : cuda::gpu_names_in_spec(spec))
        for (const auto& name : names) {
          auto& known = out.gpu_names[cc];
          if (std::find(known.begin(), known.end(), name) == known.end()) known.push_back(name);
        }
    // The platform each device's names imply (T4G: aarch64), for the one platform rule.
    auto implied = cuda::implied_platform(resolved.named);
    if (!implied) return make_error("--gpu: " + implied.error().message);
    for (const auto& h : *implied ? (*implied)->hints : std::vector<cuda::PlatformHint>{}) {
      auto ccs = cuda::parse_gpu_spec(h.name);
      for (const auto& cc : ccs ? *ccs : std::vector<cuda::ComputeCapability>{}) {
        auto& p = out.platforms[cc];
        p.platform = h.host_arch;
        p.source += (p.source.empty() ? "" : ", ") + h.name;
        p.hints.push_back(h);
      }
    }
  }
  auto targets_of = [](const std::vector<std::string>& typed,
                       const char* flag) -> Expected<cuda::TargetSet> {
    cuda::TargetRequest request;
    request.arch = typed;
    request.arch_flag = flag;
    request.gpu_flag = "";
    TAILOR_TRY(resolved, cuda::resolve_target_request(request));
    return resolved.targets;
  };
  if (!specs.require.empty()) {
    TAILOR_TRY(set, targets_of(specs.require, "--require"));
    out.require = std::move(set);
  }
  if (!specs.exact.empty()) {
    TAILOR_TRY(set, targets_of(specs.exact, "--exact"));
    out.exact = std::move(set);
  }
  return out;
}

Expected<Verdicts> evaluate(const InspectReport& report, const VerdictSpecs& specs) {
  TAILOR_TRY(targets, resolve_verdict_specs(specs));
  return evaluate(report, targets);
}

Expected<Verdicts> evaluate(const InspectReport& report, const VerdictTargets& targets) {
  Verdicts verdicts;
  if (!targets.any()) return verdicts;
  const auto& devices = targets.devices;
  const auto& required = targets.require;
  const auto& exact = targets.exact;
  std::vector<DeviceFolder> folders;
  auto libs = libraries_with_device_code(report, folders);
  if (libs.empty()) {
    verdicts.problems.push_back("no library or device code file carries CUDA device code");
    return verdicts;
  }
  for (const auto& lib : libs) {
    const std::string& label = lib.label;
    TAILOR_TRY(set, target_set_of(lib));
    for (const auto& cc : devices) {
      auto coverage = cuda::coverage_on(set, cc);
      LibraryVerdict v;
      v.check = VerdictCheck::gpu;
      v.library = label;
      v.device = cc;
      if (auto n = targets.gpu_names.find(cc); n != targets.gpu_names.end())
        v.gpu_names = n->second;
      v.mode = std::string(cuda::run_mode_key(coverage.mode));
      if (coverage.via) v.via = coverage.via->name();
      v.pass = coverage.mode != cuda::RunMode::none;
      if (v.pass) {
        // Every target that covers the device the same way, not only the one picked.
        std::vector<std::pair<cuda::CudaTarget, uint64_t>> covering;
        for (const TargetStats* t : lib.targets) {
          auto target = t->code.target();
          if (target && cuda::run_mode(*target, cc) == coverage.mode)
            covering.emplace_back(*target, t->entries);
        }
        std::sort(covering.begin(), covering.end(), [](const auto& a, const auto& b) {
          bool pa = a.first.variant == cuda::ArchVariant::none,
               pb = b.first.variant == cuda::ArchVariant::none;
          if (pa != pb) return pa;
          return b.first < a.first;
        });
        for (const auto& [target, entries] : covering)
          v.covering.push_back({target.name(), entries});
        if (!v.covering.empty()) v.via = v.covering.front().target;
      }
      if (auto p = targets.platforms.find(cc); p != targets.platforms.end()) {
        v.reason = cuda::platform_mismatch(p->second, lib.machine, "this library");
        if (!v.reason.empty()) v.pass = false;
      }
      verdicts.items.push_back(std::move(v));
    }
    if (required) {
      LibraryVerdict v;
      v.check = VerdictCheck::require;
      v.library = label;
      for (const auto& t : required->targets)
        if (!set.contains(t)) v.missing.push_back(t.name());
      v.pass = v.missing.empty();
      verdicts.items.push_back(std::move(v));
    }
    if (exact) {
      LibraryVerdict v;
      v.check = VerdictCheck::exact;
      v.library = label;
      for (const auto& t : exact->targets)
        if (!set.contains(t)) v.missing.push_back(t.name());
      for (const auto& t : set.targets)
        if (!exact->contains(t)) v.extra.push_back(t.name());
      v.pass = v.missing.empty() && v.extra.empty();
      verdicts.items.push_back(std::move(v));
    }
  }
  return verdicts;
}

}  // namespace tailor::inspect
