// A package stack cannot take as a wheel: its sdist found with pip, fetched into the cache
// and judged buildable (a recipe, and the build tools its build system names), or unsupported.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plan/extension_recipe.h"
#include "stack/stack_context.h"
#include "util/files.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace tailor::stack {

namespace {

/// Finds NAME's sdist (pinned to `version` when given) with pip, --no-deps.
Expected<std::optional<ResolvedDist>> find_sdist(Context& c, const std::string& requirement) {
  // A lookup stored by an earlier run first, isolated or not: the isolated one of a CUDA
  // extension fails each time (its build needs torch), which is never stored.
  for (bool isolated : {true, false}) {
    std::vector<std::string> extra = {"--no-deps", "--no-binary=:all:"};
    if (!isolated) extra.push_back("--no-build-isolation");
    TAILOR_TRY(run, pip_dry_run(c, {requirement}, extra, true, true));
    if (run.ok && !run.dists.empty() && !run.dists.front().wheel)
      return std::optional<ResolvedDist>(run.dists.front());
  }
  for (bool isolated : {true, false}) {
    std::vector<std::string> extra = {"--no-deps", "--no-binary=:all:"};
    if (!isolated) extra.push_back("--no-build-isolation");
    // pip refuses sdists with --platform unless --no-deps, which is set: the tags stay.
    TAILOR_TRY(run, pip_dry_run(c, {requirement}, extra, true));
    if (run.ok && !run.dists.empty() && !run.dists.front().wheel)
      return std::optional<ResolvedDist>(run.dists.front());
    // No sdist of the package itself. A build dependency the isolated build could not get
    // (--no-binary=:all: holds for them too: torch for xformers) is not that: the build
    // without isolation, against this interpreter's packages, may still read the sdist.
    if (unsatisfied_requirement(run.err) == requirement_name(requirement))
      return std::optional<ResolvedDist>();
  }
  return std::optional<ResolvedDist>();
}

/// What building from this sdist needs beyond a compiler (Rust, CMake ...), when missing.
std::string build_needs(Context& c, const fs::path& sdist) {
  CommandSpec spec;
  spec.argv = {c.python, "-c", python_helper("sdist_build_system.py"), sdist.string()};
  spec.timeout = std::chrono::seconds(60);
  auto r = c.runner.run(spec);
  if (!r.ok()) return "";
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("requires")) return "";
  std::vector<std::string> needs;
  for (const auto& req : j["requires"]) {
    if (!req.is_string()) continue;
    std::string name = requirement_name(req.get<std::string>());
    for (const auto& n : facts().build_needs)
      if (name == n.requirement && find_in_path(n.tool).empty())
        needs.push_back(fmt::format("needs {} ({} is not on PATH)", n.what, n.tool));
  }
  std::sort(needs.begin(), needs.end());
  needs.erase(std::unique(needs.begin(), needs.end()), needs.end());
  return join(needs, "; ");
}

}  // namespace

/// Turns an unusable or missing wheel into a build from the sdist, or unsupported.
Expected<void> fall_back_to_source(Context& c, Row& row, const std::string& requirement,
                                   const std::string& why) {
  std::optional<ResolvedDist> sdist;
  if (!row.sdist_url.empty()) {  // pip resolved it from source already
    sdist = ResolvedDist{row.name,      row.key,          row.version,
                         row.sdist_url, row.sdist_sha256, row.sdist_file,
                         false,         row.requested,    {}};
  } else {
    TAILOR_TRY(found, find_sdist(c, requirement));
    sdist = std::move(found);
  }
  if (!sdist) {
    row.buildable = "no";
    row.outcome = Outcome::unsupported;
    row.reason = why + "; no sdist on the index";
    return {};
  }
  TAILOR_TRY(paths, fetch_into_cache(c, {&*sdist}));
  row.buildable = "yes";
  row.outcome = Outcome::build;
  row.sdist_url = sdist->url;
  if (sdist->sha256.empty()) {
    TAILOR_TRY(sha, file_sha256(paths.at(sdist->key)));
    row.sdist_sha256 = sha;
  } else {
    row.sdist_sha256 = sdist->sha256;
  }
  row.sdist_file = paths.at(sdist->key).string();
  if (row.version.empty()) row.version = sdist->version;
  const auto& recipe = plan::recipe_for(row.key);
  row.recipe = recipe.name == "generic" ? "generic" : recipe.name;
  std::string needs = build_needs(c, paths.at(sdist->key));
  row.reason = fmt::format("{}; build from {} ({} recipe){}", why, sdist->filename, row.recipe,
                           needs.empty() ? "" : "; " + needs);
  return {};
}

}  // namespace tailor::stack
