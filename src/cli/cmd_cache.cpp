// `tailor cache status|show|zero`: the compiler cache builds use and what they got from it.
//   status  the tool (auto resolved as a build would), its version, the storage and whether
//           it answers (its backend's check, cache/storage.h: Redis PING, S3 a connection,
//           local the folder; then sccache starts a server of its own against it, which is
//           how sccache itself finds a broken one, or ccache reads its statistics), where
//           the cache is and its size (cache/cache_stats.h), the base folders. Exit 1 when
//           the storage does not answer or the tool is missing.
//   show    hit rates per step kind (C/C++, CUDA (nvcc), PTX (cicc), cubin (ptxas)) summed
//           over tailor's builds since the last zero, and the latest build's.
//   zero    starts those sums again.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cache/cache_ledger.h"
#include "cache/cache_settings.h"
#include "cache/compiler_cache.h"
#include "cache/tailor_toml.h"
#include "cli/commands.h"
#include "plan/build_plan.h"
#include "plan/extension_plan.h"
#include "util/files.h"
#include "util/process.h"
#include "util/strings.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"

namespace tailor::cli {
namespace {

struct CacheCommandOptions {
  std::string config;
  std::string tool = "auto";
  std::string url;
  bool json = false;
};

Expected<cache::CacheSettings> settings_for(const CacheCommandOptions& o,
                                            const std::map<std::string, std::string>& env) {
  cache::CacheSettings s;
  if (!o.config.empty()) {
    TAILOR_TRY(loaded, cache::load_tailor_toml(o.config));
    s = loaded.cache;
  }
  TAILOR_TRY(with_env, cache::apply_cache_environment(s, env));
  s = with_env;
  if (!o.url.empty())
    if (auto ok = cache::set_cache_url(s, o.url, "--cache-url"); !ok) return ok.error();
  if (o.tool != "auto")
    if (auto ok = cache::set_cache_tool(s, o.tool, "--cache"); !ok) return ok.error();
  return s;
}

std::string first_line(const std::string& text) {
  auto lines = split_any(text, "\n");
  for (const auto& l : lines)
    if (!trim(l).empty()) return std::string(trim(l));
  return "";
}

int run_status(const CacheCommandOptions& o) {
  const auto env = process_environment();
  auto settings = settings_for(o, env);
  if (!settings) return report_error(settings.error().message);
  auto tool_path = plan::choose_cache_tool(*settings, std::nullopt, env, [](std::string_view name) {
    return find_in_path(std::string(name));
  });
  nlohmann::json j = {{"storage", cache::describe_cache_storage(*settings)},
                      {"storage_kind", std::string(cache::cache_storage_name(settings->storage))},
                      {"from", settings->from},
                      {"basedirs", settings->basedirs}};
  std::vector<std::pair<std::string, std::string>> rows;  // label, value
  bool ok = true;
  std::string tool;
  if (!tool_path) {
    j["tool"] = nullptr;
    j["problem"] = tool_path.error().message;
    ok = false;
  } else if (tool_path->empty()) {
    j["tool"] = "none";
    rows.push_back({"tool", "none (install sccache or ccache: rebuilds reuse compiled steps)"});
  } else {
    tool = std::filesystem::path(*tool_path).filename().string();
    j["tool"] = tool;
    j["path"] = *tool_path;
    CommandResult v = run_command({*tool_path, "--version"}, std::chrono::seconds(20));
    j["version"] = first_line(v.out);
    rows.push_back({"tool", fmt::format("{} ({}, {})", tool, first_line(v.out), *tool_path)});
  }
  rows.push_back(
      {"storage",
       cache::describe_cache_storage(*settings) +
           (settings->from.empty() ? "" : " (from " + join(settings->from, ", ") + ")")});
  if (!settings->basedirs.empty()) rows.push_back({"basedirs", join(settings->basedirs, ", ")});

  // Does the storage answer (its backend's check), then does the tool use it: sccache
  // starts a server of its own against it (how sccache itself finds a broken one), ccache
  // reads its statistics. Each reports the cache's size where the tool says it.
  std::string check;
  if (auto answer = cache::check_shared_storage(*settings, std::chrono::milliseconds(3000));
      !answer) {
    check = answer.error().message;
    ok = false;
  } else {
    check = answer->detail;
    ok = ok && answer->reachable;
  }
  std::optional<cache::CacheTool> tool_kind = cache::parse_cache_tool(tool);
  if (ok && tool_kind && *tool_kind != cache::CacheTool::none) {
    SystemCommandRunner runner;
    Expected<cache::ToolStats> stats = make_error("");
    if (auto storage_env = cache::cache_tool_environment(*settings, *tool_kind); !storage_env) {
      stats = storage_env.error();
    } else if (*tool_kind == cache::CacheTool::ccache) {
      stats = cache::read_tool_stats(*tool_kind, *tool_path, runner, *storage_env);
    } else if (auto server = cache::SccacheServer::start(*tool_path, *storage_env, runner);
               !server) {
      stats = server.error();
    } else {
      stats = (*server)->tool_stats();
      (*server)->stop();
    }
    if (!stats) {
      check = stats.error().message;
      ok = false;
    } else {
      if (!stats->location.empty()) {
        j["location"] = stats->location;
        rows.push_back({"location", terminal_safe(stats->location)});
      }
      if (stats->size_bytes) {
        j["size_bytes"] = *stats->size_bytes;
        rows.push_back({"size", fmt::format("{:.1f} MiB",
                                            static_cast<double>(*stats->size_bytes) / 1048576.0)});
      }
      check += *tool_kind == cache::CacheTool::sccache ? "; sccache started a server against it"
                                                       : "; ccache reads its statistics";
    }
  }
  if (!check.empty()) rows.push_back({"check", check});
  if (!tool_path) rows.push_back({"problem", tool_path.error().message});
  j["ok"] = ok;
  j["check"] = check;
  if (auto ledger = cache::read_cache_ledger(cache::cache_ledger_path()); ledger && ledger->builds)
    j["builds_since_zero"] = ledger->builds;
  if (o.json) {
    std::printf("%s\n", with_schema(j, "cache").dump(2).c_str());
  } else {
    for (const auto& [label, value] : rows) std::printf("%-9s %s\n", label.c_str(), value.c_str());
    std::printf("%s\n",
                ok ? paint("ready", Paint::green).c_str() : paint("not ready", Paint::red).c_str());
  }
  return ok ? k_exit_ok : k_exit_failed;
}

int run_show(const CacheCommandOptions& o) {
  const std::string path = cache::cache_ledger_path();
  auto ledger = cache::read_cache_ledger(path);
  if (!ledger) return report_error(ledger.error().message, k_exit_failed);
  if (o.json) {
    nlohmann::json j = cache::to_json(*ledger);
    j["file"] = path;
    std::printf("%s\n", with_schema(j, "cache").dump(2).c_str());
    return k_exit_ok;
  }
  if (ledger->builds == 0) {
    std::printf("no builds with a compiler cache since %s\n",
                ledger->since.empty() ? "ever" : ledger->since.c_str());
    return k_exit_ok;
  }
  std::printf("%llu builds since %s (%s)\n", static_cast<unsigned long long>(ledger->builds),
              ledger->since.c_str(), path.c_str());
  for (const auto& [tool, stats] : ledger->by_tool) {
    std::printf("%s%s\n", tool.c_str(), stats.categories.empty() ? " (counts whole compiles)" : "");
    std::fputs(cache::render_cache_stats(stats).c_str(), stdout);
  }
  std::printf("latest build (%s, %s)\n", ledger->last_tool.c_str(), ledger->last_at.c_str());
  std::fputs(cache::render_cache_stats(ledger->last).c_str(), stdout);
  return k_exit_ok;
}

int run_zero() {
  const std::string path = cache::cache_ledger_path();
  if (auto ok = cache::zero_cache_ledger(path); !ok)
    return report_error(ok.error().message, k_exit_failed);
  std::printf("statistics zeroed (%s); the cached entries stay\n", path.c_str());
  return k_exit_ok;
}

}  // namespace

void setup_cache(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<CacheCommandOptions>();
  sub.require_subcommand(1);
  auto* status = sub.add_subcommand(
      "status", "The cache builds use: tool, version, storage, whether it answers");
  status->add_option("--config", o->config, "a tailor.toml whose [cache] table applies");
  status->add_option("--cache", o->tool,
                     "auto, ccache, sccache or none (default auto, as a build chooses)");
  status->add_option("--cache-url", o->url,
                     "redis://HOST[:PORT][/DB], s3://BUCKET[/PREFIX] or a folder");
  status->add_flag("--json", o->json, "print JSON");
  status->callback([o, &run] { run = [o] { return run_status(*o); }; });
  auto* show = sub.add_subcommand(
      "show", "Hit rates per step kind (C/C++, CUDA, PTX, cubin) over tailor's builds");
  show->add_flag("--json", o->json, "print JSON");
  show->callback([o, &run] { run = [o] { return run_show(*o); }; });
  auto* zero =
      sub.add_subcommand("zero", "Start the hit-rate sums again (the cached entries stay)");
  zero->callback([&run] { run = [] { return run_zero(); }; });
}

}  // namespace tailor::cli
