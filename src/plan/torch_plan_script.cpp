// The standalone script form of a plan: what hand-written build guides do (setup checks,
// exports, clone, venv, build), generated from the same TorchPlan. Sourced, it only
// exports the plan's environment (tests compare that with the JSON); executed, it runs
// the steps.
#include <fmt/format.h>

#include <algorithm>

#include "plan/torch_plan_render.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {

bool is_under(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || (path.size() > dir.size() && path.starts_with(dir) &&
                                          path[dir.size()] == '/'));
}

/// A path of the plan in the script: paths in the source or work folder go through
/// $TAILOR_SOURCE / $TAILOR_WORK (set once at the top), everything else is quoted.
std::string script_word(const TorchPlan& p, const std::string& a) {
  for (auto [dir, var] : {std::pair{&p.layout.source_dir, "TAILOR_SOURCE"},
                          std::pair{&p.layout.work_dir, "TAILOR_WORK"}}) {
    if (!is_under(a, *dir)) continue;
    std::string rest = a.substr(dir->size());
    return fmt::format("\"${}\"{}", var, rest.empty() ? "" : shell_quote(rest));
  }
  return shell_quote(a);
}

std::string quote_all(const TorchPlan& p, const std::vector<std::string>& argv) {
  std::vector<std::string> q;
  for (size_t i = 0; i < argv.size(); ++i)
    // The interpreter of another machine is found there ($PYTHON), not this host's path.
    q.push_back(i == 0 && !p.for_this_host() && argv[i] == p.python ? "\"$PYTHON\""
                                                                    : script_word(p, argv[i]));
  return join(q, " ");
}

/// What a script for another machine than this host finds there: the variables this host
/// resolved become defaults the build host may override, computed where the script runs.
std::string build_host_assignments(const TorchPlan& p) {
  std::string o;
  o += fmt::format(
      "# Found on the machine this script runs on, not taken from the {} host that planned it;\n",
      p.host_platform);
  o += "# set any of these before running it to choose another.\n";
  const auto vars = build_host_variables(p);
  auto has = [&](const char* k) { return std::find(vars.begin(), vars.end(), k) != vars.end(); };
  if (has("MAX_JOBS"))
    o += fmt::format(
        "# MAX_JOBS: min(cores, (available memory - {0:g} GiB reserve) / {1:g} GiB per job), at "
        "least 1, as tailor counts it.\n"
        "tailor_max_jobs() {{\n"
        "  awk -v cores=\"$(nproc)\" -v reserve={0:g} -v per_job={1:g} \\\n"
        "    '/^MemAvailable:/ {{ j = int(($2 / 1048576 - reserve) / per_job); if (j > cores + 0) "
        "j = cores + 0; "
        "if (j < 1) j = 1; print j }}' /proc/meminfo\n"
        "}}\n",
        p.estimate.reserve_gib, p.estimate.gib_per_job);
  if (has("CUDA_HOME"))
    o += fmt::format("export CUDA_HOME=\"${{CUDA_HOME:-{}}}\"\n",
                     shell_quote("/usr/local/cuda-" + p.cuda_text()));
  if (has("CUDACXX")) o += "export CUDACXX=\"${CUDACXX:-$CUDA_HOME/bin/nvcc}\"\n";
  if (has("CMAKE_CUDA_COMPILER"))
    o += "export CMAKE_CUDA_COMPILER=\"${CMAKE_CUDA_COMPILER:-$CUDACXX}\"\n";
  if (has("CUDAHOSTCXX")) o += "export CUDAHOSTCXX=\"${CUDAHOSTCXX:-$(command -v g++ || true)}\"\n";
  if (has("MAX_JOBS")) o += "export MAX_JOBS=\"${MAX_JOBS:-$(tailor_max_jobs)}\"\n";
  o += fmt::format("PYTHON=\"${{PYTHON:-{}}}\"\n", shell_quote("python" + p.python_version));
  return o;
}

/// The checks of a script for another machine: each tool found there, or one clear line.
std::string build_host_checks(const TorchPlan& p) {
  std::string o;
  const auto vars = build_host_variables(p);
  auto has = [&](const char* k) { return std::find(vars.begin(), vars.end(), k) != vars.end(); };
  auto check = [&](const std::string& failed_when, const std::string& message) {
    o += fmt::format("  if {}; then\n    tailor_fail \"{}\"\n    return 1\n  fi\n", failed_when,
                     message);
  };
  check("! command -v \"$PYTHON\" >/dev/null",
        fmt::format("$PYTHON not found: install Python {0} with its venv module, or set "
                    "PYTHON=/path/to/python{0}",
                    p.python_version));
  o += "  py_version=$(\"$PYTHON\" -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])' || "
       "true)\n";
  check(fmt::format("[ \"$py_version\" != {} ]", shell_quote(p.python_version)),
        fmt::format(
            "$PYTHON is Python $py_version; the plan is for {0}: set PYTHON=/path/to/python{0}",
            p.python_version));
  if (has("CUDACXX")) {
    check("[ ! -x \"$CUDACXX\" ]",
          fmt::format("nvcc not found at $CUDACXX: install CUDA {} or set CUDA_HOME to its folder",
                      p.cuda_text()));
    o += "  nvcc_release=$(\"$CUDACXX\" --version | sed -n 's/.*release \\([0-9.]*\\),.*/\\1/p' || "
         "true)\n";
    check(
        fmt::format("[ \"$nvcc_release\" != {} ]", shell_quote(p.cuda_text())),
        fmt::format(
            "$CUDACXX is CUDA $nvcc_release; the plan is for CUDA {}: set CUDA_HOME to that folder",
            p.cuda_text()));
  }
  if (has("CUDAHOSTCXX")) {
    check("[ -z \"$CUDAHOSTCXX\" ] || [ ! -x \"$CUDAHOSTCXX\" ]",
          "no host C++ compiler at '$CUDAHOSTCXX': install g++ or set CUDAHOSTCXX");
    if (p.min_gcc > 0 && p.max_gcc > 0) {
      o += "  gcc_major=$(\"$CUDAHOSTCXX\" -dumpversion | cut -d. -f1 || true)\n";
      check(fmt::format("[ \"${{gcc_major:-0}}\" -lt {0} ] || [ \"${{gcc_major:-0}}\" -gt {1} ]",
                        p.min_gcc, p.max_gcc),
            fmt::format("$CUDAHOSTCXX is GCC $gcc_major; torch {} with CUDA {} needs GCC {} to {}: "
                        "set CUDAHOSTCXX",
                        p.torch_version, p.cuda_text(), p.min_gcc, p.max_gcc));
    }
  }
  if (has("MAX_JOBS"))
    o += "  case \"$MAX_JOBS\" in\n"
         "    ''|*[!0-9]*|0) tailor_fail \"MAX_JOBS='$MAX_JOBS' is not a positive whole number: "
         "set MAX_JOBS=N\"; return 1 ;;\n"
         "  esac\n";
  return o;
}

/// `TAILOR_WORK=...`: a path given relative to `tailor plan` is read against the folder
/// the script starts in (the build host has its own layout); an absolute one as it is.
std::string folder_assignment(const std::string& given, const std::string& absolute) {
  if (!given.empty() && given.front() != '/') return "\"$(pwd)\"/" + shell_quote(given);
  return shell_quote(absolute);
}

}  // namespace

std::string render_plan_script(const TorchPlan& p) {
  std::string o;
  o += "#!/usr/bin/env bash\n";
  o += fmt::format("# PyTorch {} build: {}\n", p.torch_version, p.name);
  o += "# Generated by `tailor plan --format sh`. Run it on the build host (bash plan.sh), or\n";
  o += "# source it (. plan.sh) to get exactly the plan's environment without building.\n";
  o += fmt::format("# Wheel: {}\n", p.wheel_name);
  o += fmt::format("# Estimates: ~{:.0f} MiB wheel, ~{:.1f} h with {} jobs, ~{:.0f} GiB disk.\n",
                   p.estimate.wheel_mib, p.estimate.build_hours, p.jobs, p.estimate.disk_gib);
  o += "\n";
  const auto build_host = build_host_variables(p);
  for (const auto& [k, v] : p.env)
    if (std::find(build_host.begin(), build_host.end(), k) == build_host.end())
      o += fmt::format("export {}={}\n", k, shell_quote(v));
  o += "\n";
  if (!p.for_this_host()) o += build_host_assignments(p) + "\n";
  o += "# Folders: relative ones are read against the folder this script is started from.\n";
  o += fmt::format("TAILOR_WORK={}\n",
                   folder_assignment(p.layout.work_dir_given, p.layout.work_dir));
  if (p.layout.source_dir_given.empty())
    o += "TAILOR_SOURCE=\"$TAILOR_WORK/pytorch\"\n";
  else
    o += fmt::format("TAILOR_SOURCE={}\n",
                     folder_assignment(p.layout.source_dir_given, p.layout.source_dir));
  o += "\n";
  o += "tailor_fail() { echo \"tailor: error: $*\" >&2; }\n\n";
  o += "tailor_build() {\n";
  o += "  set -euo pipefail\n";
  o += fmt::format("  if [ \"$(uname -m)\" != {} ]; then\n", shell_quote(p.platform));
  o += fmt::format(
      "    tailor_fail \"this build must run on an {} host (PyTorch cannot cross-compile)\"\n",
      p.platform);
  o += "    return 1\n  fi\n";
  if (!p.for_this_host())
    o += build_host_checks(p);
  else if (p.cuda)
    o += fmt::format(
        "  if [ ! -x \"$CUDACXX\" ]; then tailor_fail \"nvcc not found at $CUDACXX (CUDA {})\"; "
        "return 1; fi\n",
        p.cuda_text());
  o += "  mkdir -p \"$TAILOR_WORK\"\n";
  for (const auto& s : p.steps) {
    o += fmt::format("  # {}\n", s.title);
    std::string cmd = quote_all(p, s.argv);
    if (s.uses_plan_env) cmd += " 2>&1 | tee \"$TAILOR_WORK/build.log\"";
    if (!s.cwd.empty())
      o += fmt::format("  (cd {} && {})\n", script_word(p, s.cwd), cmd);
    else
      o += fmt::format("  {}\n", cmd);
  }
  o += fmt::format("  echo \"wheel(s) in $TAILOR_SOURCE/dist; official-style name: {}\"\n",
                   p.wheel_name);
  o += "}\n\n";
  o += "# Executed (not sourced): build.\n";
  o += "if [ \"${BASH_SOURCE[0]}\" = \"$0\" ]; then\n  tailor_build\nfi\n";
  return o;
}

}  // namespace tailor::plan
