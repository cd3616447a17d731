#include "cache/cache_ledger.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "cache/cache_settings.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/user_file.h"

namespace tailor::cache {

namespace {

Expected<CacheStats> stats_from_json(const nlohmann::json& j, const std::string& where) {
  auto u = [&](const nlohmann::json& o, const char* key) -> Expected<uint64_t> {
    if (!o.contains(key)) return uint64_t{0};
    if (!o[key].is_number_unsigned())
      return make_error(fmt::format("{}: {}: expected a count", where, key));
    return o[key].get<uint64_t>();
  };
  if (!j.is_object()) return make_error(where + ": expected an object");
  CacheStats s;
  TAILOR_TRY(h, u(j, "hits"));
  TAILOR_TRY(m, u(j, "misses"));
  TAILOR_TRY(x, u(j, "uncacheable"));
  TAILOR_TRY(e, u(j, "errors"));
  s.hits = h, s.misses = m, s.uncacheable = x, s.errors = e;
  if (j.contains("categories")) {
    if (!j["categories"].is_object()) return make_error(where + ": categories: expected an object");
    if (j["categories"].size() > 64) return make_error(where + ": categories: more than 64");
    for (const auto& [name, c] : j["categories"].items()) {
      if (!c.is_object())
        return make_error(fmt::format("{}: categories.{}: expected an object", where, name));
      TAILOR_TRY(ch, u(c, "hits"));
      TAILOR_TRY(cm, u(c, "misses"));
      s.categories[name] = {ch, cm};
    }
  }
  return s;
}

void add(CacheStats& into, const CacheStats& s) {
  into.hits += s.hits;
  into.misses += s.misses;
  into.uncacheable += s.uncacheable;
  into.errors += s.errors;
  for (const auto& [name, c] : s.categories) {
    into.categories[name].hits += c.hits;
    into.categories[name].misses += c.misses;
  }
}

}  // namespace

std::string cache_ledger_path() {
  return (std::filesystem::path(user_cache_dir("cache")) / "stats.json").string();
}

Expected<CacheLedger> read_cache_ledger(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return CacheLedger{};
  auto text = read_text_file(path, uint64_t{1} << 20, BinaryData::refused);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return make_error(path + ": not tailor's cache statistics (run `tailor cache zero`)");
  CacheLedger l;
  if (j.contains("since") && j["since"].is_string()) l.since = j["since"].get<std::string>();
  if (j.contains("builds") && j["builds"].is_number_unsigned())
    l.builds = j["builds"].get<uint64_t>();
  if (j.contains("tools")) {
    if (!j["tools"].is_object() || j["tools"].size() > 8)
      return make_error(path + ": tools: expected an object");
    for (const auto& [tool, st] : j["tools"].items()) {
      TAILOR_TRY(s, stats_from_json(st, path + ": tools." + tool));
      l.by_tool[tool] = s;
    }
  }
  if (j.contains("last") && j["last"].is_object()) {
    const auto& last = j["last"];
    if (last.contains("tool") && last["tool"].is_string())
      l.last_tool = last["tool"].get<std::string>();
    if (last.contains("at") && last["at"].is_string()) l.last_at = last["at"].get<std::string>();
    TAILOR_TRY(s, stats_from_json(last, path + ": last"));
    l.last = s;
  }
  return l;
}

Expected<void> add_to_cache_ledger(const std::string& path, const std::string& tool,
                                   const CacheStats& stats) {
  ExclusiveFileLock lock(path);
  if (!lock.ok()) return make_error(path + ".lock: cannot lock");
  auto ledger = read_cache_ledger(path);
  CacheLedger l = ledger ? *ledger : CacheLedger{};  // a damaged file starts again
  if (l.since.empty()) l.since = utc_now_iso8601();
  ++l.builds;
  add(l.by_tool[tool], stats);
  l.last_tool = tool;
  l.last_at = utc_now_iso8601();
  l.last = stats;
  return write_file_atomic(path, to_json(l).dump(2) + "\n");
}

Expected<void> zero_cache_ledger(const std::string& path) {
  ExclusiveFileLock lock(path);
  if (!lock.ok()) return make_error(path + ".lock: cannot lock");
  CacheLedger l;
  l.since = utc_now_iso8601();
  return write_file_atomic(path, to_json(l).dump(2) + "\n");
}

void record_cache_use(CacheTool tool, const CacheStats& stats) {
  (void)add_to_cache_ledger(cache_ledger_path(), std::string(cache_tool_name(tool)), stats);
}

nlohmann::json to_json(const CacheStats& s) {
  nlohmann::json j = {{"hits", s.hits},
                      {"misses", s.misses},
                      {"uncacheable", s.uncacheable},
                      {"errors", s.errors},
                      {"hit_rate", s.hits + s.misses ? static_cast<double>(s.hits) /
                                                           static_cast<double>(s.hits + s.misses)
                                                     : 0.0}};
  nlohmann::json cats = nlohmann::json::object();
  for (const auto& [name, c] : s.categories)
    cats[name] = {{"hits", c.hits},
                  {"misses", c.misses},
                  {"hit_rate", c.hits + c.misses ? static_cast<double>(c.hits) /
                                                       static_cast<double>(c.hits + c.misses)
                                                 : 0.0}};
  j["categories"] = cats;
  return j;
}

nlohmann::json to_json(const CacheLedger& l) {
  nlohmann::json tools = nlohmann::json::object();
  for (const auto& [tool, s] : l.by_tool) tools[tool] = to_json(s);
  nlohmann::json j = {{"since", l.since}, {"builds", l.builds}, {"tools", tools}};
  if (!l.last_tool.empty()) {
    nlohmann::json last = to_json(l.last);
    last["tool"] = l.last_tool;
    last["at"] = l.last_at;
    j["last"] = last;
  }
  return j;
}

std::string hit_rate_text(uint64_t hits, uint64_t misses) {
  if (hits + misses == 0) return "-";
  return fmt::format("{:.1f}%",
                     100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses));
}

std::string render_cache_stats(const CacheStats& s, const std::string& indent) {
  std::string out;
  auto row = [&](const std::string& name, uint64_t h, uint64_t m) {
    out += fmt::format("{}{:<15} {:>7} hits {:>7} misses {:>7}\n", indent, name, h, m,
                       hit_rate_text(h, m));
  };
  std::vector<std::string> names = cache::cache_category_order();
  for (const auto& [name, c] : s.categories)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  for (const auto& name : names)
    if (auto it = s.categories.find(name); it != s.categories.end())
      row(name, it->second.hits, it->second.misses);
  row(s.categories.empty() ? "all compiles" : "all steps", s.hits, s.misses);
  if (s.uncacheable) out += fmt::format("{}{:<15} {:>7}\n", indent, "not cacheable", s.uncacheable);
  if (s.errors)
    out += fmt::format("{}{:<15} {:>7} (storage unreachable or failing)\n", indent,
                       "storage errors", s.errors);
  return out;
}

}  // namespace tailor::cache
