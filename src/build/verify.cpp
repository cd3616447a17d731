#include "build/verify.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "inspect/inspect_report.h"
#include "util/strings.h"

namespace tailor::build {

bool TargetVerification::ok() const {
  if (!any_device_code) return false;
  for (const auto& l : libraries)
    if (!l.ok()) return false;
  return true;
}

std::string TargetVerification::describe_problems() const {
  if (!any_device_code) return "no library in the wheel carries CUDA device code";
  std::string out;
  for (const auto& l : libraries) {
    if (l.ok()) continue;
    std::vector<std::string> parts;
    if (!l.missing.empty()) parts.push_back("missing " + join(l.missing, ", "));
    if (!l.unexpected.empty()) parts.push_back("unexpected " + join(l.unexpected, ", "));
    out += fmt::format("{}: {} (asked for {})\n", l.path, join(parts, "; "), join(expected, ", "));
  }
  return out;
}

TargetVerification compare_targets(const std::vector<LibraryTargets>& libraries,
                                   const std::vector<std::string>& expected) {
  TargetVerification v;
  v.expected = expected;
  std::sort(v.expected.begin(), v.expected.end());
  v.expected.erase(std::unique(v.expected.begin(), v.expected.end()), v.expected.end());
  std::set<std::string> want(v.expected.begin(), v.expected.end());
  for (const auto& lib : libraries) {
    if (!lib.has_device_code) continue;
    v.any_device_code = true;
    std::set<std::string> have(lib.targets.begin(), lib.targets.end());
    LibraryVerdict verdict;
    verdict.path = lib.path;
    std::set_difference(want.begin(), want.end(), have.begin(), have.end(), std::back_inserter(verdict.missing));
    std::set_difference(have.begin(), have.end(), want.begin(), want.end(), std::back_inserter(verdict.unexpected));
    v.libraries.push_back(std::move(verdict));
    for (const auto& [t, bytes] : lib.bytes_per_target) v.bytes_per_target[t] += bytes;
  }
  return v;
}

}  // namespace tailor::build

namespace tailor::build {

Expected<TargetVerification> verify_wheel_targets(const std::string& wheel,
                                                  const std::vector<std::string>& expected) {
  TAILOR_TRY(report, inspect::inspect_paths({wheel}));
  if (report.wheels.empty()) return make_error(fmt::format("{}: not read as a wheel", wheel));
  std::vector<LibraryTargets> libs;
  for (const auto& lib : report.wheels.front().libraries) {
    LibraryTargets lt;
    lt.path = lib.path;
    lt.has_device_code = lib.has_device_code;
    for (const auto& t : lib.targets) {
      lt.targets.push_back(t.name);
      lt.bytes_per_target[t.name] += t.stored_bytes;
    }
    libs.push_back(std::move(lt));
  }
  return compare_targets(libs, expected);
}

}  // namespace tailor::build
