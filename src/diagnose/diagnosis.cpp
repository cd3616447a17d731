#include "diagnose/diagnosis.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>

#include "diagnose/log_lines.h"
#include "diagnose/source_paths.h"
#include "util/strings.h"

namespace tailor::diagnose {

namespace {

// Keeps the regex away from multi-KB command lines: it sees the needle's neighbourhood.
constexpr size_t k_window_before = 512;
constexpr size_t k_window_after = 2048;

/// Where a match sits, for the placeholders that read more than the match.
struct MatchPlace {
  const std::vector<std::string>& lines;
  size_t line_index = 0;  ///< 0-based line of the match
  size_t own = 0;         ///< the window's length up to the end of the matched line
  const BuildPaths& paths;
  std::string_view source_dir;
};

/// Group `group` as far as the matched line goes (a window runs on into the next line).
std::string group_on_its_line(const std::smatch& m, size_t group, size_t own) {
  if (group >= m.size() || !m[group].matched) return "?";
  const size_t at = static_cast<size_t>(m.position(group));
  if (at >= own) return "?";
  return std::string(trim(m[group].str().substr(0, own - at)));
}

/// Fills {1}, {2|default}, {block_line}, and {line:N} (group N cut at the end of its line),
/// {source:N} (group N as a path mapped back into the user's source) and {copy:N} (" (the
/// build compiled its copy, PATH)" where the log names a copy) from a match.
std::string render_template(const std::string& tmpl, const std::smatch& m, size_t block_line,
                            const MatchPlace& place) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '{') {
      out.push_back(tmpl[i]);
      continue;
    }
    size_t close = tmpl.find('}', i);
    if (close == std::string::npos) {
      out.append(tmpl, i, std::string::npos);
      break;
    }
    std::string key = tmpl.substr(i + 1, close - i - 1);
    std::string fallback;
    bool has_fallback = false;
    if (auto bar = key.find('|'); bar != std::string::npos) {
      fallback = key.substr(bar + 1);
      key.resize(bar);
      has_fallback = true;
    }
    auto group_of = [&](std::string_view prefix) -> std::optional<size_t> {
      if (!key.starts_with(prefix)) return std::nullopt;
      std::string digits = key.substr(prefix.size());
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit))
        return std::nullopt;
      return std::stoul(digits);
    };
    if (key == "block_line") {
      out += block_line ? std::to_string(block_line) : std::string("?");
    } else if (auto g = group_of("line:")) {
      out += group_on_its_line(m, *g, place.own);
    } else if (auto src = group_of("source:"), copy = group_of("copy:"); src || copy) {
      const std::string printed = group_on_its_line(m, src ? *src : *copy, place.own);
      const SourcePath path =
          map_source_path(printed, place.lines, place.line_index, place.paths, place.source_dir);
      if (src)
        out += path.shown();
      else if (!path.build_file.empty() && path.build_file != path.shown())
        out += " (the build compiled its copy, " + path.build_file + ")";
    } else if (!key.empty() && std::all_of(key.begin(), key.end(), ::isdigit)) {
      size_t group = std::stoul(key);
      if (group < m.size() && m[group].matched)
        out += m[group].str();
      else
        out += has_fallback ? fallback : std::string("?");
    } else {
      out.append(tmpl, i, close - i + 1);  // not a placeholder: keep it as written
    }
    i = close;
  }
  return out;
}

// Compiled once per symptom: building ~50 std::regex objects costs more than reading a
// typical log, and `explain` (and its fuzz target) calls this with the same table.
// nullptr for a symptom that is not a valid regex.
const std::regex* compiled_symptom(const std::string& symptom) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<std::regex>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(symptom);
  if (it == cache.end()) {
    std::unique_ptr<std::regex> re;
    try {
      re = std::make_unique<std::regex>(symptom, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
    }
    it = cache.emplace(symptom, std::move(re)).first;
  }
  return it->second.get();
}

}  // namespace

std::vector<Diagnosis> diagnose_log(std::string_view log,
                                    const std::vector<FailurePattern>& patterns) {
  return diagnose_log(log, patterns, DiagnoseOptions{});
}

std::vector<Diagnosis> diagnose_log(std::string_view log, const DiagnoseOptions& options) {
  return diagnose_log(log, failure_patterns(), options);
}

std::vector<Diagnosis> diagnose_log(std::string_view log,
                                    const std::vector<FailurePattern>& patterns,
                                    const DiagnoseOptions& options) {
  const auto lines = split_log_lines(log);
  const auto block = first_error_block(log);
  const size_t shift = options.first_line > 0 ? options.first_line - 1 : 0;
  const size_t block_line = block ? block->first_line + shift : 0;

  struct Ranked {
    int priority;
    Diagnosis d;
  };
  std::vector<Ranked> found;
  for (const auto& p : patterns) {
    if (!options.step.empty() &&
        std::find(p.steps.begin(), p.steps.end(), options.step) == p.steps.end())
      continue;
    const std::regex* compiled = compiled_symptom(p.symptom);
    if (!compiled) continue;  // parse_failure_patterns rejects these; a caller's table may not have
    const std::regex& re = *compiled;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      size_t at = p.needle.empty() ? 0 : line.find(p.needle);
      if (at == std::string::npos) continue;
      size_t from = at > k_window_before ? at - k_window_before : 0;
      std::string window = line.substr(from, (at - from) + k_window_after);
      const size_t own = window.size();
      if (i + 1 < lines.size()) {
        window.push_back(' ');
        window += std::string(trim(lines[i + 1]).substr(0, k_window_after));
      }
      std::smatch m;
      if (!std::regex_search(window, m, re) || static_cast<size_t>(m.position(0)) >= own) continue;
      Diagnosis d;
      d.pattern_id = p.id;
      d.quoted_line = std::string(trim(line));
      d.line_number = i + 1 + shift;
      const BuildPaths paths = read_build_paths(lines, i);
      const MatchPlace place{lines, i, own, paths, options.source_dir};
      d.cause = render_template(p.cause, m, block_line, place);
      d.fix = render_template(p.fix, m, block_line, place);
      d.priority = p.priority;
      found.push_back({p.priority, std::move(d)});
      break;  // one per pattern: the earliest line that shows it
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Ranked& a, const Ranked& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.d.line_number < b.d.line_number;
  });
  std::vector<Diagnosis> out;
  for (auto& r : found) {
    // Two symptoms of one cause (a traceback frame and its last line) say it once.
    bool same =
        std::any_of(out.begin(), out.end(), [&](const Diagnosis& d) { return d.fix == r.d.fix; });
    if (!same) out.push_back(std::move(r.d));
  }
  return out;
}

std::vector<Diagnosis> diagnose_log(std::string_view log) {
  return diagnose_log(log, failure_patterns());
}

std::optional<Interruption> find_interruption(std::string_view log) {
  static const std::regex k_line(
      R"(^### tailor(?: step \d+ INTERRUPTED \(signal (\d+)\)|: interrupted by signal (\d+)))");
  size_t number = 0;
  for (size_t start = 0; start < log.size();) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    ++number;
    std::string_view line = log.substr(start, end - start);
    if (line.starts_with("### tailor")) {
      std::string text(line);
      std::smatch m;
      if (std::regex_search(text, m, k_line)) {
        Interruption i;
        i.line_number = number;
        std::string digits = m[1].matched ? m[1].str() : m[2].str();
        if (digits.size() < 4) i.signal = std::stoi(digits);
        if (!text.empty() && text.back() == '\r') text.pop_back();
        i.quoted_line = std::move(text);
        return i;
      }
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string signal_label(int signal) {
  switch (signal) {
    case 1:
      return "SIGHUP";
    case 2:
      return "SIGINT (Ctrl-C)";
    case 15:
      return "SIGTERM";
    default:
      return "signal " + std::to_string(signal);
  }
}

}  // namespace tailor::diagnose
