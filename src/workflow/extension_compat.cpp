// The compatibility layer in an extension build: the known API removals a package without
// a recipe uses, bridged in tailor's copy of its source before the build driver runs and
// listed in the report; and, when the build still fails, the diagnosis that names the
// removal the compiler tripped over.
#include <fmt/format.h>

#include <algorithm>
#include <span>

#include "compat/bridge.h"
#include "compat/removals.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "workflow/extension_helpers.h"

namespace tailor::workflow::detail {
using outputs::BuildReport;

// --keep-package-source builds the package as it is. The changes are named in the build's
// environment, so a build tree made from other changes (or none) is not reused.
StepResult bridge_removed_apis(const ExtensionBuildOptions& o, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  if (o.keep_package_source || rep.recipe != "generic") return std::nullopt;
  compat::StackVersions stack;
  if (s.python && s.python->torch) stack.torch = s.python->torch->version;
  if (s.toolkit && s.toolkit->release.major > 0) stack.cuda = s.toolkit->release.to_string();
  auto bridged = compat::bridge_source(s.source_dir, stack);
  if (!bridged)
    return stop(BuildStatus::build_failed,
                "bridging removed APIs in the copy of the source: " + bridged.error().message);
  std::string all;
  for (const auto& c : bridged->changes) {
    rep.compat_changes.push_back({c.file, c.line, c.removal, c.from, c.to, c.removed_in, c.text()});
    all += c.text() + "\n";
  }
  rep.compat_left_alone = bridged->left_alone;
  // The build driver raises the package's own older -std flags (choices.py, old_std_back)
  // and says each as a `package` line; unset, they stay (--keep-package-source).
  if (const auto& raise = bridged->cxx_raise) {
    rep.env["TAILOR_CXX_STANDARD"] = raise->standard;
    rep.env["TAILOR_CXX_OLDER"] = join(raise->from, " ");
    rep.env["TAILOR_CXX_REMOVAL"] = raise->id + ", removed in " + raise->removed_in;
  }
  for (const auto& a : bridged->added) all += a.path + "\n" + a.text;
  if (!all.empty()) {
    rep.env["TAILOR_SOURCE_COMPAT"] =
        Sha256::hex(Sha256::of(std::as_bytes(std::span(all.data(), all.size())))).substr(0, 16);
    status(o, fmt::format("==> {} uses of removed APIs bridged in the copy of the source (the "
                          "summary lists them; --keep-package-source builds it as it is)",
                          bridged->changes.size()));
  }
  return std::nullopt;
}

namespace {

// The failed unit's whole output, as the runner kept the step's last lines (the run's
// LogTail, never the log read back): from the block's first line to the next ninja
// `FAILED:` line. The block shows at most its first 40 lines, and a compiler's error can
// follow a long run of warnings (maskrcnn-benchmark's ROIAlign_cpu.cpp: 80 lines of
// `.type()` deprecation notes before the error at AT_DISPATCH). Line numbers of the log.
std::optional<compat::RemovalInLog> removal_in_failed_unit(const builder::LogTail& tail,
                                                           size_t first_line) {
  // The block is in the tail, or in the head the runner kept of a step that outgrew it.
  const bool in_head = !tail.head.empty() && first_line >= tail.head_first_line &&
                       first_line - tail.head_first_line < tail.head.size();
  const std::vector<std::string>& lines = in_head ? tail.head : tail.lines;
  const size_t start = in_head ? tail.head_first_line : tail.first_line;
  if (first_line < start || first_line - start >= lines.size()) return std::nullopt;
  const size_t from = first_line - start;
  size_t to = from + 1;
  while (to < lines.size() && !lines[to].starts_with("FAILED:")) ++to;
  const std::vector<std::string> unit(lines.begin() + static_cast<std::ptrdiff_t>(from),
                                      lines.begin() + static_cast<std::ptrdiff_t>(to));
  auto found = compat::removal_in_log(join(unit, "\n"), compat::removals());
  if (found) found->line_number += first_line - 1;
  return found;
}

}  // namespace

void name_known_removals(const ExtensionBuildOptions& o, ExtensionBuildState& s,
                         const builder::LogTail& tail) {
  const BuildReport& rep = s.result.report;
  if (rep.recipe != "generic" || !s.result.error_block) return;
  // The first error block, as the run diagnosed it from the log's last lines; then the rest
  // of that failed unit's output.
  const auto& block = *s.result.error_block;
  auto found = compat::removal_in_log(join(block.lines, "\n"), compat::removals());
  if (found)
    found->line_number += block.first_line - 1;
  else
    found = removal_in_failed_unit(tail, block.first_line);
  if (!found) return;
  const compat::RemovalHit* hit = &found->hit;
  const std::string& line = found->line;
  diagnose::Diagnosis d;
  d.pattern_id = "compat-" + hit->id;
  d.quoted_line = std::string(trim(line));
  d.line_number = found->line_number;
  d.priority = 20;
  d.cause =
      fmt::format("The package uses {}, removed in {}: {}.", hit->api, hit->removed_in, hit->why);
  // What tailor changed in the file the compiler names, if anything.
  std::vector<std::string> changed;
  for (const auto& c : rep.compat_changes)
    if (line.find(c.file) != std::string::npos) changed.push_back(c.text);
  if (o.keep_package_source) {
    d.fix = "tailor bridges this in its copy of the source: build without --keep-package-source.";
  } else if (rep.compat_changes.empty()) {
    d.fix = rep.compat_left_alone.empty()
                ? "tailor did not bridge this use (no exact rewrite applies here): port the "
                  "package's source to today's API, or build with the release it was written for."
                : "tailor left it alone: " + join(rep.compat_left_alone, "; ") + ".";
  } else {
    d.fix = fmt::format(
        "tailor bridged {} uses of removed APIs (the summary lists them){}, but not this one: "
        "port this use by hand, or build with the release the package was written for.",
        rep.compat_changes.size(), changed.empty() ? "" : "; in this file: " + join(changed, "; "));
  }
  s.result.diagnoses.insert(s.result.diagnoses.begin(), std::move(d));
}

}  // namespace tailor::workflow::detail
