#include "inspect/library_classifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cuda/cuda_target.h"
#include "inspect/cuda_providers.h"

namespace tailor::inspect {

std::string_view needed_kind_key(NeededKind kind) {
  switch (kind) {
    case NeededKind::bundled: return "bundled";
    case NeededKind::whitelisted: return "manylinux-whitelist";
    case NeededKind::cuda_runtime: return "cuda-runtime";
    case NeededKind::cuda_driver: return "cuda-driver";
    case NeededKind::system: return "system";
  }
  return "system";
}

InspectedLibrary classify_library(LibraryReport report, const std::set<std::string>& bundled) {
  InspectedLibrary lib;
  static_cast<LibraryReport&>(lib) = std::move(report);
  const auto& policies = ManylinuxPolicies::get();
  const auto& cuda = CudaProviders::get();
  for (const auto& soname : lib.needed) {
    NeededLibrary n;
    n.soname = soname;
    if (bundled.count(soname)) {
      n.kind = NeededKind::bundled;
    } else if (policies.whitelisted(soname)) {
      n.kind = NeededKind::whitelisted;
    } else if (auto providers = cuda.lookup(soname); !providers.empty()) {
      n.kind = NeededKind::cuda_runtime;
      for (const auto* p : providers) {
        n.wheels.push_back(p->wheel);
        n.systems.push_back(p->system);
      }
    } else if (cuda.is_driver_library(soname)) {
      n.kind = NeededKind::cuda_driver;
    } else if (soname.rfind("ld-linux", 0) == 0 || soname.rfind("ld64.so", 0) == 0) {
      n.kind = NeededKind::whitelisted;  // the dynamic loader comes with libc
    } else {
      n.kind = NeededKind::system;
    }
    lib.needed_libraries.push_back(std::move(n));
  }
  lib.manylinux = policies.strictest_fit(lib.machine, lib.version_needs);
  return lib;
}

void sort_target_names(std::vector<std::string>& names) {
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    auto ta = cuda::parse_target_name(a), tb = cuda::parse_target_name(b);
    if (ta && tb) return *ta < *tb;
    if (bool(ta) != bool(tb)) return bool(ta);
    return a < b;
  });
  names.erase(std::unique(names.begin(), names.end()), names.end());
}

std::vector<TargetTotal> target_totals(const std::vector<InspectedLibrary>& libraries, uint64_t installed_bytes) {
  std::map<std::string, TargetTotal> by_name;
  for (const auto& lib : libraries)
    for (const auto& t : lib.targets) {
      auto& total = by_name[t.name];
      total.name = t.name;
      total.libraries += 1;
      total.entries += t.entries;
      total.stored_bytes += t.stored_bytes;
      total.uncompressed_bytes += t.uncompressed_bytes;
      total.compression.insert(t.compression.begin(), t.compression.end());
    }
  std::vector<std::string> names;
  for (auto& [name, _] : by_name) names.push_back(name);
  sort_target_names(names);
  std::vector<TargetTotal> out;
  for (auto& name : names) {
    auto t = by_name[name];
    if (installed_bytes > 0) t.share = double(t.stored_bytes) / double(installed_bytes);
    out.push_back(std::move(t));
  }
  return out;
}

SetFit fit_of_set(const std::vector<InspectedLibrary>& libraries) {
  SetFit fit;
  const auto& policies = ManylinuxPolicies::get();
  const InspectedLibrary* weakest = nullptr;
  for (const auto& lib : libraries) {
    if (lib.machine == "cuda") continue;  // stray cubins say nothing about the host
    if (fit.arch.empty()) fit.arch = lib.machine;
    if (!weakest || lib.manylinux.priority < weakest->manylinux.priority) weakest = &lib;
  }
  if (!weakest) return fit;
  fit.policy = weakest->manylinux.policy;
  fit.tag = weakest->manylinux.tag;
  for (const auto& l : weakest->manylinux.limiting) fit.limiting.push_back(weakest->path + ": " + l);
  for (const auto& p : policies.for_arch(fit.arch))
    if (p.name == fit.policy) {
      fit.glibc_major = p.glibc_major;
      fit.glibc_minor = p.glibc_minor;
    }
  for (const auto& lib : libraries) {
    if (lib.machine != fit.arch && lib.machine != "cuda") {
      fit.limiting.push_back(fmt::format("{}: machine {} differs from {}", lib.path, lib.machine, fit.arch));
      fit.policy = "linux";
    }
    for (const auto& n : lib.needed_libraries)
      if (n.kind == NeededKind::system) {
        fit.limiting.push_back(fmt::format("{}: needs {} from the system", lib.path, n.soname));
        fit.policy = "linux";
      }
  }
  if (fit.policy == "linux") {
    fit.tag = "linux_" + fit.arch;
    fit.glibc_major = fit.glibc_minor = 0;
  }
  return fit;
}

}  // namespace tailor::inspect
