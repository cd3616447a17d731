#include "cache/cache_stats.h"

#include <fmt/format.h>

#include <charconv>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::cache {

namespace {

using nlohmann::json;

constexpr std::string_view k_sccache = "sccache --show-stats";
constexpr std::string_view k_ccache = "ccache --print-stats";
constexpr size_t k_location_max = 1024;

/// a + b, held at the largest count: many hostile entries must not wrap a sum around.
uint64_t add_held(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

uint64_t less_held(uint64_t before, uint64_t after) { return after > before ? after - before : 0; }

Error bad_key(std::string_view tool, std::string_view key, std::string_view why) {
  return make_error(fmt::format("{}: {}: {}", tool, terminal_safe(key.substr(0, 200)), why));
}

/// The member `key` of `obj`; nullptr when it is missing or null (an older sccache, or a
/// storage that does not say).
const json* member(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

/// A JSON count: an integer from 0 (nlohmann reads a non-negative integer as unsigned).
Expected<uint64_t> json_count(const json& v, std::string_view key) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  std::string shown = v.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  return bad_key(k_sccache, key, fmt::format("{} is not a count", terminal_safe(shown)));
}

/// stats[key] as a count; zero when missing or null.
Expected<uint64_t> stats_count(const json& stats, std::string_view key) {
  const json* v = member(stats, key);
  if (!v) return uint64_t{0};
  return json_count(*v, fmt::format("stats.{}", key));
}

/// stats[key].counts, per language: {"counts": {"C/C++": 3, "PTX": 2, ...}}.
Expected<std::vector<std::pair<std::string, uint64_t>>> per_language(const json& stats,
                                                                     std::string_view key) {
  std::vector<std::pair<std::string, uint64_t>> out;
  const json* obj = member(stats, key);
  if (!obj) return out;
  if (!obj->is_object())
    return bad_key(k_sccache, fmt::format("stats.{}", key), "expected an object");
  const json* counts = member(*obj, "counts");
  if (!counts) return out;
  if (!counts->is_object())
    return bad_key(k_sccache, fmt::format("stats.{}.counts", key), "expected an object");
  for (const auto& [language, n] : counts->items()) {
    TAILOR_TRY(v, json_count(n, fmt::format("stats.{}.counts.{}", key, language)));
    out.emplace_back(language, v);
  }
  return out;
}

}  // namespace

CacheStats stats_delta(const CacheStats& before, const CacheStats& after) {
  CacheStats out{less_held(before.hits, after.hits),
                 less_held(before.misses, after.misses),
                 less_held(before.uncacheable, after.uncacheable),
                 less_held(before.errors, after.errors),
                 {}};
  for (const auto& [name, a] : after.categories) {
    auto it = before.categories.find(name);
    CacheCount b = it == before.categories.end() ? CacheCount{} : it->second;
    CacheCount c{less_held(b.hits, a.hits), less_held(b.misses, a.misses)};
    if (c.hits || c.misses) out.categories[name] = c;
  }
  return out;
}

namespace dist {
DistStats dist_stats_delta(const DistStats& before, const DistStats& after) {
  DistStats out;
  out.compilations = less_held(before.compilations, after.compilations);
  out.dist_errors = less_held(before.dist_errors, after.dist_errors);
  out.not_distributable = less_held(before.not_distributable, after.not_distributable);
  for (const auto& [server, n] : after.per_server) {
    auto it = before.per_server.find(server);
    uint64_t v = less_held(it == before.per_server.end() ? 0 : it->second, n);
    if (v == 0) continue;
    out.per_server[server] = v;
    out.dist_compiles = add_held(out.dist_compiles, v);
  }
  return out;
}
}  // namespace dist

Expected<ToolStats> parse_sccache_show_stats(std::string_view text) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !member(j, "stats") || !j["stats"].is_object())
    return make_error(fmt::format("{}: not the JSON stats object", k_sccache));
  const json& st = j["stats"];
  ToolStats out;
  CacheStats& c = out.counts;

  // Hits and misses per language, counted under the step kind that did the work.
  TAILOR_TRY(hits, per_language(st, "cache_hits"));
  for (const auto& [language, n] : hits) {
    c.hits = add_held(c.hits, n);
    CacheCount& k = c.categories[sccache_category(language)];
    k.hits = add_held(k.hits, n);
  }
  TAILOR_TRY(misses, per_language(st, "cache_misses"));
  for (const auto& [language, n] : misses) {
    c.misses = add_held(c.misses, n);
    CacheCount& k = c.categories[sccache_category(language)];
    k.misses = add_held(k.misses, n);
  }
  TAILOR_TRY(errors, per_language(st, "cache_errors"));
  for (const auto& [language, n] : errors) c.errors = add_held(c.errors, n);
  for (const char* key : {"cache_read_errors", "cache_write_errors", "cache_timeouts"}) {
    TAILOR_TRY(n, stats_count(st, key));
    c.errors = add_held(c.errors, n);
  }
  for (const char* key : {"requests_not_cacheable", "non_cacheable_compilations"}) {
    TAILOR_TRY(n, stats_count(st, key));
    c.uncacheable = add_held(c.uncacheable, n);
  }

  // sccache-dist: every compiler run, and those each build server ran.
  dist::DistStats& d = out.dist;
  TAILOR_TRY(compilations, stats_count(st, "compilations"));
  d.compilations = compilations;
  TAILOR_TRY(dist_errors, stats_count(st, "dist_errors"));
  d.dist_errors = dist_errors;
  for (const char* key : {"requests_unsupported_compiler", "requests_not_compile"}) {
    TAILOR_TRY(n, stats_count(st, key));
    d.not_distributable = add_held(d.not_distributable, n);
  }
  if (const json* servers = member(st, "dist_compiles")) {
    if (!servers->is_object())
      return bad_key(k_sccache, "stats.dist_compiles", "expected an object (server -> count)");
    for (const auto& [server, n] : servers->items()) {
      TAILOR_TRY(v, json_count(n, "stats.dist_compiles." + server));
      d.per_server[server] = v;
      d.dist_compiles = add_held(d.dist_compiles, v);
    }
  }

  // Where the cache is and how big (a Redis or S3 storage does not say its size). sccache
  // names a Redis URL whole, password included: it is hidden here, before anyone shows it.
  if (const json* location = member(j, "cache_location")) {
    if (!location->is_string()) return bad_key(k_sccache, "cache_location", "expected a string");
    out.location = hide_url_passwords(location->get<std::string>());
    if (out.location.size() > k_location_max)
      out.location = out.location.substr(0, k_location_max - 3) + "...";
  }
  if (const json* size = member(j, "cache_size")) {
    TAILOR_TRY(bytes, json_count(*size, "cache_size"));
    out.size_bytes = bytes;
  }
  return out;
}

Expected<CacheStats> parse_sccache_stats_json(std::string_view text) {
  TAILOR_TRY(s, parse_sccache_show_stats(text));
  return s.counts;
}

Expected<ToolStats> parse_ccache_print_stats(std::string_view text) {
  std::map<std::string, std::string, std::less<>> values;
  for (const auto& line : split_any(text, "\n")) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    values[line.substr(0, tab)] = std::string(trim(std::string_view(line).substr(tab + 1)));
  }
  if (!values.count("direct_cache_hit") || !values.count("cache_miss"))
    return make_error(fmt::format(
        "{}: no direct_cache_hit/cache_miss counters (ccache older than 4.4?)", k_ccache));
  // The sum of the keys' values; a key ccache does not print (an older one) counts 0.
  auto sum = [&](std::initializer_list<std::string_view> keys) -> Expected<uint64_t> {
    uint64_t total = 0;
    for (std::string_view key : keys) {
      auto it = values.find(key);
      if (it == values.end()) continue;
      const std::string& num = it->second;
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (num.empty() || ec != std::errc{} || p != num.data() + num.size())
        return bad_key(k_ccache, key,
                       fmt::format("'{}' is not a count", terminal_safe(num.substr(0, 40))));
      total = add_held(total, v);
    }
    return total;
  };
  ToolStats out;
  CacheStats& s = out.counts;
  TAILOR_TRY(hits, sum({"direct_cache_hit", "preprocessed_cache_hit"}));
  TAILOR_TRY(misses, sum({"cache_miss"}));
  // Calls ccache passed through without caching: the ones a user asks "why no hit?" about.
  TAILOR_TRY(uncacheable,
             sum({"called_for_link", "called_for_preprocessing", "multiple_source_files",
                  "unsupported_code_directive", "unsupported_compiler_option",
                  "unsupported_source_language", "compiler_produced_stdout", "no_input_file",
                  "output_to_stdout", "autoconf_test", "bad_compiler_arguments"}));
  // A remote storage (Redis) that failed or did not answer in time.
  TAILOR_TRY(errors, sum({"remote_storage_error", "remote_storage_timeout"}));
  s.hits = hits;
  s.misses = misses;
  s.uncacheable = uncacheable;
  s.errors = errors;
  if (values.count("cache_size_kibibyte")) {
    TAILOR_TRY(kib, sum({"cache_size_kibibyte"}));
    if (kib > std::numeric_limits<uint64_t>::max() / 1024)
      return bad_key(k_ccache, "cache_size_kibibyte", "larger than 16 EiB");
    out.size_bytes = kib * 1024;
  }
  return out;
}

Expected<std::string> run_stats_command(CacheTool tool, const std::string& executable,
                                        CommandRunner& runner,
                                        const std::map<std::string, std::string>& env) {
  std::vector<std::string> args;
  if (tool == CacheTool::ccache)
    args = {"--print-stats"};
  else if (tool == CacheTool::sccache)
    args = {"--show-stats", "--stats-format", "json"};
  else
    return make_error("no compiler cache in use");
  CommandSpec spec;
  spec.argv = {executable};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : env) spec.env[k] = v;
  spec.timeout = std::chrono::seconds(30);
  CommandResult r = runner.run(spec);
  if (r.ok()) return std::move(r.out);
  std::string why = !r.started      ? std::string("not found")
                    : r.timed_out   ? std::string("timed out")
                    : r.interrupted ? std::string("interrupted")
                                    : std::string(trim(r.err.empty() ? r.out : r.err));
  if (why.empty()) why = fmt::format("exit {}", r.exit_code);
  if (why.size() > 300) why = why.substr(0, 297) + "...";
  return make_error(
      fmt::format("{} {} failed: {}", cache_tool_name(tool), join(args, " "), terminal_safe(why)));
}

Expected<ToolStats> read_tool_stats(CacheTool tool, const std::string& executable,
                                    CommandRunner& runner,
                                    const std::map<std::string, std::string>& env) {
  TAILOR_TRY(text, run_stats_command(tool, executable, runner, env));
  return tool == CacheTool::ccache ? parse_ccache_print_stats(text)
                                   : parse_sccache_show_stats(text);
}

Expected<CacheStats> read_cache_stats(CacheTool tool, const std::string& executable,
                                      CommandRunner& runner,
                                      const std::map<std::string, std::string>& env) {
  TAILOR_TRY(s, read_tool_stats(tool, executable, runner, env));
  return s.counts;
}

}  // namespace tailor::cache
