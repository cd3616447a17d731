#include "diagnose/source_paths.h"

#include <algorithm>
#include <filesystem>

#include "util/strings.h"

namespace tailor::diagnose {

namespace {

// How far above a compiler message its compile command may be (ninja prints the failed
// command, then the compiler's output).
constexpr size_t k_command_lookback = 200;

/// Whitespace-separated words, quotes around a word removed (the header is shell text).
std::vector<std::string> words_of(std::string_view line) {
  std::vector<std::string> out;
  for (auto& w : split_any(line, " \t")) {
    std::string s = w;
    while (!s.empty() && (s.front() == '\'' || s.front() == '"')) s.erase(s.begin());
    while (!s.empty() && (s.back() == '\'' || s.back() == '"' || s.back() == ';')) s.pop_back();
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

bool under(const std::string& path, const std::string& dir) {
  return !dir.empty() && path.size() > dir.size() && path.starts_with(dir) &&
         (path[dir.size()] == '/' || dir.back() == '/');
}

std::string rest_after(const std::string& path, const std::string& dir) {
  std::string rest = path.substr(dir.size());
  while (!rest.empty() && rest.front() == '/') rest.erase(rest.begin());
  return rest;
}

/// "../../csrc/a.cu" -> "csrc/a.cu"; "./a.cu" -> "a.cu".
std::string without_leading_dots(std::string p) {
  for (;;) {
    if (p.starts_with("./"))
      p.erase(0, 2);
    else if (p.starts_with("../"))
      p.erase(0, 3);
    else
      return p;
  }
}

}  // namespace

BuildPaths read_build_paths(const std::vector<std::string>& lines, size_t upto) {
  BuildPaths out;
  // The step header of the failed step: the last "### cd DIR && ..." above the message.
  for (size_t i = std::min(upto, lines.size()); i-- > 0;) {
    const std::string& line = lines[i];
    if (!line.starts_with("### cd ")) continue;
    auto words = words_of(std::string_view(line).substr(4));
    if (words.size() >= 2)
      out.step_dir = std::filesystem::path(words[1]).lexically_normal().string();
    while (out.step_dir.size() > 1 && out.step_dir.back() == '/') out.step_dir.pop_back();
    for (size_t w = 0; w + 2 < words.size(); ++w)
      if (words[w] == "--bind" && words[w + 2] != "/")
        out.binds.emplace_back(words[w + 2],
                               std::filesystem::path(words[w + 1]).lexically_normal().string());
    // The deepest mount point first: it wins over a folder that contains it.
    std::sort(out.binds.begin(), out.binds.end(),
              [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    break;
  }
  return out;
}

std::string SourcePath::shown() const {
  if (!user_file.empty()) return user_file;
  if (!relative.empty()) return relative + " in the package's source";
  if (!build_file.empty()) return build_file;
  return printed;
}

SourcePath map_source_path(std::string_view printed, const std::vector<std::string>& lines,
                           size_t line_index, const BuildPaths& paths,
                           std::string_view source_dir) {
  SourcePath out;
  out.printed = std::string(trim(printed));
  std::string absolute;
  if (out.printed.starts_with("/")) {
    absolute = out.printed;
  } else if (!out.printed.empty()) {
    // Relative to the compiler's folder, which the log does not say: the compile command
    // above names the same file by an absolute path ending in the same components.
    const std::string tail = "/" + without_leading_dots(out.printed);
    const size_t stop = line_index > k_command_lookback ? line_index - k_command_lookback : 0;
    for (size_t i = std::min(line_index + 1, lines.size()); i-- > stop && absolute.empty();)
      for (const auto& w : words_of(lines[i]))
        if (w.starts_with("/") && w.ends_with(tail)) {
          absolute = w;
          break;
        }
    // setuptools without ninja runs the compiler in the package's root.
    if (absolute.empty() && !out.printed.starts_with("../"))
      out.relative = std::filesystem::path(out.printed).lexically_normal().string();
  }
  if (!absolute.empty()) {
    absolute = std::filesystem::path(absolute).lexically_normal().string();
    // Inside the fixed-path namespace: back to the host folder mounted there.
    for (const auto& [inside, host] : paths.binds)
      if (absolute == inside || under(absolute, inside)) {
        absolute = host + "/" + rest_after(absolute, inside);
        break;
      }
    out.build_file = absolute;
    if (under(absolute, paths.step_dir)) out.relative = rest_after(absolute, paths.step_dir);
  }
  if (!out.relative.empty() && !source_dir.empty()) {
    std::string dir(source_dir);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    out.user_file = dir + "/" + out.relative;
  }
  return out;
}

}  // namespace tailor::diagnose
