// In-memory stand-ins for the host: files, environment, commands and the GPU query.
// Shared by the probe and build tests (tests/support); the probe reports the plan and build
// tests start from (toolkits, Pythons, whole hosts) are in host_reports.h.
#pragma once
#include <fnmatch.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "probe/gpu_query.h"
#include "probe/host_files.h"
#include "util/process.h"

namespace tailor::test {

using probe::DiskSpace;
using probe::GpuQuery;
using probe::GpuQueryResult;
using probe::HostFiles;

class FakeHostFiles : public HostFiles {
 public:
  std::map<std::string, std::string> files;
  std::set<std::string> executables;
  std::map<std::string, std::string> links;  ///< path -> realpath
  std::map<std::string, std::string> env;
  std::string arch = "x86_64";
  std::string glibc = "2.36";
  std::set<std::string>
      cpuid;  ///< what cpu_features() answers: CPUID names, or HWCAP names on aarch64
  std::optional<uint64_t> midr;  ///< what arm_midr() answers
  std::optional<DiskSpace> disk = DiskSpace{100ull << 30, 500ull << 30};

  std::optional<std::string> read(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> glob(const std::string& pattern) override {
    std::set<std::string> out;
    auto match = [&](const std::string& p) {
      if (fnmatch(pattern.c_str(), p.c_str(), FNM_PATHNAME) == 0) out.insert(p);
    };
    for (const auto& [p, _] : files) match(p);
    for (const auto& p : executables) match(p);
    for (const auto& [p, _] : links) match(p);
    return {out.begin(), out.end()};
  }
  bool exists(const std::string& path) override {
    return files.count(path) || executables.count(path) || links.count(path);
  }
  bool is_executable(const std::string& path) override {
    return executables.count(path) || (links.count(path) && executables.count(links[path]));
  }
  std::string realpath(const std::string& path) override {
    auto it = links.find(path);
    return it == links.end() ? path : it->second;
  }
  std::optional<std::string> getenv(const std::string& name) override {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  std::optional<DiskSpace> disk_space(const std::string&) override { return disk; }
  std::string machine() override { return arch; }
  std::string libc_version() override { return glibc; }
  std::set<std::string> cpu_features() override { return cpuid; }
  std::optional<uint64_t> arm_midr() override { return midr; }
};

/// What a command that started, printed `out` and exited with `exit_code` gives back.
inline CommandResult ran(int exit_code, std::string out = "") {
  CommandResult r;
  r.started = true;
  r.exit_code = exit_code;
  r.out = std::move(out);
  return r;
}

/// Answers commands by `handler` when it answers, else by their argv joined with spaces,
/// or by argv[0] alone; anything else did not start (a missing program). The answer's
/// stdout goes line by line to the spec's on_line when it has one. Safe to call from
/// several threads.
class FakeCommandRunner : public CommandRunner {
 public:
  std::map<std::string, CommandResult> by_command;
  std::map<std::string, CommandResult> by_program;
  std::vector<std::vector<std::string>> calls;
  std::vector<CommandSpec> specs;  ///< every spec run, in order (env, cwd, timeout)
  std::function<std::optional<CommandResult>(const CommandSpec&)> handler;

  void answer(const std::string& program, std::string out, int exit_code = 0) {
    by_program[program] = ran(exit_code, std::move(out));
  }
  void time_out(const std::string& program) {
    CommandResult r;
    r.started = true;
    r.timed_out = true;
    r.exit_code = 137;
    by_program[program] = r;
  }
  CommandResult run(const CommandSpec& spec) override {
    std::lock_guard<std::mutex> lock(m_mutex);
    calls.push_back(spec.argv);
    specs.push_back(spec);
    CommandResult r = answer_for(spec);
    if (spec.on_line && r.started) {
      size_t start = 0;
      while (start < r.out.size()) {
        size_t nl = r.out.find('\n', start);
        size_t end = nl == std::string::npos ? r.out.size() : nl;
        spec.on_line(std::string_view(r.out).substr(start, end - start));
        start = end + 1;
      }
    }
    return r;
  }

 private:
  CommandResult answer_for(const CommandSpec& spec) {
    if (handler)
      if (auto r = handler(spec)) return *r;
    std::string joined;
    for (const auto& a : spec.argv) joined += (joined.empty() ? "" : " ") + a;
    if (auto it = by_command.find(joined); it != by_command.end()) return it->second;
    if (!spec.argv.empty())
      if (auto it = by_program.find(spec.argv[0]); it != by_program.end()) return it->second;
    return {};
  }

  std::mutex m_mutex;
};

class FakeGpuQuery : public GpuQuery {
 public:
  std::optional<GpuQueryResult> result;  ///< nullopt: NVML unavailable
  Expected<GpuQueryResult> query() override {
    if (!result) return make_error("libnvidia-ml.so.1 not loadable (fake)");
    return *result;
  }
};

}  // namespace tailor::test

namespace tailor::probe::test {
using tailor::test::FakeCommandRunner;
using tailor::test::FakeGpuQuery;
using tailor::test::FakeHostFiles;
}  // namespace tailor::probe::test
