#include "governor/governor_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/files.h"
#include "util/strings.h"
#include "util/user_file.h"

namespace tailor::governor {
namespace {

constexpr const char* k_schema = "tailor.governor-peaks/1";
constexpr uint64_t k_max_file_bytes = uint64_t{8} << 20;
constexpr uint64_t k_max_peak_bytes = uint64_t{1} << 40;  // 1 TiB: more is not a compile job
constexpr size_t k_max_kinds = 64;
constexpr size_t k_max_key_bytes = 1024;
constexpr size_t k_max_units = 4096;
constexpr uint64_t k_max_unit_ms =
    uint64_t{7} * 24 * 3600 * 1000;  // a week: more is not one compile

using Entries = std::map<std::string, GovernorProfile>;

Expected<Entries> read_all(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Entries{};
  auto text = read_text_file(path, k_max_file_bytes, BinaryData::refused);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  auto bad = [&](const std::string& what) { return make_error(fmt::format("{}: {}", path, what)); };
  if (j.is_discarded() || !j.is_object()) return bad("not JSON of tailor's governor peaks");
  if (!j.contains("schema") || j["schema"] != k_schema)
    return bad(fmt::format("schema is not {}", k_schema));
  if (!j.contains("entries") || !j["entries"].is_object())
    return bad("entries: expected an object");
  Entries out;
  for (const auto& [key, e] : j["entries"].items()) {
    if (key.empty() || key.size() > k_max_key_bytes)
      return bad("entries: a key is empty or too long");
    if (!e.is_object() || !e.contains("peaks") || !e["peaks"].is_object() ||
        e["peaks"].size() > k_max_kinds)
      return bad(fmt::format("entries.\"{}\": expected peaks, an object of at most {} kinds", key,
                             k_max_kinds));
    GovernorProfile p;
    for (const auto& [kind, v] : e["peaks"].items()) {
      if (kind.empty() || kind.size() > 128 || !v.is_number_unsigned() || v.get<uint64_t>() == 0 ||
          v.get<uint64_t>() > k_max_peak_bytes)
        return bad(fmt::format("entries.\"{}\".peaks: expected byte counts from 1 to 1 TiB", key));
      p.peaks[kind] = v.get<uint64_t>();
    }
    if (e.contains("unit_ms")) {
      const auto& u = e["unit_ms"];
      if (!u.is_object() || u.size() > k_max_units)
        return bad(fmt::format("entries.\"{}\".unit_ms: expected an object of at most {} units",
                               key, k_max_units));
      for (const auto& [unit, v] : u.items()) {
        if (unit.empty() || unit.size() > k_max_key_bytes || !v.is_number_unsigned() ||
            v.get<uint64_t>() > k_max_unit_ms)
          return bad(fmt::format(
              "entries.\"{}\".unit_ms: expected milliseconds up to a week per unit", key));
        p.unit_ms[unit] = v.get<uint64_t>();
      }
    }
    if (e.contains("builds") && e["builds"].is_number_unsigned())
      p.builds = e["builds"].get<uint64_t>();
    if (e.contains("updated") && e["updated"].is_string())
      p.updated = e["updated"].get<std::string>();
    out[key] = std::move(p);
  }
  return out;
}

}  // namespace

std::string governor_profile_path() {
  return (std::filesystem::path(user_cache_dir("governor")) / "peaks.json").string();
}

std::string governor_profile_key(const std::string& package, const std::string& recipe,
                                 const std::vector<std::string>& targets, int nvcc_threads) {
  std::vector<std::string> sorted = targets;
  std::sort(sorted.begin(), sorted.end());
  return fmt::format("{} recipe={} targets={} nvcc-threads={}", package.empty() ? "-" : package,
                     recipe.empty() ? "-" : recipe, sorted.empty() ? "-" : join(sorted, ","),
                     nvcc_threads);
}

Expected<std::optional<GovernorProfile>> read_governor_profile(const std::string& path,
                                                               const std::string& key) {
  TAILOR_TRY(all, read_all(path));
  auto it = all.find(key);
  if (it == all.end()) return std::optional<GovernorProfile>{};
  return std::optional<GovernorProfile>{it->second};
}

PeakUpdate peak_update(const BuildReuse& r) {
  const bool compiled_all = (!r.cache_used || r.cache_hits.value_or(1) == 0) &&
                            (!r.tree_kept || r.units_reused.value_or(1) == 0);
  return compiled_all ? PeakUpdate::replace : PeakUpdate::raise_only;
}

Expected<void> record_governor_profile(const std::string& path, const std::string& key,
                                       const std::map<std::string, uint64_t>& measured,
                                       size_t max_entries, PeakUpdate update,
                                       const std::map<std::string, uint64_t>& unit_ms) {
  if (measured.empty() && unit_ms.empty()) return {};
  if (key.empty() || key.size() > k_max_key_bytes)
    return make_error("governor peaks: the key is empty or too long");
  ExclusiveFileLock lock(path);
  if (!lock.ok()) return make_error(path + ".lock: cannot lock");
  auto read = read_all(path);
  Entries all = read ? std::move(*read) : Entries{};  // a damaged file starts again
  GovernorProfile& p = all[key];
  for (const auto& [kind, bytes] : measured)
    if (!kind.empty() && bytes > 0 && bytes <= k_max_peak_bytes &&
        (p.peaks.count(kind) || p.peaks.size() < k_max_kinds))
      p.peaks[kind] = update == PeakUpdate::raise_only && p.peaks.count(kind)
                          ? std::max(p.peaks[kind], bytes)
                          : bytes;
  // With reuse (raise_only) a unit's time may be a cache hit's: it may raise a kept time,
  // and a unit not kept yet is left for a build that compiles it (a hit's 40 ms would put
  // a long unit last, ahead of the measured times of data/build/unit_times.toml).
  for (const auto& [unit, ms] : unit_ms)
    if (!unit.empty() && unit.size() <= k_max_key_bytes && ms <= k_max_unit_ms) {
      if (update == PeakUpdate::replace)
        p.unit_ms[unit] = ms;
      else if (auto it = p.unit_ms.find(unit); it != p.unit_ms.end())
        it->second = std::max(it->second, ms);
    }
  while (p.unit_ms.size() >
         k_max_units) {  // the shortest go: the order of the longest is what matters
    auto shortest =
        std::min_element(p.unit_ms.begin(), p.unit_ms.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    p.unit_ms.erase(shortest);
  }
  ++p.builds;
  p.updated = utc_now_iso8601();
  // The least recently updated go first (ISO 8601 UTC strings order by time).
  while (all.size() > std::max<size_t>(1, max_entries)) {
    auto oldest = all.begin();
    for (auto it = all.begin(); it != all.end(); ++it)
      if (it->first != key && (oldest->first == key || it->second.updated < oldest->second.updated))
        oldest = it;
    if (oldest->first == key) break;
    all.erase(oldest);
  }
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [k, e] : all) {
    nlohmann::json peaks = nlohmann::json::object();
    for (const auto& [kind, bytes] : e.peaks) peaks[kind] = bytes;
    entries[k] = {{"peaks", peaks}, {"builds", e.builds}, {"updated", e.updated}};
    if (!e.unit_ms.empty()) entries[k]["unit_ms"] = e.unit_ms;
  }
  nlohmann::json doc = {{"schema", k_schema}, {"entries", entries}};
  return write_file_atomic(path, doc.dump(1) + "\n");
}

}  // namespace tailor::governor
