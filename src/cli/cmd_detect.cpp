// `tailor detect [--json] [--python PATH]... [--build-dir DIR] [--no-python]`: what this
// machine is. Probing never fails: what is missing shows up as a note, exit 0.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "probe/cxx_runtime.h"
#include "probe/probe.h"
#include "util/process.h"
#include "util/strings.h"
#include "workpath/fixed_path.h"

namespace tailor::cli {
namespace {

struct DetectOptions {
  bool json = false;
  bool no_python = false;
  std::string build_dir = ".";
  std::vector<std::string> pythons;
  int python_timeout_s = 30;
};

void row(std::string& out, std::string_view key, std::string_view value) {
  out += fmt::format("  {:<14}{}\n", key, value);
}

std::string or_none(const std::string& s) { return s.empty() ? "-" : s; }

/// Which route builds take to their fixed work path here, and why not the better ones.
struct FixedPathFacts {
  workpath::FixedPathChoice choice;
  std::string error;  ///< a TAILOR_FIXED_PATH_ROUTE tailor does not know
};

FixedPathFacts fixed_path_facts(CommandRunner& runner) {
  FixedPathFacts f;
  auto forced = workpath::parse_fixed_path_route(
      std::getenv(std::string(workpath::k_fixed_path_route_variable).c_str()));
  if (!forced) {
    f.error = forced.error().message;
    return f;
  }
  f.choice = workpath::probe_fixed_path_route({workpath::self_executable(), find_in_path("bwrap")},
                                              *forced, runner);
  return f;
}

nlohmann::json fixed_path_json(const FixedPathFacts& f) {
  const workpath::FixedPathRoute route = f.choice.route();
  nlohmann::json j{
      {"route", f.error.empty() ? nlohmann::json(workpath::fixed_path_route_name(route))
                                : nlohmann::json(nullptr)},
      {"fixed_root", workpath::k_fixed_root},
      {"detail", f.error.empty() ? (route == workpath::FixedPathRoute::none
                                        ? workpath::no_fixed_path_warning(f.choice)
                                        : workpath::describe_fixed_path_route(route))
                                 : f.error},
      {"forced",
       f.choice.forced.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.choice.forced)}};
  j["refused"] = nlohmann::json::array();
  for (const auto& [r, why] : f.choice.refused)
    j["refused"].push_back({{"route", workpath::fixed_path_route_name(r)}, {"why", why}});
  return j;
}

// What torch's cpp_extension links with ($CXX, else c++): its C++ runtime must be torch's
// libstdc++.so.6, not a static copy (an extension would crash on torch's exceptions). A
// static runtime: `tailor build` takes the system pair that links libstdc++.so.6 when there
// is one (what it will do is said, not a problem); else the user must set CXX.
std::string cxx_runtime_text(const probe::CxxRuntime& rt,
                             const std::optional<probe::RuntimeAlternative>& instead) {
  if (!rt.checked) return "not checked: " + rt.detail;
  if (rt.dynamic) return rt.detail;
  if (instead)
    return fmt::format(
        "{}; tailor build uses {} and {} instead ({}), as torch needs; set CXX to choose another",
        rt.detail, instead->cxx, instead->cc, instead->runtime.detail);
  return "PROBLEM: " + rt.detail +
         "; extensions linked so crash on torch's first exception: set CXX to a g++ that links "
         "libstdc++.so.6";
}

std::string render_text(const probe::HostReport& r, const probe::CxxRuntime& rt,
                        const std::optional<probe::RuntimeAlternative>& instead,
                        const FixedPathFacts& fp) {
  std::string out;
  out += "host\n";
  row(out, "os",
      fmt::format("{} (kernel {}, {}, glibc {})", or_none(r.os.name), or_none(r.os.kernel),
                  or_none(r.os.arch), or_none(r.os.glibc)));
  row(out, "cpu",
      fmt::format("{}, {} cores / {} threads", or_none(r.cpu.model), r.cpu.physical_cores,
                  r.cpu.logical_cores));
  if (!r.cpu.cores_limited_by.empty())
    row(out, "usable cpus",
        fmt::format("{} of {} ({}): jobs are counted against these", r.cpu.build_cores(),
                    r.cpu.logical_cores, r.cpu.cores_limited_by));
  row(out, "isa level", or_none(r.cpu.isa_level));
  if (r.cpu.arch == "aarch64") {
    std::string core = r.cpu.cores.empty() ? "unknown (no CPU part in /proc/cpuinfo, no MIDR)"
                                           : join(r.cpu.cores, " + ");
    if (!r.cpu.midr.empty()) core += " [" + r.cpu.midr + "]";
    row(out, "arm core", core);
    std::string cls = r.cpu.neoverse_class.empty() ? "none (lacks a feature of Neoverse N1)"
                                                   : "Neoverse " + r.cpu.neoverse_class;
    if (!r.cpu.seen_in.empty()) cls += "; as in " + r.cpu.seen_in;
    row(out, "class", cls);
  }
  if (!r.cpu.features.empty())
    row(out, "features",
        fmt::format("{} (from {})", join(r.cpu.features, " "), or_none(r.cpu.features_source)));
  std::string mem = fmt::format("{} usable ({}), {} total", human_bytes(r.memory.usable),
                                r.memory.limited_by, human_bytes(r.memory.total));
  if (r.memory.cgroup_limit)
    mem += fmt::format(", cgroup limit {}", human_bytes(r.memory.cgroup_limit));
  row(out, "memory", mem);
  row(out, "swap",
      fmt::format("{} free of {}", human_bytes(r.memory.swap_free),
                  human_bytes(r.memory.swap_total)));
  row(out, "disk",
      fmt::format("{} free of {} at {}", human_bytes(r.disk.free_bytes),
                  human_bytes(r.disk.total_bytes), r.disk.path));

  out += "gpus\n";
  if (r.gpus.empty()) row(out, "-", "no GPU");
  for (const auto& g : r.gpus)
    row(out, fmt::format("[{}]", g.index),
        fmt::format("{}, CC {}, {}", g.name,
                    or_none(g.compute_capability ? g.compute_capability->str() : ""),
                    human_bytes(g.memory_bytes)));
  if (r.driver)
    row(out, "driver",
        fmt::format("{} (CUDA {}, via {})", r.driver->version,
                    or_none(r.driver->cuda_version ? r.driver->cuda_version->to_string() : ""),
                    r.driver->source));

  out += "cuda toolkits\n";
  if (r.cuda_toolkits.empty()) row(out, "-", "none found");
  for (const auto& t : r.cuda_toolkits) {
    row(out, or_none(t.version), t.root);
    row(out, "",
        fmt::format("cuDNN {}, NCCL {}, gcc <= {}, clang <= {}", or_none(t.cudnn_version),
                    or_none(t.nccl_version),
                    t.max_gcc_major ? std::to_string(*t.max_gcc_major) : "?",
                    t.max_clang_major ? std::to_string(*t.max_clang_major) : "?"));
    if (!t.accepted_host_compilers.empty())
      row(out, "", "accepts " + join(t.accepted_host_compilers, ", "));
  }

  out += "compilers\n";
  if (r.compilers.empty()) row(out, "-", "none found");
  for (const auto& c : r.compilers)
    row(out, std::string(probe::compiler_kind_name(c.kind)) + " " + c.version, c.path);
  row(out, "C++ runtime", cxx_runtime_text(rt, instead));

  out += "pythons\n";
  if (r.pythons.empty()) row(out, "-", "none probed");
  for (const auto& p : r.pythons) {
    std::string torch;
    if (p.torch) {
      torch = "torch " + p.torch->version;
      torch +=
          p.torch->cuda_version ? " (CUDA " + p.torch->cuda_version->to_string() + ")" : " (CPU)";
      if (!p.torch->arch_list.empty()) torch += " " + join(p.torch->arch_list, " ");
      if (p.torch->cxx11_abi) torch += *p.torch->cxx11_abi ? ", cxx11 ABI" : ", pre-cxx11 ABI";
    } else {
      torch = "no torch" + (p.torch_error.empty() ? "" : " (" + p.torch_error + ")");
    }
    row(out, or_none(p.version), p.path);
    row(out, "", torch);
  }

  out += "tools\n";
  for (const auto& t : r.tools)
    row(out, t.name,
        fmt::format("{} {}{}", or_none(t.version), t.path,
                    t.jobserver_client ? " (jobserver client)" : ""));
  out += "fixed work path\n";
  if (!fp.error.empty()) {
    row(out, "route", "? " + fp.error);
  } else {
    const workpath::FixedPathRoute route = fp.choice.route();
    row(out, "route",
        fmt::format("{}{}: {}", workpath::fixed_path_route_name(route),
                    fp.choice.forced.empty() ? "" : " (" + fp.choice.forced + ")",
                    route == workpath::FixedPathRoute::none
                        ? workpath::no_fixed_path_warning(fp.choice)
                        : workpath::describe_fixed_path_route(route)));
    if (route != workpath::FixedPathRoute::none)
      for (const auto& [r, why] : fp.choice.refused)
        row(out, "", fmt::format("not {}: {}", workpath::fixed_path_route_name(r), why));
  }
  if (!r.notes.empty()) {
    out += "notes\n";
    for (const auto& n : r.notes) out += "  " + n + "\n";
  }
  return out;
}

int run_detect(const DetectOptions& opts) {
  probe::ProbeOptions po;
  po.build_dir = opts.build_dir;
  po.pythons = opts.pythons;
  po.probe_pythons = !opts.no_python;
  po.python_timeout = std::chrono::seconds(opts.python_timeout_s);
  auto report = probe::probe_host(po);
  SystemCommandRunner runner;
  std::error_code ec;
  const probe::CxxRuntime rt =
      probe::check_cxx_runtime(probe::extension_cxx(std::getenv("CXX")),
                               std::filesystem::temp_directory_path(ec).string(), runner);
  const auto instead = probe::dynamic_runtime_alternative(
      rt, std::filesystem::temp_directory_path(ec).string(), runner);
  const FixedPathFacts fixed_path = fixed_path_facts(runner);
  // Rendered whole, then written once: no partial output on a late failure.
  std::string text;
  if (opts.json) {
    nlohmann::json j = probe::to_json(report);
    j["cxx_runtime"] = {{"compiler", rt.compiler},
                        {"checked", rt.checked},
                        {"dynamic", rt.dynamic},
                        {"runtime", rt.runtime},
                        {"detail", rt.detail}};
    if (instead) j["cxx_runtime"]["build_uses"] = {{"cxx", instead->cxx}, {"cc", instead->cc}};
    j["fixed_path"] = fixed_path_json(fixed_path);
    text = with_schema(j, "detect").dump(2) + "\n";
  } else {
    text = render_text(report, rt, instead, fixed_path);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return k_exit_ok;
}

}  // namespace

void setup_detect(CLI::App& sub, RunFn& run) {
  auto opts = std::make_shared<DetectOptions>();
  sub.add_flag("--json", opts->json, "Print the report as JSON");
  sub.add_option("--python", opts->pythons, "Also probe this Python interpreter (repeatable)");
  sub.add_option("--build-dir", opts->build_dir, "Folder whose free disk space is reported")
      ->check(CLI::ExistingDirectory);
  sub.add_option("--python-timeout", opts->python_timeout_s,
                 "Seconds each interpreter may take to import torch")
      ->check(CLI::Range(1, 3600));
  sub.add_flag("--no-python", opts->no_python, "Skip probing Python interpreters and torch");
  sub.callback([&run, opts] { run = [opts] { return run_detect(*opts); }; });
}

}  // namespace tailor::cli
