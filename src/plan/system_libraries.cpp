#include "plan/system_libraries.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "data/toml_document.h"
#include "plan/torch_plan_context.h"
#include "util/strings.h"
#include "util/version.h"

namespace fs = std::filesystem;

namespace tailor::plan {

namespace {
struct Tables {
  std::vector<SystemLibrary> libraries, blas;
};

// The one loader of data/pytorch/system_libraries.toml.
const Tables& tables() {
  static const Tables t = [] {
    auto doc = data::toml_document("pytorch/system_libraries.toml");
    Tables out;
    for (const auto& row : doc["library"].array()) {
      SystemLibrary l;
      l.name = row["name"].string();
      l.folder = row["folder"].string();
      l.switch_var = row["switch"].string_or("");
      l.value = row["value"].string_or("ON");
      l.feature = row["feature"].string_or("");
      l.cuda = row["cuda"].boolean_or(false);
      l.debian = row["debian"].strings_or_empty();
      l.files = row["files"].strings_or_empty();
      l.env = row["env"].string_table_or_empty();
      l.without = row["without"].string_table_or_empty();
      l.since = row["since"].string_or("");
      if (l.without.empty() == (l.debian.empty() || l.files.empty()))
        row.fail("needs either debian and files (a system copy) or without (none)");
      if (l.folder.rfind("third_party/", 0) != 0) row["folder"].fail("not under third_party/");
      out.libraries.push_back(std::move(l));
    }
    for (const auto& row : doc["blas"].array()) {
      SystemLibrary l;
      l.name = row["name"].string();
      l.debian = row["debian"].strings_or_empty();
      l.files = row["files"].strings_or_empty();
      if (l.debian.empty() || l.files.empty()) row.fail("needs debian and files");
      out.blas.push_back(std::move(l));
    }
    return out;
  }();
  return t;
}
}  // namespace

const std::vector<SystemLibrary>& system_libraries() { return tables().libraries; }
const std::vector<SystemLibrary>& blas_libraries() { return tables().blas; }

std::vector<std::string> missing_vendored_folders(const std::string& source_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path root(source_dir);
  if (source_dir.empty() || !fs::is_regular_file(root / "cmake" / "Dependencies.cmake", ec))
    return out;
  for (const auto& l : system_libraries()) {
    const fs::path dir = root / l.folder;
    const bool present = fs::is_directory(dir, ec) && !fs::is_empty(dir, ec);
    if (!present && std::find(out.begin(), out.end(), l.folder) == out.end())
      out.push_back(l.folder);
  }
  return out;
}

MissingSystemLibraries missing_system_libraries(
    const std::vector<SystemLibraryUse>& uses,
    const std::function<bool(const std::string&)>& exists) {
  MissingSystemLibraries out;
  std::vector<std::string> packages;
  for (const auto& u : uses) {
    auto there = [&](const std::string& file) {  // "A|B": either
      const auto alternatives = split_any(file, "|");
      return std::any_of(alternatives.begin(), alternatives.end(), exists);
    };
    if (std::all_of(u.files.begin(), u.files.end(), there)) continue;
    out.missing.push_back(u);
    for (const auto& p : u.debian)
      if (std::find(packages.begin(), packages.end(), p) == packages.end()) packages.push_back(p);
  }
  if (!packages.empty()) out.install_command = "sudo apt-get install -y " + join(packages, " ");
  return out;
}

namespace torch_context {

// After the layout (the source folder) and the features: which libraries come from the
// system, their switches in the build's environment, and a warning for a missing folder
// that upstream's CMake has no switch for.
void resolve_system_libraries(Context& c) {
  TorchPlan& p = c.plan;
  const bool all = p.variant.system_libs.value_or(false);
  std::vector<std::string> missing;
  if (p.variant.source_dir) missing = missing_vendored_folders(p.layout.source_dir);
  // The plan's BLAS, in a tree shaped like PyTorch's (a test fixture needs none): from the
  // system whatever third_party/ holds, so doctor and the build's preflight check it.
  std::error_code ec;
  if (p.variant.source_dir &&
      fs::is_regular_file(fs::path(p.layout.source_dir) / "cmake" / "Dependencies.cmake", ec))
    for (const auto& b : blas_libraries())
      if (to_lower(b.name) == to_lower(p.blas))
        p.system_libraries.push_back({to_lower(b.name), "", "", "", b.debian, b.files,
                                      "the plan's BLAS (BLAS=" + p.blas + ")"});
  if (!all && missing.empty()) return;
  if (all) p.env["USE_SYSTEM_LIBS"] = "ON";
  std::vector<std::string> unswitched;
  for (const auto& l : system_libraries()) {
    if (!l.feature.empty() && !p.features[l.feature]) continue;
    if (l.cuda && !p.cuda) continue;
    if (!l.since.empty() && compare_versions(p.torch_version, l.since) < 0) continue;
    const bool gone = std::find(missing.begin(), missing.end(), l.folder) != missing.end();
    if (!l.without.empty()) {  // no system copy: the part it serves goes
      if (!gone) continue;
      for (const auto& [k, v] : l.without) p.env[k] = v;
      auto asked = p.variant.features.find(l.feature);
      if (!l.feature.empty() && asked != p.variant.features.end() && asked->second) {
        c.input_error("features",
                      fmt::format("--with {} needs {}, which this tree lacks, and no system "
                                  "package provides it",
                                  l.feature, l.folder),
                      fmt::format("build without it (--without {}), or fill the folder: git "
                                  "submodule update --init {}",
                                  l.feature, l.folder));
      } else if (!l.feature.empty() && p.features[l.feature]) {
        p.features[l.feature] = false;
        p.notes.push_back(
            fmt::format("{} is off: the tree has no {} and no system package "
                        "provides it",
                        l.feature, l.folder));
      }
      continue;
    }
    // --system-libs takes what has a switch; a library without one comes from the system
    // only when the tree has no copy of it.
    if (!gone && !(all && !l.switch_var.empty())) continue;
    std::string reason = gone ? l.folder + " is missing" : "--system-libs";
    p.system_libraries.push_back(
        {l.name, l.folder, l.switch_var, l.value, l.debian, l.files, std::move(reason)});
    for (const auto& [k, v] : l.env) p.env[k] = v;
    if (!l.switch_var.empty())
      p.env[l.switch_var] = l.value;
    else
      unswitched.push_back(l.folder);
  }
  if (!unswitched.empty())
    c.add(ProblemSeverity::warning, ProblemKind::input, "third-party",
          fmt::format("{} {} missing and PyTorch's CMake has no switch to take {} from the "
                      "system: only a tree patched for it (Debian's) builds without",
                      join(unswitched, ", "), unswitched.size() == 1 ? "is" : "are",
                      unswitched.size() == 1 ? "it" : "them"),
          "build a tree patched to use the system's copies, or fill the folders: git "
          "submodule update --init --recursive");
}

}  // namespace torch_context
}  // namespace tailor::plan
