#include "inspect/library_classifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "cuda/fatbin_code.h"
#include "inspect/cuda_providers.h"

namespace tailor::inspect {

std::string_view needed_kind_key(NeededKind kind) {
  switch (kind) {
    case NeededKind::bundled:
      return "bundled";
    case NeededKind::whitelisted:
      return "manylinux-whitelist";
    case NeededKind::cuda_runtime:
      return "cuda-runtime";
    case NeededKind::cuda_driver:
      return "cuda-driver";
    case NeededKind::torch:
      return "torch";
    case NeededKind::found:
      return "found";
    case NeededKind::not_found:
      return "not-found";
    case NeededKind::system:
      return "system";
  }
  return "system";
}

InspectedLibrary classify_resolved(LibraryReport report,
                                   const std::vector<NeedResolution>& resolutions) {
  InspectedLibrary lib;
  static_cast<LibraryReport&>(lib) = std::move(report);
  const auto& policies = ManylinuxPolicies::get();
  const auto& cuda = CudaProviders::get();
  const auto& torch = TorchLibraries::get();
  static const NeedResolution k_nowhere;
  for (size_t i = 0; i < lib.needed.size(); ++i) {
    const auto& soname = lib.needed[i];
    const NeedResolution& r = i < resolutions.size() ? resolutions[i] : k_nowhere;
    NeededLibrary n;
    n.soname = soname;
    if (r.where == NeedResolution::Where::inside || r.where == NeedResolution::Where::on_disk) {
      n.resolved = r.path;
      n.via = r.via;
    }
    if (r.where == NeedResolution::Where::unreached) n.note = r.note;
    if (r.where == NeedResolution::Where::inside) {
      n.kind = NeededKind::bundled;
    } else if (policies.whitelisted(soname) || soname.rfind("ld-linux", 0) == 0 ||
               soname.rfind("ld64.so", 0) == 0) {
      n.kind = NeededKind::whitelisted;  // the dynamic loader comes with libc
    } else if (auto match = cuda.match(soname)) {
      n.kind = NeededKind::cuda_runtime;
      n.what = match->family->what;
      for (const auto* p : match->providers) {
        if (!p->wheel.empty() &&
            std::find(n.wheels.begin(), n.wheels.end(), p->wheel) == n.wheels.end())
          n.wheels.push_back(p->wheel);
        if (std::find(n.systems.begin(), n.systems.end(), p->system) == n.systems.end())
          n.systems.push_back(p->system);
      }
    } else if (cuda.is_driver_library(soname)) {
      n.kind = NeededKind::cuda_driver;
    } else if (torch.contains(soname)) {
      n.kind = NeededKind::torch;
    } else if (r.where == NeedResolution::Where::on_disk) {
      n.kind = NeededKind::found;
    } else if (r.where == NeedResolution::Where::unreached) {
      n.kind = NeededKind::not_found;
    } else {
      n.kind = NeededKind::system;
    }
    lib.needed_libraries.push_back(std::move(n));
  }
  // Linking torch means C++ against torch's runtime; not needing that runtime means a
  // static copy of another one inside this library.
  std::string torch_lib;
  bool needs_cxx_runtime = false;
  for (const auto& n : lib.needed_libraries) {
    if (n.kind == NeededKind::torch && torch_lib.empty()) torch_lib = n.soname;
    if (n.soname == torch.cxx_runtime()) needs_cxx_runtime = true;
  }
  if (!torch_lib.empty() && !needs_cxx_runtime)
    lib.runtime_warnings.push_back(
        fmt::format("links torch ({}) but does not need {}: a static C++ runtime of its own is "
                    "linked in, so an exception "
                    "torch throws crashes it (build with a compiler that links {} dynamically)",
                    torch_lib, torch.cxx_runtime(), torch.cxx_runtime()));
  lib.manylinux = policies.strictest_fit(lib.machine, lib.version_needs);
  return lib;
}

InspectedLibrary classify_library(LibraryReport report, const std::set<std::string>& bundled) {
  std::vector<NeedResolution> resolutions(report.needed.size());
  for (size_t i = 0; i < report.needed.size(); ++i)
    if (bundled.count(report.needed[i])) {
      resolutions[i].where = NeedResolution::Where::inside;
      resolutions[i].path = report.needed[i];
    }
  return classify_resolved(std::move(report), resolutions);
}

std::vector<TargetTotal> target_totals(const std::vector<InspectedLibrary>& libraries,
                                       const std::vector<DeviceFile>& device_files,
                                       uint64_t installed_bytes) {
  std::map<cuda::FatbinCode, TargetTotal> by_code;  // in canonical order
  auto add = [&](const std::vector<TargetStats>& targets) {
    for (const auto& t : targets) {
      auto& total = by_code[t.code];
      total.code = t.code;
      total.name = t.name;
      total.libraries += 1;
      total.entries += t.entries;
      total.stored_bytes += t.stored_bytes;
      total.uncompressed_bytes += t.uncompressed_bytes;
      total.compression.insert(t.compression.begin(), t.compression.end());
    }
  };
  for (const auto& lib : libraries) add(lib.targets);
  for (const auto& file : device_files) add(file.targets);
  std::vector<TargetTotal> out;
  out.reserve(by_code.size());
  for (auto& [code, t] : by_code) {
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
    if (lib.machine == "cuda") continue;  // device code says nothing about the host
    if (fit.arch.empty()) fit.arch = lib.machine;
    if (!weakest || lib.manylinux.priority < weakest->manylinux.priority) weakest = &lib;
  }
  if (!weakest) return fit;
  fit.policy = weakest->manylinux.policy;
  fit.tag = weakest->manylinux.tag;
  for (const auto& l : weakest->manylinux.limiting)
    fit.limiting.push_back(weakest->path + ": " + l);
  for (const auto& p : policies.for_arch(fit.arch))
    if (p.name == fit.policy) {
      fit.glibc_major = p.glibc_major;
      fit.glibc_minor = p.glibc_minor;
    }
  for (const auto& lib : libraries) {
    if (lib.machine != fit.arch && lib.machine != "cuda") {
      fit.limiting.push_back(
          fmt::format("{}: machine {} differs from {}", lib.path, lib.machine, fit.arch));
      fit.policy = "linux";
    }
    for (const auto& n : lib.needed_libraries)
      if (n.kind == NeededKind::system) {
        fit.limiting.push_back(fmt::format("{}: needs {} from the system", lib.path, n.soname));
        fit.policy = "linux";
      } else if (n.kind == NeededKind::not_found) {
        fit.limiting.push_back(
            fmt::format("{}: needs {}, not found ({})", lib.path, n.soname, n.note));
        fit.policy = "linux";
      }
  }
  if (fit.policy == "linux") {
    fit.tag = "linux_" + fit.arch;
    fit.glibc_major = fit.glibc_minor = 0;
  }
  return fit;
}

namespace {

// The symbol versions `policy` refuses across the libraries of `arch`, highest first
// within each prefix: "GLIBC_2.34 (libc.so.6, needed by pkg/_C.so)".
std::vector<std::string> refused_versions(const ManylinuxPolicy& policy, const std::string& arch,
                                          const std::vector<InspectedLibrary>& libraries) {
  struct Refusal {
    std::string prefix, number, file;
    std::vector<std::string> libraries;
  };
  std::map<std::string, Refusal> by_version;
  for (const auto& lib : libraries) {
    if (lib.machine != arch) continue;
    for (const auto& need : lib.version_needs) {
      if (need.file.rfind("ld-linux", 0) == 0 || need.file.rfind("ld64.so", 0) == 0) continue;
      for (const auto& v : need.versions) {
        if (policy.allows(v)) continue;
        auto& r = by_version[v];
        auto us = v.find('_');
        r.prefix = us == std::string::npos ? v : v.substr(0, us);
        r.number = us == std::string::npos ? "" : v.substr(us + 1);
        if (r.file.empty()) r.file = need.file;
        if (std::find(r.libraries.begin(), r.libraries.end(), lib.path) == r.libraries.end())
          r.libraries.push_back(lib.path);
      }
    }
  }
  std::vector<const Refusal*> order;
  for (auto& [v, r] : by_version) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const Refusal* a, const Refusal* b) {
    if (a->prefix != b->prefix) return a->prefix < b->prefix;
    return compare_versions(a->number, b->number) > 0;
  });
  std::vector<std::string> out;
  for (const auto* r : order) {
    std::string who = r->libraries.front();
    if (r->libraries.size() > 1) who += fmt::format(" and {} more", r->libraries.size() - 1);
    out.push_back(fmt::format("{}_{} ({}, needed by {})", r->prefix, r->number, r->file, who));
  }
  return out;
}

std::string summarize(const std::vector<std::string>& items, size_t shown) {
  std::vector<std::string> head(items.begin(), items.begin() + std::min(shown, items.size()));
  std::string s = fmt::format("{}", fmt::join(head, ", "));
  if (items.size() > shown) s += fmt::format(" and {} more", items.size() - shown);
  return s;
}

}  // namespace

ClaimCheck check_manylinux_claim(const std::vector<std::string>& platform_tags, const SetFit& fit,
                                 const std::vector<InspectedLibrary>& libraries) {
  ClaimCheck check;
  const auto& policies = ManylinuxPolicies::get();
  for (const auto& tag : platform_tags) {
    auto claim = policies.parse_platform_tag(tag);
    if (!claim || fit.tag.empty()) continue;
    if (claim->arch != fit.arch) {
      check.ok = false;
      check.problem = fmt::format("claims {} but the libraries are {}", tag, fit.arch);
      return check;
    }
    const bool too_new = std::pair(claim->glibc_major, claim->glibc_minor) <
                         std::pair(fit.glibc_major, fit.glibc_minor);
    if (fit.policy != "linux" && !too_new) continue;
    check.ok = false;
    check.problem = fit.policy == "linux"
                        ? fmt::format("claims {} but the libraries fit no manylinux policy", tag)
                        : fmt::format("claims {} but the libraries need {}", tag, fit.tag);
    // What breaks this claim: versions the claimed policy refuses, then needs from nowhere.
    std::vector<std::string> reasons;
    const ManylinuxPolicy* claimed = nullptr;
    for (const auto& p : policies.for_arch(fit.arch))
      if (p.name == claim->policy) claimed = &p;
    if (!claimed)  // a tag newer than the data: the newest policy not above it
      for (const auto& p : policies.for_arch(fit.arch))
        if (std::pair(p.glibc_major, p.glibc_minor) <=
                std::pair(claim->glibc_major, claim->glibc_minor) &&
            (!claimed || p.priority < claimed->priority))
          claimed = &p;
    std::vector<std::string> versions;
    if (claimed) versions = refused_versions(*claimed, fit.arch, libraries);
    if (!versions.empty()) reasons.push_back("needs " + summarize(versions, 5));
    std::vector<std::string> nowhere;
    for (const auto& l : fit.limiting)
      if (l.find(": needs ") != std::string::npos || l.find(": machine ") != std::string::npos)
        nowhere.push_back(l);
    if (!nowhere.empty()) reasons.push_back(summarize(nowhere, 3));
    if (reasons.empty() && !fit.limiting.empty()) reasons.push_back(summarize(fit.limiting, 3));
    if (!reasons.empty()) check.problem += fmt::format(" ({})", fmt::join(reasons, "; "));
    return check;
  }
  return check;
}

std::optional<std::string> other_gpu_platform(const InspectedLibrary& library) {
  const auto& runtimes = OtherGpuRuntimes::get();
  for (const auto& n : library.needed_libraries)
    if (auto platform = runtimes.platform_of(n.soname)) return platform;
  return std::nullopt;
}

void check_wheel_claim(WheelReport& w, const std::vector<std::string>& platform_tags) {
  auto fit = fit_of_set(w.libraries);
  w.manylinux_needed = fit.tag;
  w.manylinux_limiting = fit.limiting;
  auto claim = check_manylinux_claim(platform_tags, fit, w.libraries);
  w.claim_ok = claim.ok;
  w.claim_problem = claim.problem;
  w.other_gpu_libraries.clear();
  std::vector<InspectedLibrary> own;  // the CUDA and CPU libraries
  for (const auto& lib : w.libraries) {
    if (auto platform = other_gpu_platform(lib))
      w.other_gpu_libraries.push_back({lib.path, *platform});
    else if (!claim.ok)
      own.push_back(lib);
  }
  w.claim_ok_without_other_gpu = claim.ok;
  w.claim_problem_without_other_gpu = claim.problem;
  if (claim.ok || w.other_gpu_libraries.empty()) return;
  auto own_claim = check_manylinux_claim(platform_tags, fit_of_set(own), own);
  w.claim_ok_without_other_gpu = own_claim.ok;
  w.claim_problem_without_other_gpu = own_claim.problem;
}

}  // namespace tailor::inspect
