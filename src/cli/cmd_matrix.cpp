// `tailor matrix [--config tailor.toml] [list|plan|build] [--emit github-actions|nix|flox]`:
// expands the [matrix] of a tailor.toml into named variants, lists them, plans or builds
// them in turn with a summary, or writes a GitHub Actions workflow, a Nix flake or a Flox
// environment's Nix expression builds.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "plan/matrix.h"
#include "plan/matrix_nix.h"
#include "plan/torch_plan_render.h"
#include "plan/torch_platform.h"
#include "probe/probe.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/text_escape.h"
#include "workflow/torch_build.h"

namespace tailor::cli {

namespace {
struct MatrixOptions {
  std::string config = "tailor.toml";
  std::string action = "list";
  std::string emit;
  std::string emit_dir = ".";
  std::string out = "dist";
  std::string work_dir = "tailor-work";
  bool no_venv = false;
  bool json = false;
  std::optional<int> jobs;
};

// Rows of cells printed as columns, each as wide as its widest cell.
std::string columns(const std::vector<std::vector<std::string>>& rows, const char* indent) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t i = 0; i < r.size(); ++i)
      line += i + 1 == r.size() ? r[i] : fmt::format("{:<{}}  ", r[i], width[i]);
    out += line + "\n";
  }
  return out;
}

std::string opt(const std::optional<std::string>& s, const char* dflt = "-") {
  return s ? *s : dflt;
}

// The flake (nix) or Flox environment (flox) files under --emit-dir: every file is
// rendered first, so a problem writes nothing; each is then written beside its place and
// renamed over it.
int emit_nix(const MatrixOptions& o, const std::vector<plan::TorchVariant>& variants) {
  const auto plans = plan::nix_variant_plans(variants);
  const auto emit = o.emit == "nix" ? plan::NixEmit::flake : plan::NixEmit::flox;
  auto files = plan::render_nix_files(plans, emit);
  if (!files) return report_error(files.error().message);
  std::error_code ec;
  for (const auto& f : *files) {
    std::filesystem::path path = std::filesystem::path(o.emit_dir) / f.path;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      return report_error(
          fmt::format("{}: {}", terminal_safe(path.parent_path().string()), ec.message()));
    if (auto written = write_file_atomic(path.string(), f.text); !written)
      return report_error(written.error().message);
    std::printf("%s\n", terminal_safe(path.string()).c_str());
  }
  // Variants the pinned nixpkgs cannot build as planned: said before the next command.
  if (emit == plan::NixEmit::flake)
    for (const auto& note : plan::nixpkgs_pin(plans).notes)
      std::fprintf(stderr, "note: %s\n", terminal_safe(note).c_str());
  // What to run with them: the first variant's build.
  if (auto next = plan::nix_next_command(plans, emit, o.emit_dir); !next.empty())
    std::fprintf(stderr, "next: %s\n", terminal_safe(next).c_str());
  return k_exit_ok;
}

// `matrix list`: the variants as tailor.toml gives them, a row each (or JSON).
int list_variants(const MatrixOptions& o, const std::vector<plan::TorchVariant>& variants) {
  if (o.json) {
    nlohmann::json j{{"config", o.config}};
    j["variants"] = nlohmann::json::array();
    for (const auto& v : variants) {
      auto platform = plan::variant_platform(v.platform, v.arch);
      j["variants"].push_back(
          {{"name", v.name},
           {"torch", v.torch ? nlohmann::json(*v.torch) : nlohmann::json(nullptr)},
           {"cuda", v.cpu_only.value_or(false) ? nlohmann::json("cpu")
                    : v.cuda                   ? nlohmann::json(v.cuda->to_string())
                                               : nlohmann::json(nullptr)},
           {"arch", v.arch},
           {"cpu", v.cpu_target ? nlohmann::json(*v.cpu_target) : nlohmann::json(nullptr)},
           {"python", v.python ? nlohmann::json(*v.python) : nlohmann::json(nullptr)},
           {"platform",
            platform && *platform ? nlohmann::json(**platform) : nlohmann::json("host")}});
    }
    std::printf("%s\n", with_schema(j, "matrix").dump(2).c_str());
    return k_exit_ok;
  }
  std::printf("%-28s %-8s %-6s %-16s %-12s %-7s %s\n", "VARIANT", "TORCH", "CUDA", "GPU", "CPU",
              "PYTHON", "PLATFORM");
  for (const auto& v : variants) {
    // The platform asked for, or implied by the GPUs (checked by config_variants).
    auto platform = plan::variant_platform(v.platform, v.arch);
    std::string shown = platform && *platform ? **platform : "host";
    std::printf(
        "%-28s %-8s %-6s %-16s %-12s %-7s %s\n", v.name.c_str(), opt(v.torch).c_str(),
        v.cpu_only.value_or(false) ? "cpu"
        : v.cuda                   ? v.cuda->to_string().c_str()
                                   : "-",
        v.arch.empty() ? (v.cpu_only.value_or(false) ? "none" : "-") : join(v.arch, ";").c_str(),
        opt(v.cpu_target).c_str(), opt(v.python).c_str(), shown.c_str());
  }
  return k_exit_ok;
}

int run_matrix(const MatrixOptions& o) {
  // The loader reads with a bound (cache/tailor_toml.h): a FIFO, a device or a huge file is
  // one error line, not a hang or an exhausted memory.
  auto config = plan::load_tailor_config(o.config);
  if (!config) return report_error(config.error().message);
  auto variants = plan::config_variants(*config);
  if (!variants) return report_error(variants.error().message);
  if (variants->empty())
    return report_error(o.config + ": no variants (add [variant.NAME] tables or a [matrix])");
  for (auto& v : *variants)
    if (auto filled = fill_version_from_source(v); !filled)
      return report_error(filled.error().message);
  if (o.emit == "nix" || o.emit == "flox") return emit_nix(o, *variants);
  if (!o.emit.empty()) {
    if (o.emit != "github-actions") return report_error("--emit: github-actions, nix or flox");
    auto workflow = plan::render_github_actions(*config, *variants);
    if (!workflow) return report_error(workflow.error().message);
    std::fputs(workflow->text.c_str(), stdout);
    // What does not fit (a hosted job's limit, its disk) goes to stderr: the workflow is still
    // written.
    for (const auto& note : workflow->notes)
      std::fprintf(stderr, "tailor: note: %s\n", terminal_safe(note).c_str());
    return k_exit_ok;
  }
  if (o.action == "list") return list_variants(o, *variants);
  if (o.action == "build")
    if (auto usable = check_out_dir(o.out); !usable) return report_error(usable.error().message);
  if (o.jobs && *o.jobs < 1)
    return report_error(fmt::format("--jobs {}: must be at least 1", *o.jobs));
  probe::ProbeOptions popts;
  probe::HostReport host = probe::probe_host(popts);
  int worst = k_exit_ok;
  std::vector<std::vector<std::string>> summary;
  nlohmann::json results = nlohmann::json::array();
  for (const auto& v : *variants) {
    plan::ResolveOptions ropts;
    ropts.work_dir = o.work_dir + "/" + v.name;
    ropts.jobs = o.jobs;
    if (o.action == "plan") {
      plan::TorchPlan p = plan::resolve_torch_plan(v, host, ropts);
      if (o.json) {
        nlohmann::json r = plan::plan_to_json(p);
        r["variant"] = v.name;
        results.push_back(std::move(r));
        worst = std::max(worst, p.has_errors() ? p.exit_code() : 0);
        continue;
      }
      std::printf("== %s\n", v.name.c_str());
      if (p.has_errors()) {
        std::fputs(plan::render_problems(p).c_str(), stdout);
        worst = std::max(worst, p.exit_code());
        summary.push_back({v.name, fmt::format("problems: {}", p.problems.size())});
        continue;
      }
      std::fputs(plan::render_plan_text(p).c_str(), stdout);
      summary.push_back({v.name, p.wheel_name, fmt::format("~{:.0f} MiB", p.estimate.wheel_mib),
                         fmt::format("~{:.1f} h", p.estimate.build_hours),
                         fmt::format("{} jobs", p.jobs)});
    } else if (o.action == "build") {
      ropts.purpose = plan::PlanPurpose::build_here;
      workflow::TorchBuildOptions bopts;
      bopts.out_dir = o.out + "/" + v.name;
      bopts.no_venv = o.no_venv;
      std::printf("== %s\n", v.name.c_str());
      auto result = workflow::build_torch(v, host, ropts, bopts);
      int code = result.exit_code;
      worst = std::max(worst, code);
      summary.push_back(
          {v.name, code == 0 ? "ok" : "FAILED", code == 0 ? result.wheel_path : result.message});
      results.push_back({{"variant", v.name},
                         {"ok", code == 0},
                         {"exit_code", code},
                         {"wheel", result.wheel_path},
                         {"message", result.message}});
    } else {
      return report_error("matrix: unknown action '" + o.action + "' (list, plan, build)");
    }
  }
  if (o.json) {
    nlohmann::json j{{"config", o.config}, {"action", o.action}, {"variants", results}};
    std::printf("%s\n", with_schema(j, "matrix").dump(2).c_str());
    return worst;
  }
  std::printf("\nSummary (%zu variants):\n", variants->size());
  std::fputs(columns(summary, "  ").c_str(), stdout);
  return worst;
}
}  // namespace

void setup_matrix(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<MatrixOptions>();
  sub.add_option("action", o->action, "list (default), plan or build")
      ->check(CLI::IsMember({"list", "plan", "build"}));
  sub.add_option("--config", o->config, "the tailor.toml (default ./tailor.toml)");
  sub.add_option("--emit", o->emit,
                 "github-actions: a workflow with one job per variant (runners and timeouts: "
                 "[ci.github]); nix: a "
                 "flake (flake.nix, default.nix, nix/) with one package per variant; flox: a Flox "
                 "environment's "
                 "Nix expression builds (.flox/)")
      ->check(CLI::IsMember({"github-actions", "nix", "flox"}));
  sub.add_option("--emit-dir", o->emit_dir,
                 "nix, flox: the folder the files go to (default: the current folder)");
  sub.add_option("--out", o->out, "output folder for built wheels (one subfolder per variant)");
  sub.add_option("--work-dir", o->work_dir, "work folder (one subfolder per variant)");
  sub.add_option("--jobs", o->jobs,
                 "parallel compile jobs per build, MAX_JOBS (default: from usable memory)");
  sub.add_flag("--no-venv", o->no_venv,
               "build: use each variant's Python as is (no venv, no pip install)");
  sub.add_flag(
      "--json", o->json,
      "Machine-readable output: the variants (list), their plans (plan) or results (build)");
  sub.callback([&run, o] { run = [o] { return run_matrix(*o); }; });
}

}  // namespace tailor::cli
