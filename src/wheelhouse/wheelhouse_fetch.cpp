#include "wheelhouse/wheelhouse_fetch.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/wheel.h"
#include "inspect/torch_pin.h"
#include "util/files.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/user_file.h"
#include "wheelhouse/index_pages.h"
#include "wheelhouse/wheelhouse.h"
#include "wheelhouse/wheelhouse_store.h"

namespace tailor::wheelhouse {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t k_max_index_bytes = uint64_t{16} << 20;

std::string json_text(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "3.12.3" -> "3.12"; "13.0.88" -> "13.0".
std::string major_minor(const std::string& version) {
  auto first = version.find('.');
  if (first == std::string::npos) return version;
  auto second = version.find_first_of(". ", first + 1);
  return version.substr(0, second);
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

namespace {

enum class Match { build, stack };

// The wheel pins the public version of the torch it was built against (torch==2.11.0, which
// 2.11.0+cu130 and 2.11.0 both satisfy) and needs that torch's CUDA: a torch of another
// release, or another CUDA (or none), is another build.
std::string torch_mismatch(const std::string& wheel_text, const std::string& here_text) {
  auto wheel = inspect::parse_torch_build(wheel_text);
  auto here = inspect::parse_torch_build(here_text);
  if (!wheel && !here) return {};
  if (!wheel || !here) return fmt::format("torch {} vs {}", wheel_text, here_text);
  if (!inspect::torch_matches_pin(here->version, inspect::public_version(wheel->version)))
    return fmt::format("torch {} vs {} (the wheel pins torch=={})", wheel->version, here->version,
                       inspect::public_version(wheel->version));
  if (major_minor(wheel->cuda) != major_minor(here->cuda))
    return fmt::format("torch {} for CUDA {} vs for {}", wheel->version,
                       wheel->cuda.empty() ? "none" : wheel->cuda,
                       here->cuda.empty() ? "none" : here->cuda);
  return {};
}

std::string mismatch(const WheelEntry& e, const BuildInputs& in, Match how) {
  if (e.foreign || !e.provenance.is_object()) return "not built by tailor";
  const auto& p = e.provenance;
  if (formats::normalize_distribution_name(json_text(p, "package")) !=
      formats::normalize_distribution_name(in.package))
    return "another package";
  std::string digest;
  if (auto src = p.find("source"); src != p.end() && src->is_object())
    for (const char* kind : {"sdist-sha256", "git-commit", "tree-sha256"})
      if (auto d = json_text(*src, kind); !d.empty()) digest = d;
  if (digest != in.digest)
    return fmt::format("source {} vs {}", digest.substr(0, 16), in.digest.substr(0, 16));
  if (sorted(e.targets) != sorted(in.targets)) return "other targets";
  if (json_text(p, "recipe") != in.recipe)
    return fmt::format("recipe {} vs {}", json_text(p, "recipe"), in.recipe);
  if (json_text(p, "profile") != in.profile)
    return fmt::format("profile '{}' vs '{}'", json_text(p, "profile"), in.profile);
  nlohmann::json toolchain = p.contains("toolchain") ? p["toolchain"] : nlohmann::json::object();
  if (auto why = torch_mismatch(json_text(toolchain, "torch"), in.torch); !why.empty()) return why;
  if (how == Match::build && major_minor(json_text(toolchain, "nvcc")) != major_minor(in.nvcc))
    return fmt::format("CUDA {} vs {}", json_text(toolchain, "nvcc"), in.nvcc);
  if (major_minor(json_text(toolchain, "python")) != major_minor(in.python))
    return fmt::format("Python {} vs {}", json_text(toolchain, "python"), in.python);
  return {};
}

}  // namespace

std::string input_mismatch(const WheelEntry& e, const BuildInputs& in) {
  return mismatch(e, in, Match::build);
}

std::string stack_input_mismatch(const WheelEntry& e, const BuildInputs& in) {
  return mismatch(e, in, Match::stack);
}

Expected<std::vector<IndexLink>> parse_project_index(std::string_view text,
                                                     const std::string& where) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("files") || !j["files"].is_array())
    return make_error(where + ": not a PEP 691 project page (no \"files\" list)");
  std::vector<IndexLink> out;
  for (const auto& f : j["files"]) {
    IndexLink link{json_text(f, "filename"), json_text(f, "url"), {}};
    if (f.is_object() && f.contains("hashes")) link.sha256 = json_text(f["hashes"], "sha256");
    const std::string& u = link.url;
    if (u.empty() || u.front() == '/' || u.find(':') != std::string::npos ||
        u.find('\\') != std::string::npos || u.find('?') != std::string::npos ||
        u.find('#') != std::string::npos)
      return make_error(fmt::format("{}: {}: the link '{}' is not relative to the wheelhouse",
                                    where, link.file, u));
    if (link.sha256.size() != 64)
      return make_error(fmt::format("{}: {}: no sha256", where, link.file));
    out.push_back(std::move(link));
  }
  return out;
}

Expected<std::optional<FetchedWheel>> fetch_matching_wheel(const WheelhouseStore& store,
                                                           const BuildInputs& inputs,
                                                           const std::string& dest_dir,
                                                           std::string& why_not) {
  TAILOR_TRY(state, store.read(k_state_file, k_max_state_bytes));
  std::vector<WheelEntry> wheels;
  if (state) {
    TAILOR_TRY(listed, parse_state(*state, store.origin(k_state_file)));
    wheels = std::move(listed);
  }
  const WheelEntry* found = nullptr;
  why_not = wheels.empty() ? "the wheelhouse lists no wheel" : "";
  for (const auto& e : wheels) {
    std::string why = input_mismatch(e, inputs);
    if (why.empty()) {
      found = &e;
      break;
    }
    if (formats::normalize_distribution_name(inputs.package) == e.project)
      why_not = e.file + " (" + e.target_set + "): " + why;
  }
  if (!found) {
    if (why_not.empty()) why_not = "no wheel of " + inputs.package;
    return std::optional<FetchedWheel>();
  }
  // The index the resolvers read must agree with the state: the link is the wheel's own
  // place, and its sha256 is the one the fetched bytes must have.
  const std::string rel_page = found->target_set + "/simple/" + found->project + "/index.json";
  const std::string page = store.origin(rel_page);
  TAILOR_TRY(text, store.read(rel_page, k_max_index_bytes));
  if (!text) return make_error(page + ": not there (the state lists " + found->file + ")");
  TAILOR_TRY(links, parse_project_index(*text, page));
  const IndexLink* link = nullptr;
  for (const auto& l : links)
    if (l.file == found->file) link = &l;
  if (!link) return make_error(fmt::format("{}: does not list {}", page, found->file));
  const fs::path from_page =
      (fs::path(found->target_set) / "simple" / found->project / link->url).lexically_normal();
  if (from_page.string() != wheel_file_path(*found))
    return make_error(fmt::format("{}: {} links to '{}', not to its place in the wheelhouse", page,
                                  found->file, link->url));
  if (link->sha256 != found->sha256)
    return make_error(fmt::format("{}: {} has sha256 {} in the index and {} in {}", page,
                                  found->file, link->sha256, found->sha256, k_state_file));
  const std::string rel = wheel_file_path(*found);
  const std::string dest = (fs::path(dest_dir) / found->file).string();
  // The copy is bounded by the size the state records; its bytes are checked once copied.
  auto copied = store.copy_to(rel, dest, found->size);
  if (!copied)
    return make_error(fmt::format("{} ({} bytes in the state); the index says {}: refused",
                                  copied.error().message, found->size, link->sha256));
  const std::string& got = *copied;
  if (got != link->sha256) {
    std::error_code ec;
    fs::remove(dest, ec);
    return make_error(fmt::format("{}: sha256 {}, the index says {}: refused", store.origin(rel),
                                  got, link->sha256));
  }
  return std::optional<FetchedWheel>(FetchedWheel{dest, got, store.origin(rel)});
}

}  // namespace tailor::wheelhouse
