#include "builder/resume.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace tailor::builder {
namespace fs = std::filesystem;
namespace {

constexpr const char* k_state_file = ".tailor-resume.json";
constexpr uint64_t k_max_state_bytes = uint64_t{1} << 20;

nlohmann::json read_state(DiskInterface& disk, const std::string& work_dir) {
  auto text = disk.read((fs::path(work_dir) / k_state_file).string(), k_max_state_bytes);
  if (!text) return nlohmann::json::object();
  try {
    auto j = nlohmann::json::parse(*text);
    return j.is_object() ? j : nlohmann::json::object();
  } catch (const std::exception&) {
    return nlohmann::json::object();  // a damaged state only costs the reuse
  }
}

void write_state(DiskInterface& disk, const std::string& work_dir, const nlohmann::json& j) {
  // A state that cannot be written only costs the next run its reuse.
  (void)disk.write((fs::path(work_dir) / k_state_file).string(), j.dump(2) + "\n", false);
}

}  // namespace

bool keep_build_tree_if_unchanged(DiskInterface& disk, const std::string& source_dir,
                                  const std::string& work_dir, const std::string& fingerprint) {
  nlohmann::json st = read_state(disk, work_dir);
  const std::string tree = (fs::path(source_dir) / "build").string();
  bool same = st.value("fingerprint", std::string()) == fingerprint;
  bool kept = same && disk.is_directory(tree);
  if (!same) {
    disk.remove_all(tree);
    st = nlohmann::json::object();
    st["fingerprint"] = fingerprint;
    write_state(disk, work_dir, st);
  }
  if (!kept) {
    // A fresh tree: the next count of Ninja's steps is the whole build.
    st.erase("ninja_total");
    write_state(disk, work_dir, st);
  }
  return kept;
}

std::optional<ReusedUnits> account_reused_units(DiskInterface& disk, const std::string& work_dir,
                                                bool tree_kept, std::optional<uint64_t> steps_run) {
  nlohmann::json st = read_state(disk, work_dir);
  if (!tree_kept) {
    if (steps_run) {
      st["ninja_total"] = *steps_run;
      write_state(disk, work_dir, st);
    }
    return std::nullopt;
  }
  if (!st.contains("ninja_total") || !st["ninja_total"].is_number_unsigned()) return std::nullopt;
  uint64_t total = st["ninja_total"].get<uint64_t>();
  uint64_t run = steps_run.value_or(0);
  ReusedUnits u;
  u.total = std::max(total, run);
  u.reused = u.total - run;
  u.source = "Ninja's [n/N] count now vs. on a fresh build tree in this work folder";
  return u;
}

}  // namespace tailor::builder
