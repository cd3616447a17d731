#include "outputs/ninja_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>

#include "util/strings.h"
#include "util/user_file.h"

namespace tailor::outputs {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t k_max_log_bytes = uint64_t{256} << 20;
constexpr uint64_t k_max_build_ninja_bytes = uint64_t{16} << 20;
// The build driver's package Ninja (driver/tailor_driver) ends each module in an
// edge that only touches this folder's mN, to learn when the module may link: not work.
constexpr std::string_view k_module_stamps = ".tailor-done/";

// A build.ninja and the files its `subninja` lines name (the package Ninja includes a
// module file it could not merge whole), up to 64 files and 16 MiB in all.
std::string read_manifest(DiskInterface& disk, const fs::path& path) {
  auto top = disk.read(path.string(), k_max_build_ninja_bytes);
  if (!top) return {};
  std::string text = *top;
  int included = 0;
  for (const auto& whole : split_any(*top, "\n")) {
    std::string_view line = whole;
    if (line.substr(0, 9) != "subninja " || ++included > 64 ||
        text.size() >= k_max_build_ninja_bytes)
      continue;
    std::string name;
    std::string_view rest = trim(line.substr(9));
    for (size_t i = 0; i < rest.size(); ++i)
      name += rest[i] == '$' && i + 1 < rest.size() ? rest[++i] : rest[i];
    fs::path sub = fs::path(name).is_absolute() ? fs::path(name) : path.parent_path() / name;
    if (auto more = disk.read(sub.string(), k_max_build_ninja_bytes - text.size()))
      text += "\n" + *more;
  }
  return text;
}

// Decimal digits only (no sign, no spaces), at most `max`.
bool parse_ms(std::string_view s, uint64_t max, uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

std::vector<std::string_view> split_tabs(std::string_view line, size_t max_fields) {
  std::vector<std::string_view> f;
  size_t at = 0;
  while (f.size() <= max_fields) {
    size_t tab = line.find('\t', at);
    f.push_back(line.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at));
    if (tab == std::string_view::npos) break;
    at = tab + 1;
  }
  return f;
}

std::string_view extension_of(std::string_view path) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) return {};
  return path.substr(dot);
}

}  // namespace

Expected<NinjaLog> parse_ninja_log(std::string_view text, size_t from_offset,
                                   const NinjaLogLimits& limits) {
  NinjaLog log;
  size_t eol = text.find('\n');
  std::string_view header = text.substr(0, eol);
  if (!header.empty() && header.back() == '\r') header.remove_suffix(1);
  constexpr std::string_view k_prefix = "# ninja log v";
  if (header.substr(0, k_prefix.size()) != k_prefix)
    return make_error(fmt::format("not a Ninja log (the first line is not \"# ninja log vN\")"));
  std::string_view v = header.substr(k_prefix.size());
  if (v != "5" && v != "6" && v != "7")
    return make_error(
        fmt::format("Ninja log version {} is not one tailor reads (5, 6, 7)",
                    v.size() > 8 ? std::string(v.substr(0, 8)) + "..." : std::string(v)));
  log.version = v[0] - '0';
  size_t at = eol == std::string_view::npos ? text.size() : eol + 1;
  if (from_offset > at) {
    if (from_offset > text.size()) from_offset = text.size();
    // A line cut by the offset is not a whole entry.
    bool at_line_start = text[from_offset - 1] == '\n';
    at = from_offset;
    if (!at_line_start) {
      size_t next = text.find('\n', at);
      if (at < text.size()) ++log.skipped;
      at = next == std::string_view::npos ? text.size() : next + 1;
    }
  }
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string_view line =
        text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.front() == '#') {
      // Ninja never writes comments after its header; another header is a log appended whole.
      ++log.skipped;
      continue;
    }
    auto f = split_tabs(line, 5);
    NinjaJob job;
    if (f.size() != 5 || !parse_ms(f[0], limits.max_ms, job.start_ms) ||
        !parse_ms(f[1], limits.max_ms, job.end_ms) || job.start_ms > job.end_ms || f[3].empty() ||
        f[3].size() > limits.max_output) {
      ++log.skipped;
      continue;
    }
    if (log.jobs.size() >= limits.max_jobs) {
      ++log.dropped;
      continue;
    }
    job.output = std::string(f[3]);
    log.jobs.push_back(std::move(job));
  }
  return log;
}

uint64_t place_invocations(std::vector<NinjaJob>& jobs, uint64_t base_ms) {
  constexpr uint64_t k_drop_ms = 1000;
  uint64_t offset = base_ms, prev_end = 0, invocation_end = base_ms;
  for (auto& j : jobs) {
    if (j.end_ms + k_drop_ms < prev_end) offset = invocation_end;  // a new invocation
    prev_end = j.end_ms;
    j.start_ms += offset;
    j.end_ms += offset;
    invocation_end = std::max(invocation_end, j.end_ms);
  }
  return invocation_end;
}

std::vector<NinjaEdge> parse_ninja_edges(std::string_view build_ninja, size_t max_edges) {
  // "build OUT: RULE IN ..." lines ("$ " escapes a space); the first output names the edge.
  std::vector<NinjaEdge> edges;
  size_t at = 0;
  while (at < build_ninja.size() && edges.size() < max_edges) {
    size_t end = build_ninja.find('\n', at);
    std::string_view line =
        build_ninja.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    at = end == std::string_view::npos ? build_ninja.size() : end + 1;
    if (line.substr(0, 6) != "build ") continue;
    line.remove_prefix(6);
    size_t colon = std::string_view::npos;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '$') {
        ++i;
        continue;
      }
      if (line[i] == ':') {
        colon = i;
        break;
      }
    }
    if (colon == std::string_view::npos) continue;
    NinjaEdge e;
    for (size_t i = 0; i < colon; ++i) {
      if (line[i] == '$' && i + 1 < colon)
        ++i;
      else if (line[i] == ' ')
        break;  // several outputs: the first names the edge
      e.output += line[i];
    }
    std::string_view rest = line.substr(colon + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t sp = rest.find(' ');
    e.rule = std::string(rest.substr(0, sp));
    if (sp != std::string_view::npos) {
      std::string_view in = rest.substr(sp + 1);
      while (!in.empty() && in.front() == ' ') in.remove_prefix(1);
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '$' && i + 1 < in.size())
          ++i;
        else if (in[i] == ' ' || in[i] == '|')
          break;
        e.input += in[i];
      }
    }
    edges.push_back(std::move(e));
  }
  return edges;
}

bool is_bookkeeping_edge(std::string_view rule, std::string_view output) {
  return rule == "phony" || rule == "CLEAN" || rule == "HELP" || rule.starts_with("RERUN_CMAKE") ||
         output.ends_with(".util");
}

std::string job_kind(std::string_view rule, std::string_view input, std::string_view output) {
  // The rule decides where it says what it runs: CMake's CUDA_COMPILER__<target>_...,
  // CXX_COMPILER__..., C_COMPILER__..., *_LINKER__..., CUSTOM_COMMAND (a code generator,
  // whatever it writes), torch's cpp_extension cuda_compile and link (the build driver's
  // copies end in _mN or _sK). A target's name (c10_cuda) says nothing.
  auto starts = [&](std::string_view p) { return rule.substr(0, p.size()) == p; };
  if (starts("CUDA_COMPILER") || starts("cuda_compile")) return "cu";
  if (starts("CXX_COMPILER")) return "cpp";
  if (starts("C_COMPILER")) return "c";
  if (rule.find("LINKER") != std::string_view::npos || starts("link") || starts("cuda_devlink") ||
      starts("CMAKE_SYMLINK"))
    return "link";
  if (starts("CUSTOM_COMMAND") || is_bookkeeping_edge(rule, output)) return "other";
  std::string_view ext = extension_of(input.empty() ? output : input);
  std::string_view out_ext = extension_of(output);
  if (ext == ".cu") return "cu";
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".C") return "cpp";
  if (ext == ".c") return "c";
  if (out_ext == ".so" || out_ext == ".a" || output.find(".so.") != std::string_view::npos)
    return "link";
  return "other";
}

void classify_jobs(std::vector<NinjaJob>& jobs, std::string_view build_ninja) {
  std::map<std::string, std::pair<std::string, std::string>, std::less<>> edges;
  for (auto& e : parse_ninja_edges(build_ninja.substr(0, k_max_build_ninja_bytes), 200000))
    edges.emplace(std::move(e.output), std::make_pair(std::move(e.rule), std::move(e.input)));
  for (auto& j : jobs) {
    std::string_view rule, input;
    if (auto it = edges.find(j.output); it != edges.end()) {
      rule = it->second.first;
      input = it->second.second;
      j.input = std::string(input);
    }
    j.kind = job_kind(rule, input, j.output);
  }
}

std::vector<std::pair<std::string, uint64_t>> ninja_log_sizes(DiskInterface& disk,
                                                              const std::string& build_root) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& f : disk.find_files(build_root, ".ninja_log", 6, 20000))
    out.emplace_back(f.path, f.size);
  return out;
}

BuildJobs collect_build_jobs(DiskInterface& disk, const std::string& build_root,
                             const std::vector<std::pair<std::string, uint64_t>>& offsets_before,
                             const NinjaLogLimits& limits) {
  BuildJobs result;
  std::vector<std::pair<int64_t, std::string>> ordered;
  for (const auto& f : disk.find_files(build_root, ".ninja_log", 6, 20000))
    ordered.emplace_back(f.mtime_ns, f.path);
  std::sort(ordered.begin(), ordered.end());
  std::string root = build_root;
  if (!root.empty() && root.back() != '/') root += '/';
  // Each log's new jobs, and when its Ninja started where the build driver ran
  // the package's modules side by side (a `.tailor_start` beside the log: epoch ms).
  struct Invocation {
    std::string path;
    NinjaLog log;
    std::optional<uint64_t> started_ms;
  };
  std::vector<Invocation> runs;
  for (const auto& [when, path] : ordered) {
    auto text = disk.read(path, k_max_log_bytes);
    if (!text) continue;
    uint64_t from = 0;
    for (const auto& [p, size] : offsets_before)
      if (p == path && size <= text->size()) from = size;
    NinjaLogLimits left = limits;
    size_t kept = 0;
    for (const auto& r : runs) kept += r.log.jobs.size();
    left.max_jobs = limits.max_jobs > kept ? limits.max_jobs - kept : 0;
    auto log = parse_ninja_log(*text, from, left);
    if (!log) continue;
    std::erase_if(log->jobs,
                  [](const NinjaJob& j) { return j.output.rfind(k_module_stamps, 0) == 0; });
    Invocation run{path, std::move(*log), std::nullopt};
    // The stamp is in the module's build folder; a package that moves its objects one
    // folder further (apex: build_temp/<module>/<extension name>) has its log below it.
    fs::path dir = fs::path(path).parent_path();
    for (int up = 0; up < 3 && !run.started_ms && dir.string().size() + 1 >= root.size();
         ++up, dir = dir.parent_path()) {
      auto stamp = disk.read((dir / ".tailor_start").string(), 64);
      if (!stamp) continue;
      uint64_t ms = 0;
      std::string_view t = trim(*stamp);
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
      if (ec == std::errc() && p == t.data() + t.size() && ms > 0) run.started_ms = ms;
    }
    runs.push_back(std::move(run));
  }
  std::optional<uint64_t> first_start;
  for (const auto& r : runs)
    if (r.started_ms && !r.log.jobs.empty())
      first_start = std::min(first_start.value_or(*r.started_ms), *r.started_ms);
  uint64_t base = 0, side_by_side_end = 0;
  for (auto& r : runs) {
    result.logs.push_back(r.path);
    classify_jobs(r.log.jobs, read_manifest(disk, fs::path(r.path).parent_path() / "build.ninja"));
    if (r.started_ms && first_start && !r.log.jobs.empty())
      side_by_side_end =
          std::max(side_by_side_end, place_invocations(r.log.jobs, *r.started_ms - *first_start));
    else
      base = place_invocations(r.log.jobs, std::max(base, side_by_side_end));
    for (auto& j : r.log.jobs) {
      if (j.output.rfind(root, 0) == 0) j.output.erase(0, root.size());
      result.jobs.push_back(std::move(j));
    }
    result.dropped += r.log.dropped;
    result.skipped += r.log.skipped;
  }
  return result;
}

nlohmann::json jobs_to_json(const std::vector<NinjaJob>& jobs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& j : jobs) {
    nlohmann::json o = {
        {"output", j.output}, {"start_ms", j.start_ms}, {"end_ms", j.end_ms}, {"kind", j.kind}};
    if (j.split > 0) o["split"] = j.split;
    a.push_back(std::move(o));
  }
  return a;
}

std::map<std::string, uint64_t> unit_times(const std::vector<NinjaJob>& jobs,
                                           const std::vector<std::string>& roots) {
  std::map<std::string, uint64_t> out;
  for (const auto& j : jobs) {
    if (j.input.empty() || (j.kind != "cu" && j.kind != "cpp" && j.kind != "c") ||
        j.end_ms < j.start_ms)
      continue;
    const fs::path in = fs::path(j.input).lexically_normal();
    std::string key = in.string();
    for (const auto& r : roots) {
      if (r.empty()) continue;
      fs::path rel = in.lexically_relative(fs::path(r).lexically_normal());
      if (!rel.empty() && *rel.begin() != "..") {
        key = rel.string();
        break;
      }
    }
    if (key.empty() || key.size() > 1024) continue;
    uint64_t& ms = out[key];
    ms = std::max(ms, j.end_ms - j.start_ms);
  }
  return out;
}

}  // namespace tailor::outputs
