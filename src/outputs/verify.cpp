#include "outputs/verify.h"

#include <fmt/format.h>

#include <algorithm>

#include "cuda/fatbin_code.h"
#include "inspect/inspect_outcome.h"
#include "inspect/inspect_report.h"
#include "util/strings.h"

namespace tailor::outputs {
namespace {

std::string names_of(const cuda::TargetSet& set) { return join(set.names(), ", "); }

/// set \ minus, over the canonical (numeric) order of CudaTarget.
cuda::TargetSet difference(const cuda::TargetSet& set, const cuda::TargetSet& minus) {
  cuda::TargetSet out;
  for (const auto& t : set.targets)
    if (!minus.contains(t)) out.add(t);
  return out;
}

const plan::PackageAddition* declared_for(const std::vector<plan::PackageAddition>& declared,
                                          const cuda::CudaTarget& t) {
  for (const auto& a : declared)
    if (a.target == t) return &a;
  return nullptr;
}

}  // namespace

bool TargetVerification::ok() const {
  if (!any_device_code) return false;
  for (const auto& l : libraries)
    if (!l.ok()) return false;
  return true;
}

std::string TargetVerification::describe_problems() const {
  if (!any_device_code) return "no library in the wheel carries CUDA device code" + fallback_hint;
  std::string out;
  for (const auto& l : libraries) {
    if (l.ok()) continue;
    std::vector<std::string> parts;
    if (!l.missing.empty()) {
      std::string m = "missing " + names_of(l.missing);
      if (!l.fallback.empty()) m += " (" + join(l.fallback, "; ") + ")";
      parts.push_back(m);
    }
    if (!l.unexpected.empty()) parts.push_back("unexpected " + names_of(l.unexpected));
    std::string asked = names_of(expected_targets);
    if (!declared.empty()) {
      std::vector<std::string> extra;
      for (const auto& a : declared) extra.push_back(a.target.name());
      asked += "; the package adds " + join(extra, ", ");
    }
    out += fmt::format("{}: {} (asked for {})\n", l.path, join(parts, "; "), asked);
  }
  return out;
}

std::vector<std::string> TargetVerification::describe_additions() const {
  std::vector<std::string> out;
  for (const auto& a : declared) {
    size_t with = 0;
    for (const auto& l : libraries)
      if (l.package_added.contains(a.target)) ++with;
    if (with == 0) continue;
    std::string line = a.target.name() + " " + a.reason;
    if (with != libraries.size())
      line += fmt::format(" (in {} of {} libraries)", with, libraries.size());
    out.push_back(std::move(line));
  }
  return out;
}

std::string TargetVerification::summary() const {
  std::string s = "exactly " + names_of(expected_targets) + " in every library with device code";
  for (const auto& a : describe_additions()) s += "; " + a;
  return s;
}

Expected<LibraryTargets> library_targets(const inspect::InspectedLibrary& lib) {
  LibraryTargets lt;
  lt.path = lib.path;
  for (const auto& t : lib.targets) {
    // LTO IR (lto_<arch>) is linked by the library itself (nvJitLink); the driver loads none
    // of it, so it is no target the build was asked for, and no unexpected one either.
    if (t.code.is_lto_ir()) continue;
    auto target = t.code.target();
    if (!target)
      return make_error(fmt::format("{}: target '{}' not understood", lib.path, t.code.name()));
    lt.targets.add(*target);
    lt.bytes_per_target[target->name()] += t.stored_bytes;
  }
  // Device code here means targets: a library of LTO IR alone is judged like one without.
  lt.has_device_code = lib.has_device_code && !lt.targets.empty();
  return lt;
}

TargetVerification compare_targets(const std::vector<LibraryTargets>& libraries,
                                   const cuda::TargetSet& expected,
                                   const std::vector<plan::PackageAddition>& declared) {
  TargetVerification v;
  v.expected_targets = expected;
  v.expected = expected.names();
  v.declared = declared;
  for (const auto& lib : libraries) {
    if (!lib.has_device_code) continue;
    v.any_device_code = true;
    LibraryVerdict verdict;
    verdict.path = lib.path;
    verdict.missing = difference(expected, lib.targets);
    for (const auto& t : difference(lib.targets, expected).targets) {
      if (declared_for(declared, t))
        verdict.package_added.add(t);
      else
        verdict.unexpected.add(t);
    }
    for (const auto& t : verdict.missing.targets) {
      if (t.kind != cuda::TargetKind::sass) continue;
      auto cov = cuda::coverage_on(lib.targets, t.cc);
      std::string line = fmt::format("{}: {}", t.cc.str(), cuda::run_mode_label(cov.mode));
      if (cov.via) line += " via " + cov.via->name();
      verdict.fallback.push_back(std::move(line));
    }
    v.libraries.push_back(std::move(verdict));
    for (const auto& [t, bytes] : lib.bytes_per_target) v.bytes_per_target[t] += bytes;
  }
  return v;
}

Expected<TargetVerification> verify_wheel_targets(
    const std::string& wheel, const cuda::TargetSet& expected,
    const std::vector<plan::PackageAddition>& declared) {
  TAILOR_TRY(report, inspect::inspect_paths({wheel}));
  if (report.wheels.empty()) return make_error(fmt::format("{}: not read as a wheel", wheel));
  auto in_wheel = [&](const Error& e) {
    return make_error(fmt::format("{}: {}", wheel, e.message));
  };
  std::vector<LibraryTargets> libs;
  for (const auto& lib : report.wheels.front().libraries) {
    auto lt = library_targets(lib);
    if (!lt) return in_wheel(lt.error());
    libs.push_back(std::move(*lt));
  }
  auto verification = compare_targets(libs, expected, declared);
  for (const auto& lib : report.wheels.front().libraries) {
    verification.library_machines.emplace_back(lib.path, lib.machine);
    for (const auto& w : lib.runtime_warnings)
      verification.runtime_problems.push_back(lib.path + ": " + w);
    for (const auto& w : lib.loader_warnings)
      verification.inspect_warnings.push_back(lib.path + ": " + w);
  }
  auto outcome = inspect::judge(report, nullptr);
  verification.inspect_failures = outcome.failures;
  for (auto& w : outcome.warnings) verification.inspect_warnings.push_back(std::move(w));
  return verification;
}

}  // namespace tailor::outputs
