#include "inspect/inspect_outcome.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "inspect/torch_pin.h"
#include "util/strings.h"

namespace tailor::inspect {

namespace {

// The last part of a path: wheels are named by their file name, not the folder they are in.
std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A verdict's library as the reader knows it: the member of a wheel, or the file.
std::string library_name(const std::string& label) {
  auto bang = label.rfind('!');
  return bang == std::string::npos ? label : label.substr(bang + 1);
}

// "a.so" / "a.so and 3 more"
std::string first_and_more(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  if (names.size() == 1) return names.front();
  return fmt::format("{} and {} more", names.front(), names.size() - 1);
}

std::string libraries(size_t n) { return n == 1 ? "library" : "libraries"; }

// What a group of verdicts judged: libraries, folders of device code files (their labels end
// in '/': device_file_report.h), or both.
std::string judged_units(const std::vector<std::string>& labels) {
  const size_t folders = static_cast<size_t>(std::count_if(
      labels.begin(), labels.end(), [](const std::string& l) { return l.ends_with('/'); }));
  if (folders == 0) return libraries(labels.size());
  if (folders == labels.size())
    return labels.size() == 1 ? "folder of device code files" : "folders of device code files";
  return "libraries and folders of device code files";
}

void judge_verdicts(const Verdicts& verdicts, InspectOutcome& out) {
  for (const auto& p : verdicts.problems)
    out.failures.push_back("verdict: " + p + " (see the verdict FAIL line)");
  // One line per --gpu device, one for --require, one for --exact: the count and the first.
  struct Group {
    size_t total = 0;
    std::vector<std::string> labels;
    std::vector<const LibraryVerdict*> failed;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const auto& v : verdicts.items) {
    const std::string key = v.check == VerdictCheck::gpu
                                ? "--gpu " + v.device_label()
                                : "--" + std::string(verdict_check_key(v.check));
    if (!groups.count(key)) order.push_back(key);
    auto& g = groups[key];
    ++g.total;
    g.labels.push_back(v.library);
    if (!v.pass) g.failed.push_back(&v);
  }
  for (const auto& key : order) {
    const auto& g = groups[key];
    if (g.failed.empty()) continue;
    const LibraryVerdict& first = *g.failed.front();
    std::vector<std::string> names;
    for (const auto* v : g.failed) names.push_back(library_name(v->library));
    const std::string count =
        fmt::format("{} of {} {}", g.failed.size(), g.total, judged_units(g.labels));
    std::string what;
    switch (first.check) {
      case VerdictCheck::gpu:
        what = fmt::format("{} {} not run on it ({})", count, g.failed.size() == 1 ? "does" : "do",
                           first_and_more(names));
        break;
      case VerdictCheck::require:
        what = fmt::format("{} {} required targets ({} lacks {})", count,
                           g.failed.size() == 1 ? "lacks" : "lack", names.front(),
                           join(first.missing, " "));
        break;
      case VerdictCheck::exact: {
        std::vector<std::string> diff;
        if (!first.missing.empty()) diff.push_back("lacks " + join(first.missing, " "));
        if (!first.extra.empty()) diff.push_back("has extra " + join(first.extra, " "));
        what = fmt::format("{} {} from the spec ({} {})", count,
                           g.failed.size() == 1 ? "differs" : "differ", names.front(),
                           join(diff, "; "));
        break;
      }
    }
    out.failures.push_back(fmt::format("{}: {} (see the verdict FAIL lines)", key, what));
  }
}

// A wheel whose libraries link torch is bound to the torch it was built against; pip and uv
// install whatever torch its requirement allows (a newer one: undefined symbols at import).
void judge_torch_pin(const WheelReport& w, InspectOutcome& out) {
  const InspectedLibrary* linked = nullptr;
  std::string needed;
  for (const auto& lib : w.libraries)
    for (const auto& n : lib.needed_libraries)
      if (n.kind == NeededKind::torch && !linked) {
        linked = &lib;
        needed = n.soname;
      }
  if (!linked || pinned_torch(w.requires_dist)) return;
  std::string declared;
  for (const auto& r : w.requires_dist)
    if (requirement_name(r) == "torch") declared = r;
  out.warnings.push_back(fmt::format(
      "{}: {} links torch ({}) but the wheel does not pin the torch it was built against "
      "(METADATA: {}): pip and uv may install another torch beside it, whose symbols it lacks",
      base_name(w.path), linked->path, needed,
      declared.empty() ? "no torch requirement" : "Requires-Dist: " + declared));
}

void judge_wheel(const WheelReport& w, InspectOutcome& out) {
  const std::string wheel = base_name(w.path);
  if (!w.record.present) {
    out.failures.push_back(wheel + ": the wheel has no RECORD (see the RECORD line)");
  } else if (!w.record.passed()) {
    out.failures.push_back(fmt::format(
        "{}: RECORD check failed: {} mismatched, {} unlisted, {} missing (see the RECORD line)",
        wheel, w.record.mismatches.size(), w.record.unlisted.size(), w.record.missing.size()));
  }
  if (!w.claim_ok_without_other_gpu) {
    out.failures.push_back(
        fmt::format("{}: its manylinux tag is wrong: {} (see the manylinux line)", wheel,
                    w.claim_problem_without_other_gpu));
  } else if (!w.claim_ok) {
    std::vector<std::string> platforms, names;
    for (const auto& lib : w.other_gpu_libraries) {
      if (std::find(platforms.begin(), platforms.end(), lib.platform) == platforms.end())
        platforms.push_back(lib.platform);
      names.push_back(lib.path);
    }
    out.warnings.push_back(
        fmt::format("{}: its manylinux tag {} holds for the CUDA and CPU libraries but not for the "
                    "{} {} ({}), which load only on "
                    "those GPUs: a warning, not a failure (see the manylinux line)",
                    wheel, w.manylinux_claimed, join(platforms, " and "), libraries(names.size()),
                    first_and_more(names)));
  }
  judge_torch_pin(w, out);
  if (!w.tags_consistent)
    out.warnings.push_back(
        wheel +
        ": the tags in its WHEEL file differ from those of its file name (see the tags line)");
}

}  // namespace

std::string InspectOutcome::failure_line() const {
  constexpr size_t k_shown = 3;
  std::vector<std::string> shown(failures.begin(),
                                 failures.begin() + std::min(k_shown, failures.size()));
  std::string line = join(shown, "; ");
  if (failures.size() > k_shown) line += fmt::format(" (and {} more)", failures.size() - k_shown);
  return line;
}

InspectOutcome judge(const InspectReport& report, const Verdicts* verdicts) {
  InspectOutcome out;
  if (verdicts) judge_verdicts(*verdicts, out);
  for (const auto& w : report.wheels) judge_wheel(w, out);
  if (!report.skipped.empty())
    out.warnings.push_back(
        fmt::format("{} {} under the folders could not be read (see the skipped lines)",
                    report.skipped.size(), report.skipped.size() == 1 ? "file" : "files"));
  return out;
}

}  // namespace tailor::inspect
