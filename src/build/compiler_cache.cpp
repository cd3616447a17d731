#include "build/compiler_cache.h"

#include <sys/stat.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace tailor::build {

std::string_view cache_tool_name(CacheTool tool) {
  switch (tool) {
    case CacheTool::ccache: return "ccache";
    case CacheTool::sccache: return "sccache";
    case CacheTool::none: break;
  }
  return "none";
}

std::optional<CacheTool> parse_cache_tool(std::string_view name) {
  if (name == "ccache") return CacheTool::ccache;
  if (name == "sccache") return CacheTool::sccache;
  if (name == "none" || name.empty()) return CacheTool::none;
  return std::nullopt;
}

CacheStats stats_delta(const CacheStats& before, const CacheStats& after) {
  auto d = [](uint64_t b, uint64_t a) { return a > b ? a - b : 0; };
  return {d(before.hits, after.hits), d(before.misses, after.misses),
          d(before.uncacheable, after.uncacheable)};
}

Expected<CacheStats> parse_ccache_print_stats(std::string_view text) {
  std::map<std::string, uint64_t> values;
  for (const auto& line : split_any(text, "\n")) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    uint64_t v = 0;
    std::string_view num = trim(std::string_view(line).substr(tab + 1));
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc{} || p != num.data() + num.size()) continue;
    values[line.substr(0, tab)] = v;
  }
  if (!values.count("direct_cache_hit") || !values.count("cache_miss"))
    return make_error("ccache --print-stats: no direct_cache_hit/cache_miss counters (ccache older than 4.4?)");
  CacheStats s;
  s.hits = values["direct_cache_hit"] + values["preprocessed_cache_hit"];
  s.misses = values["cache_miss"];
  // Calls ccache passed through without caching: the ones a user asks "why no hit?" about.
  for (const char* k : {"called_for_link", "called_for_preprocessing", "multiple_source_files",
                        "unsupported_code_directive", "unsupported_compiler_option",
                        "unsupported_source_language", "compiler_produced_stdout", "no_input_file",
                        "output_to_stdout", "autoconf_test", "bad_compiler_arguments"})
    s.uncacheable += values[k];
  return s;
}

Expected<CacheStats> parse_sccache_stats_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("stats") || !j["stats"].is_object())
    return make_error("sccache --show-stats: not the JSON stats object");
  const auto& st = j["stats"];
  auto sum_counts = [&](const char* key) -> uint64_t {
    uint64_t total = 0;
    if (!st.contains(key) || !st[key].is_object()) return 0;
    const auto& obj = st[key];
    if (!obj.contains("counts") || !obj["counts"].is_object()) return 0;
    for (const auto& [lang, n] : obj["counts"].items())
      if (n.is_number_unsigned() || n.is_number_integer()) total += n.get<uint64_t>();
    return total;
  };
  CacheStats s;
  s.hits = sum_counts("cache_hits");
  s.misses = sum_counts("cache_misses");
  if (st.contains("non_cacheable_calls") && st["non_cacheable_calls"].is_number())
    s.uncacheable = st["non_cacheable_calls"].get<uint64_t>();
  return s;
}

Expected<CacheStats> read_cache_stats(CacheTool tool, const std::string& executable,
                                      CommandRunner& runner) {
  CommandSpec spec;
  spec.timeout = std::chrono::seconds(30);
  if (tool == CacheTool::ccache)
    spec.argv = {executable, "--print-stats"};
  else if (tool == CacheTool::sccache)
    spec.argv = {executable, "--show-stats", "--stats-format", "json"};
  else
    return make_error("no compiler cache in use");
  CommandResult r = runner.run(spec);
  if (!r.ok())
    return make_error(fmt::format("{} failed: {}", join(spec.argv, " "),
                                  r.started ? trim(r.err).empty() ? fmt::format("exit {}", r.exit_code)
                                                                  : std::string(trim(r.err))
                                            : std::string("not found")));
  return tool == CacheTool::ccache ? parse_ccache_print_stats(r.out) : parse_sccache_stats_json(r.out);
}

Expected<std::map<std::string, std::string>> wrap_cached_compilers(
    const std::map<std::string, std::string>& env, const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out = env;
  for (const char* var : {"CC", "CXX"}) {
    auto it = env.find(var);
    if (it == env.end()) continue;
    auto words = split_any(it->second, " ");
    if (words.size() != 2) continue;
    std::string tool = fs::path(words[0]).filename().string();
    if (tool != "ccache" && tool != "sccache") continue;
    std::string compiler = find_in_path(words[1]);
    if (compiler.empty()) return make_error(fmt::format("{}={}: {} not found on PATH", var, it->second, words[1]));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(fmt::format("{}: cannot create: {}", dir, ec.message()));
    fs::path wrapper = fs::path(dir) / fs::path(words[1]).filename();
    {
      std::ofstream f(wrapper, std::ios::trunc);
      f << "#!/bin/sh\n# written by tailor: " << var << "=" << it->second << " as one program\n"
        << "exec " << shell_quote(words[0]) << " " << shell_quote(compiler) << " \"$@\"\n";
      if (!f) return make_error(fmt::format("{}: cannot write", wrapper.string()));
    }
    if (chmod(wrapper.c_str(), 0755) != 0) return make_error(fmt::format("{}: cannot make executable", wrapper.string()));
    out[var] = wrapper.string();
  }
  return out;
}

}  // namespace tailor::build
