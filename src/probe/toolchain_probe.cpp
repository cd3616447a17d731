// Host compilers and build tools on PATH, each asked for its version with a timeout.
#include <regex>
#include <set>

#include "probe/build_tools.h"
#include "probe/probe.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::probe {
namespace {

CommandResult version_of(CommandRunner& runner, const std::string& exe) {
  CommandSpec spec;
  spec.argv = {exe, "--version"};
  spec.timeout = std::chrono::seconds(10);
  return runner.run(spec);
}

int major_of(const std::string& version) { return version_major(version).value_or(0); }

}  // namespace

std::string_view compiler_kind_name(CompilerKind kind) {
  switch (kind) {
    case CompilerKind::gcc:
      return "gcc";
    case CompilerKind::clang:
      return "clang";
    case CompilerKind::other:
      break;
  }
  return "other";
}

std::optional<std::string> parse_tool_version(const std::string& text) {
  static const std::regex re("(\\d+\\.\\d+(\\.\\d+)*)");
  std::smatch m;
  auto first_line = text.substr(0, text.find('\n'));
  if (std::regex_search(first_line, m, re)) return m[1].str();
  if (std::regex_search(text, m, re)) return m[1].str();
  return std::nullopt;
}

std::optional<Compiler> parse_compiler_version(const std::string& text) {
  auto first_line = std::string(trim(text.substr(0, text.find('\n'))));
  if (first_line.empty()) return std::nullopt;
  Compiler c;
  std::smatch m;
  static const std::regex clang("clang version (\\d+\\.\\d+(\\.\\d+)?)");
  if (std::regex_search(first_line, m, clang)) {
    c.kind = CompilerKind::clang;
    c.version = m[1].str();
  } else if (text.find("Free Software Foundation") != std::string::npos ||
             first_line.find("gcc") != std::string::npos ||
             first_line.find("g++") != std::string::npos ||
             first_line.find("GCC") != std::string::npos) {
    // GCC puts the version right after its package note: "gcc (Debian 12.2.0-14) 12.2.0",
    // "g++ (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3)".
    static const std::regex after_paren("\\)\\s+(\\d+\\.\\d+(\\.\\d+)?)");
    static const std::regex any("(\\d+\\.\\d+(\\.\\d+)?)");
    if (!std::regex_search(first_line, m, after_paren) && !std::regex_search(first_line, m, any))
      return std::nullopt;
    c.kind = CompilerKind::gcc;
    c.version = m[1].str();
  } else {
    return std::nullopt;
  }
  c.major = major_of(c.version);
  return c;
}

std::vector<Compiler> find_host_compilers(HostFiles& files, CommandRunner& runner) {
  std::vector<std::string> candidates;
  auto path = files.getenv("PATH").value_or("");
  for (const auto& dir : split_any(path, ":")) {
    for (const char* pattern : {"gcc", "g++", "gcc-[0-9]*", "g++-[0-9]*", "clang", "clang++",
                                "clang-[0-9]*", "clang++-[0-9]*"}) {
      for (const auto& p : files.glob(dir + "/" + pattern))
        if (files.is_executable(p)) candidates.push_back(p);
    }
  }
  std::vector<Compiler> out;
  std::set<std::string> seen;
  for (const auto& p : candidates) {
    if (!seen.insert(files.realpath(p)).second) continue;
    auto r = version_of(runner, p);
    if (!r.ok()) continue;
    auto c = parse_compiler_version(r.out);
    if (!c) continue;
    c->path = p;
    out.push_back(std::move(*c));
  }
  return out;
}

std::vector<Tool> find_tools(HostFiles& files, CommandRunner& runner) {
  std::vector<Tool> out;
  for (const char* name : {"ninja", "cmake", "ccache", "sccache", "git", "pip", "make"}) {
    std::string exe = find_executable(files, name);
    if (exe.empty()) continue;
    Tool t;
    t.name = name;
    t.path = exe;
    auto r = version_of(runner, exe);
    if (r.ok()) t.version = parse_tool_version(r.out).value_or("");
    // Ninja and GNU make join a make fifo jobserver from the versions the data names, so
    // nested builds share one job budget.
    const auto& since = jobserver_client_since();
    if (t.name == "ninja" && !t.version.empty())
      t.jobserver_client = compare_versions(t.version, since.ninja) >= 0;
    if (t.name == "make" && !t.version.empty())
      t.jobserver_client = compare_versions(t.version, since.make) >= 0;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tailor::probe
