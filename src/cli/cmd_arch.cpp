// `tailor arch SPEC... [--nvcc VERSION] [--json]`: any spelling of CUDA targets -> the
// canonical set, every build system's spelling, where it runs and what can build it.
// With --nvcc the set is checked against that CUDA version's table and a target it
// cannot produce fails the command (exit 1); without it, the installed nvcc (if any) is
// asked and problems are only reported.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cuda/arch_report.h"
#include "cuda/arch_spec.h"
#include "cuda/gpu_platform.h"
#include "cuda/target_request.h"
#include "probe/isa_levels.h"
#include "probe/probe.h"
#include "util/process.h"
#include "util/strings.h"
#include "util/terminal_style.h"

namespace tailor::cli {
namespace {

struct ArchOptions {
  std::vector<std::string> specs;
  std::string nvcc_version;
  bool json = false;
};

std::string join_ranges(const std::vector<cuda::CudaVersion>& versions) {
  // Neighbours in the table read better as a range: "11.8-12.9", "12.8, 12.9".
  std::vector<std::string> out;
  const auto all = cuda::known_cuda_versions();
  auto pos = [&](const cuda::CudaVersion& v) {
    return std::find(all.begin(), all.end(), v) - all.begin();
  };
  size_t i = 0;
  while (i < versions.size()) {
    size_t j = i;
    while (j + 1 < versions.size() && pos(versions[j + 1]) == pos(versions[j]) + 1) ++j;
    out.push_back(j > i + 1 ? versions[i].to_string() + "-" + versions[j].to_string()
                            : versions[i].to_string());
    if (j == i + 1) out.push_back(versions[j].to_string());
    i = j + 1;
  }
  return join(out, ", ");
}

/// "platform aarch64 (g5g.xlarge: instance g5g; CPU neoverse-n1, Neoverse-N1, as in AWS
/// Graviton2 (c6g, m6g, g5g), Ampere Altra)" when a name in the spec implies a platform.
std::string platform_line(const std::vector<std::string>& specs) {
  auto implied = cuda::implied_platform(specs);
  if (!implied || !*implied) return "";
  const cuda::ImpliedPlatform& ip = **implied;
  std::vector<std::string> from;
  for (const auto& h : ip.hints) from.push_back(h.name + ": " + h.what);
  std::string cpu;
  if (!ip.cpu_target.empty()) {
    cpu = "; CPU " + ip.cpu_target;
    for (const auto& core : probe::isa_level_table().aarch64_cores)
      if (to_lower(core.name) == to_lower(ip.cpu_target) && !core.seen_in.empty())
        cpu += fmt::format(" ({}, as in {})", core.name, core.seen_in);
  }
  return fmt::format("platform {} (only there: {}{})\n", ip.platform, join(from, ", "), cpu);
}

/// Colour marks how a CC runs the set (as inspect's PASS/FAIL): runs natively or on
/// compatible SASS green, only through PTX JIT yellow, not at all red.
Paint run_mode_paint(cuda::RunMode mode) {
  switch (mode) {
    case cuda::RunMode::native:
    case cuda::RunMode::compatible_sass:
      return Paint::green;
    case cuda::RunMode::ptx_jit:
      return Paint::yellow;
    default:
      return Paint::red;
  }
}

std::string render_text(const cuda::ArchReport& r, const std::vector<std::string>& specs,
                        const std::vector<std::string>& notes) {
  std::string out =
      fmt::format("{}  {}\n", paint("targets", Paint::bold), join(r.targets.names(), " "));
  out += platform_line(specs);
  for (const auto& n : notes) out += fmt::format("{} {}\n", paint("note:", Paint::yellow), n);
  out += "\n";
  for (const auto& s : r.spellings) {
    std::string label =
        s.variable == "COMPUTE_CAPABILITY" ? "COMPUTE_CAPABILITY (bnb)" : s.variable;
    out += fmt::format("{:<26} {}\n", label, s.text.empty() ? "-" : s.text);
    for (const auto& l : s.losses)
      out += fmt::format("{:<26}   {} {}\n", "", paint("note:", Paint::yellow), l);
  }
  out += "\n" + paint("runs on", Paint::bold) + "\n";
  out += fmt::format("  {:<6}{:<17}{:<14}{}\n", "CC", "how", "via", "GPUs");
  std::vector<std::string> not_on;
  for (const auto& d : r.devices) {
    if (d.coverage.mode == cuda::RunMode::none) {
      not_on.push_back(d.capability.cc.str());
      continue;
    }
    std::string gpus = join(d.gpu_examples, ", ");
    if (d.capability.tegra) gpus += gpus.empty() ? "(Tegra)" : " (Tegra)";
    // Padded first, painted after: escape sequences have no width on a terminal.
    out += fmt::format("  {:<6}{}{:<14}{}\n", d.capability.cc.str(),
                       paint(fmt::format("{:<17}", cuda::run_mode_label(d.coverage.mode)),
                             run_mode_paint(d.coverage.mode)),
                       d.coverage.via ? d.coverage.via->name() : "", gpus);
  }
  if (!not_on.empty())
    out += fmt::format("  {} {}\n", paint("not on:", Paint::red), join(not_on, " "));
  out += "\nbuilt by CUDA ";
  out += r.cuda_versions_that_build.empty()
             ? "none of " + join(cuda::to_strings(cuda::known_cuda_versions()), ", ")
             : join_ranges(r.cuda_versions_that_build);
  out += " (table)\n";
  if (r.nvcc_check) {
    const auto& c = *r.nvcc_check;
    std::string where = c.path.empty() ? "table" : c.path + ", " + c.nvcc.source;
    out += fmt::format("checked against CUDA {} ({}): {}\n", c.nvcc.cuda_version.to_string(), where,
                       c.problems.empty() ? paint("can build every target", Paint::green) : "");
    for (const auto& p : c.problems) out += "  " + paint("FAIL", Paint::red) + " " + p + "\n";
  } else {
    out += "no nvcc found on PATH; pass --nvcc VERSION to check against a CUDA version\n";
  }
  return out;
}

nlohmann::json render_json(const cuda::ArchReport& r, const std::vector<std::string>& notes) {
  nlohmann::json j;
  j["targets"] = r.targets.names();
  j["notes"] = notes;
  nlohmann::json losses = nlohmann::json::object();
  for (const auto& s : r.spellings) {
    switch (s.consumer) {
      case cuda::Consumer::torch:
        j["torch_cuda_arch_list"] = s.text;
        break;
      case cuda::Consumer::cmake:
        j["cmake_cuda_architectures"] = s.text;
        break;
      case cuda::Consumer::nvcc:
        j["gencode"] = cuda::render_gencode_flags(r.targets);
        break;
      case cuda::Consumer::flash_attn:
        j["flash_attn_cuda_archs"] = s.text;
        break;
      case cuda::Consumer::bitsandbytes:
        j["bnb_compute_capability"] = s.text;
        break;
    }
    if (!s.losses.empty()) losses[s.variable] = s.losses;
  }
  j["spelling_notes"] = losses;
  j["runs_on"] = nlohmann::json::array();
  j["not_on"] = nlohmann::json::array();
  for (const auto& d : r.devices) {
    if (d.coverage.mode == cuda::RunMode::none) {
      j["not_on"].push_back(d.capability.cc.str());
      continue;
    }
    j["runs_on"].push_back({{"cc", d.capability.cc.str()},
                            {"mode", cuda::run_mode_key(d.coverage.mode)},
                            {"via", d.coverage.via->name()},
                            {"tegra", d.capability.tegra},
                            {"gpus", d.gpu_examples}});
  }
  j["cuda_versions"] = cuda::to_strings(r.cuda_versions_that_build);
  if (r.nvcc_check) {
    const auto& c = *r.nvcc_check;
    j["nvcc"] = {{"cuda_version", c.nvcc.cuda_version.to_string()},
                 {"source", c.nvcc.source},
                 {"path", c.path},
                 {"problems", c.problems}};
  } else {
    j["nvcc"] = nullptr;
  }
  return j;
}

int run_arch(const ArchOptions& o) {
  cuda::ArchSpecContext ctx;
  std::optional<cuda::NvccCheck> check;
  if (!o.nvcc_version.empty()) {
    auto caps = cuda::nvcc_capabilities_from_table(o.nvcc_version);
    if (!caps) return report_error("--nvcc: " + caps.error().message);
    check = cuda::NvccCheck{*caps, "", {}};
  } else if (std::string nvcc = find_in_path("nvcc"); !nvcc.empty()) {
    SystemCommandRunner runner;
    if (auto caps = cuda::nvcc_capabilities_from_nvcc(nvcc, runner))
      check = cuda::NvccCheck{*caps, nvcc, {}};
  }
  if (check) ctx.nvcc = check->nvcc;

  // The specs are positionals: the resolution every command uses, with no flag to name
  // and no default (CLI11 requires one spec). `native` probes this machine's GPUs.
  cuda::TargetRequest request;
  request.arch = o.specs;
  request.arch_flag = "";
  request.gpu_flag = "";
  request.prefix_errors = false;
  std::optional<std::vector<cuda::DetectedGpu>> detected;
  request.detect = [&detected] {
    if (!detected) detected = probe::gpu_detector()();
    return *detected;
  };
  auto targets = cuda::resolve_target_request(request, ctx);
  if (!targets) return report_error(targets.error().message);
  // The notes read the specs again: `native` is what the resolution found.
  if (detected)
    for (const auto& g : *detected)
      if (g.cc) ctx.native_devices.push_back(*g.cc);
  auto report = cuda::make_arch_report(targets->targets, check);
  const auto notes = cuda::arch_spec_notes(o.specs, ctx);
  if (o.json)
    std::printf("%s\n", with_schema(render_json(report, notes), "arch").dump(2).c_str());
  else
    std::fputs(render_text(report, o.specs, notes).c_str(), stdout);
  // The nvcc checked against (--nvcc, else the one on PATH) is the one a build would use:
  // a target it cannot produce is the same failure either way, exit 1 with the reason.
  if (report.nvcc_check && !report.nvcc_check->problems.empty()) {
    for (const auto& p : report.nvcc_check->problems) report_error(p);
    return k_exit_failed;
  }
  return k_exit_ok;
}

}  // namespace

void setup_arch(CLI::App& sub, RunFn& run) {
  auto opts = std::make_shared<ArchOptions>();
  sub.add_option("spec", opts->specs,
                 "Targets in any spelling: 8.0;8.6+PTX, sm_90a, 80-real, Hopper, T4G, g5g.xlarge, "
                 "-gencode arch=compute_90,code=sm_90, all, native")
      ->required();
  sub.add_option("--nvcc", opts->nvcc_version,
                 "Check against this CUDA version's nvcc (e.g. 12.8), from tailor's table");
  sub.add_flag("--json", opts->json, "Print the result as JSON");
  sub.callback([&run, opts] { run = [opts] { return run_arch(*opts); }; });
}

}  // namespace tailor::cli
