// `tailor stack [PACKAGE[==VER]...] [-r FILE] [--gpu SPEC | --arch SPEC] ...`: the
// compatibility matrix of a package stack for a target machine, measured from the wheels
// (pip resolves, inspect judges), with a lock, an install script and --install.
// Exit 0 when every package can be had (prebuilt or built), 1 when one cannot, when what
// one runs on is unknown (outcome "unknown": tailor's data does not say and nothing was
// inspected; the row names the command that decides it), or when the install's
// verification failed, with one stderr line saying which; 2 for bad input, 128+signal when
// interrupted.
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "builder/progress_display.h"
#include "cli/commands.h"
#include "stack/stack.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/process.h"
#include "util/strings.h"
#include "util/terminal_style.h"
#include "util/text_escape.h"
#include "util/user_file.h"
#include "workflow/stack_build.h"

namespace fs = std::filesystem;

namespace tailor::cli {
namespace {

struct StackArgs {
  stack::StackRequest request;
  std::string lock, script, install, from_lock, out = "dist", progress = "auto";
  bool json = false, build = false, no_index = false;
};

std::string self_path() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tailor") : p.string();
}

Paint outcome_paint(stack::Outcome o) {
  switch (o) {
    case stack::Outcome::prebuilt:
    case stack::Outcome::installed:
      return Paint::green;
    case stack::Outcome::build:
      return Paint::yellow;
    case stack::Outcome::unsupported:
      return Paint::red;
    case stack::Outcome::unknown:
      return Paint::yellow;
  }
  return Paint::bold;
}

std::string render_text(const stack::StackResult& r) {
  std::string out =
      fmt::format("{} {} Python {} (glibc {}), {}\n", paint("target:", Paint::bold),
                  r.target.platform, r.target.python, r.target.glibc, r.target.gpu_label());
  if (!r.torch.version.empty())
    out += fmt::format("{} {} ({}; CUDA {})\n", paint("torch: ", Paint::bold), r.torch.version,
                       r.torch.source, r.torch.cuda ? r.torch.cuda->to_string() : "none");
  struct Line {
    std::string name, version, prebuilt, covers, build, outcome, reason;
    stack::Outcome o;
  };
  std::vector<Line> lines;
  size_t wn = 7, wv = 7;
  for (const auto& row : r.rows) {
    Line l{terminal_safe(row.name),
           terminal_safe(row.version),
           row.wheel ? "yes" : "no",
           row.covers,
           row.buildable,
           std::string(stack::outcome_key(row.outcome)),
           terminal_safe(row.reason),
           row.outcome};
    wn = std::max(wn, std::min<size_t>(l.name.size(), 40));
    wv = std::max(wv, std::min<size_t>(l.version.size(), 24));
    lines.push_back(std::move(l));
  }
  out += fmt::format("\n{:<{}}  {:<{}}  {:<8}  {:<6}  {:<6}  {:<11}  {}\n", "package", wn,
                     "version", wv, "prebuilt", "covers", "build", "outcome", "reason");
  for (const auto& l : lines)
    out += fmt::format("{:<{}}  {:<{}}  {:<8}  {:<6}  {:<6}  {}  {}\n", l.name, wn, l.version, wv,
                       l.prebuilt, l.covers, l.build,
                       paint(fmt::format("{:<11}", l.outcome), outcome_paint(l.o)), l.reason);
  size_t prebuilt = 0, build = 0, unsupported = 0, unknown = 0;
  for (const auto& row : r.rows) {
    if (row.outcome == stack::Outcome::prebuilt || row.outcome == stack::Outcome::installed)
      ++prebuilt;
    if (row.outcome == stack::Outcome::build) ++build;
    if (row.outcome == stack::Outcome::unsupported) ++unsupported;
    if (row.outcome == stack::Outcome::unknown) ++unknown;
  }
  out += fmt::format("\n{} prebuilt or installed, {} to build, {}{} unsupported", prebuilt, build,
                     unknown ? fmt::format("{} unknown, ", unknown) : "", unsupported);
  if (r.resolve_seconds > 0)
    out += fmt::format(
        " ({} in {:.1f} s, inspected in {:.1f} s; {} downloaded, {} from the cache{})",
        r.resolution_reused ? "stored resolution checked" : "resolved", r.resolve_seconds,
        r.inspect_seconds, r.downloads, r.cache_hits,
        r.inspections_reused ? fmt::format(", {} inspected before", r.inspections_reused) : "");
  out += "\n";
  for (const auto& n : r.notes)
    out += fmt::format("{} {}\n", paint("note:", Paint::yellow), terminal_safe(n));
  return out;
}

nlohmann::json render_json(const stack::StackResult& r, const stack::InstallReport* install) {
  auto j = nlohmann::json::parse(stack::render_lock(r));
  j.erase("schema");
  j["ok"] = r.ok();
  j["pip_command"] = r.pip_command;
  j["seconds"] = {{"resolve", r.resolve_seconds}, {"inspect", r.inspect_seconds}};
  j["downloads"] = r.downloads;
  j["cache_hits"] = r.cache_hits;
  j["resolution_reused"] = r.resolution_reused;
  j["inspections_reused"] = r.inspections_reused;
  if (install) {
    j["install"] = {{"venv", install->venv},
                    {"steps", install->steps},
                    {"failures", install->failures},
                    {"ok", install->ok()}};
    auto v = nlohmann::json::parse(install->verification_json, nullptr, false);
    j["install"]["verification"] = v.is_discarded() ? nlohmann::json() : v;
  }
  return with_schema(std::move(j), "stack");
}

/// Why a stack is not ok, in one line: the packages that cannot be had, and those whose
/// coverage is unknown with what decides it.
std::string not_ok_line(const stack::StackResult& r) {
  std::vector<std::string> unsupported, unknown;
  for (const auto& row : r.rows) {
    if (row.outcome == stack::Outcome::unsupported) unsupported.push_back(row.name);
    if (row.outcome == stack::Outcome::unknown)
      unknown.push_back(fmt::format(
          "{} {}: coverage of {} unknown (the table's reason names the command that decides it)",
          row.name, row.version, r.target.gpu_label()));
  }
  std::string out;
  if (!unsupported.empty()) out = "cannot be had: " + join(unsupported, ", ");
  if (!unknown.empty()) out += (out.empty() ? "" : "; ") + join(unknown, "; ");
  return out;
}

int interrupted_exit() {
  int sig = interrupt_signal();
  report_error("stack: interrupted; nothing was written", interrupt_exit_code(sig));
  return interrupt_exit_code(sig);
}

// The stack read back from --from-lock, into `result`; k_exit_ok, or the error's exit.
int read_lock_file(const StackArgs& args, stack::StackResult& result) {
  if (!args.request.packages.empty() || !args.request.requirement_files.empty())
    return report_error("stack: --from-lock replaces the package list: give one or the other");
  auto text = read_text_file(args.from_lock, 64ull << 20);
  if (!text) return report_error("--from-lock: " + text.error().message);
  auto lock = stack::read_lock(*text);
  if (!lock) return report_error(args.from_lock + ": " + lock.error().message);
  result = std::move(*lock);
  return k_exit_ok;
}

builder::DisplayStyle progress_style(const std::string& progress) {
  if (progress == "live") return builder::DisplayStyle::live;
  if (progress == "plain") return builder::DisplayStyle::plain;
  if (progress != "auto") return builder::DisplayStyle::quiet;
  return builder::default_display_style(stderr);  // the one terminal test
}

// The stack resolved from the packages and requirement files asked for, into `result`;
// k_exit_ok, or the error's exit.
int resolve_requested(StackArgs& args, stack::StackResult& result) {
  bool any_requirement = !args.request.packages.empty();
  for (const auto& f : args.request.requirement_files) {
    auto t = read_text_file(f, 8ull << 20);
    if (!t) return report_error("-r: " + t.error().message);
    for (const auto& line : split_any(*t, "\n"))
      if (auto l = trim(line); !l.empty() && l.front() != '#') any_requirement = true;
  }
  // Requirement files with nothing in them ask for nothing: say so, not an empty table.
  if (!any_requirement && !args.request.requirement_files.empty())
    return report_error(
        fmt::format("-r {}: no requirement in {} (a requirements file names one package per line, "
                    "e.g. torch==2.11.0)",
                    join(args.request.requirement_files, ", -r "),
                    args.request.requirement_files.size() == 1 ? "it" : "them"));
  SystemCommandRunner runner;
  // What it is doing while pip resolves (tens of seconds when nothing is stored), on the one
  // progress display: live (a terminal): each phase as a line, and below it one status line
  // redrawn in place every second (a spinner, the phase's seconds, pip's "Collecting ..."
  // lines, the wheel being inspected); plain (piped, TERM=dumb): the phases, pip's
  // "Collecting ..." lines and the wheels inspected as lines; quiet: only warnings.
  const builder::DisplayStyle style = progress_style(args.progress);
  auto shown = builder::make_progress_display(style, stderr, {}, "tailor stack");
  if (style != builder::DisplayStyle::quiet) {
    args.request.progress = [&shown](std::string_view line) { shown->phase(line); };
    args.request.progress_detail = [&shown, style](std::string_view line) {
      // pip's download lines are news on a status line only.
      if (style == builder::DisplayStyle::plain &&
          (line.starts_with("pip: Downloading") || line.starts_with("pip: Using cached")))
        return;
      shown->detail(line);
    };
  }
  args.request.warn = [&shown](std::string_view line) { shown->warn(line); };
  auto r = stack::run_stack(args.request, runner);
  shown->stop();
  if (!r)
    return interrupt_signal() ? interrupted_exit() : report_error("stack: " + r.error().message);
  result = std::move(*r);
  return k_exit_ok;
}

// The line that sums up the installed stack's verification, then its failures.
void print_verification(const stack::InstallReport& installed) {
  if (installed.verification_json.empty()) {
    for (const auto& f : installed.failures)
      std::cout << paint("FAILED ", Paint::red) << terminal_safe(f) << "\n";
    return;
  }
  auto v = nlohmann::json::parse(installed.verification_json, nullptr, false);
  size_t imports = 0;
  if (!v.is_discarded())
    for (const auto& i : v.value("imports", nlohmann::json::array()))
      imports += i.value("ok", false) ? 1 : 0;
  std::cout << fmt::format("{} {}: {} imports", paint("verified", Paint::bold), installed.venv,
                           imports);
  if (!v.is_discarded() && v.contains("torch") && v["torch"].is_object())
    std::cout << fmt::format("; torch {} CUDA {} arch list {}", v["torch"].value("version", ""),
                             v["torch"].value("cuda", ""),
                             join(v["torch"].value("arch_list", std::vector<std::string>{}), " "));
  if (!v.is_discarded() && v.contains("gpu") && v["gpu"].is_object())
    std::cout << fmt::format("; GPU smoke test on {} ({}): {}", v["gpu"].value("name", ""),
                             v["gpu"].value("cc", ""),
                             v["gpu"].value("matmul", false) ? "passed" : "FAILED");
  else
    std::cout << "; GPU smoke test: skipped (no GPU)";
  std::cout << "\n";
  for (const auto& f : installed.failures)
    std::cout << paint("FAILED ", Paint::red) << terminal_safe(f) << "\n";
}

// --install: the resolved stack installed into a venv and verified there; the exit.
int install_resolved(const StackArgs& args, const stack::StackResult& result) {
  if (!result.ok()) {
    if (args.json)
      std::cout << render_json(result, nullptr).dump(2) << "\n";
    else
      std::cout << render_text(result);
    return report_error("stack: not installing: " + not_ok_line(result), k_exit_failed);
  }
  if (!args.json) std::cout << render_text(result) << "\n";
  SystemCommandRunner runner;
  auto installed = stack::install_stack(result, args.install, args.request, runner,
                                        [](std::string_view line) { std::cerr << line << "\n"; });
  if (!installed)
    return interrupt_signal() ? interrupted_exit()
                              : report_error("stack: --install: " + installed.error().message);
  if (args.json)
    std::cout << render_json(result, &*installed).dump(2) << "\n";
  else
    print_verification(*installed);
  return installed->ok() ? k_exit_ok : k_exit_failed;
}

// --build: the stack's packages built here, through the workflow layer, as `tailor build`
// would build them; k_exit_ok, or the exit of the first that failed.
int build_resolved(const StackArgs& args, const stack::StackResult& result) {
  workflow::StackBuildOptions b;
  b.out_dir = args.out;
  b.python = args.request.interpreter;
  auto built = workflow::build_stack_packages(
      result, b,
      [](const workflow::ExtensionBuildOptions& o) { return workflow::build_extension(o); });
  if (interrupt_signal() != 0) return interrupted_exit();
  for (const auto& one : built) {
    const auto& r = one.result;
    if (r.status == workflow::BuildStatus::ok) {
      std::cerr << fmt::format("built {} for {}\n", r.report.wheel, join(r.report.targets, ", "));
      continue;
    }
    std::string why = r.message.empty() ? std::string("see ") + r.report.log_path : r.message;
    return report_error(
        fmt::format("stack: building {} failed: {}", one.package, why),
        r.status == workflow::BuildStatus::bad_input ? k_exit_bad_input : k_exit_failed);
  }
  return k_exit_ok;
}

int run_stack(StackArgs& args) {
  install_interrupt_handlers();
  if (args.progress != "auto" && args.progress != "live" && args.progress != "plain" &&
      args.progress != "quiet")
    return report_error(
        fmt::format("--progress {}: expected auto, live, plain or quiet", args.progress));
  args.request.self = self_path();
  args.request.index.no_index = args.no_index;
  stack::StackResult result;
  if (int got =
          args.from_lock.empty() ? resolve_requested(args, result) : read_lock_file(args, result);
      got != k_exit_ok)
    return got;
  if (!args.lock.empty())
    if (auto w = write_file_atomic(args.lock, stack::render_lock(result)); !w)
      return report_error("--lock: " + w.error().message);
  if (!args.script.empty()) {
    if (auto w = write_file_atomic(args.script, stack::render_script(result)); !w)
      return report_error("--script: " + w.error().message);
    fs::permissions(args.script,
                    fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
  }
  if (!args.install.empty()) return install_resolved(args, result);
  if (args.build)
    if (int got = build_resolved(args, result); got != k_exit_ok) return got;
  if (args.json)
    std::cout << render_json(result, nullptr).dump(2) << "\n";
  else
    std::cout << render_text(result);
  if (result.ok()) return k_exit_ok;
  std::cout.flush();
  return report_error("stack: " + not_ok_line(result), k_exit_failed);
}

}  // namespace

void setup_stack(CLI::App& sub, RunFn& run) {
  auto a = std::make_shared<StackArgs>();
  auto& q = a->request;
  sub.add_option("packages", q.packages, "Requirements: NAME, NAME==VERSION, NAME>=VERSION ...");
  sub.add_option("-r,--requirement", q.requirement_files, "A requirements file (passed to pip)")
      ->allow_extra_args(false);
  sub.add_option("--gpu", q.gpu,
                 "The target's GPUs (T4G, A10G, H100, 8.6, g5g.xlarge; default: this machine's); "
                 "repeat it for several")
      ->allow_extra_args(false);
  sub.add_option("--arch", q.arch,
                 "The target's GPUs as CUDA targets (8.6, sm_90); repeat it for several")
      ->allow_extra_args(false);
  sub.add_option("--platform", q.platform,
                 "The target's platform: x86_64 or aarch64 (default: this machine's)");
  sub.add_option("--python", q.python,
                 "The target's Python version, 3.X (default: the resolving interpreter's)");
  sub.add_option(
      "--glibc", q.glibc,
      "The target's glibc (its manylinux tags; default: this machine's, or 2.35 for another)");
  sub.add_option("--cuda", q.cuda,
                 "The CUDA version torch must be built for (adds the PyTorch index for it)");
  sub.add_option("--torch", q.torch,
                 "A torch version, or a Python interpreter whose installed torch the stack uses");
  sub.add_option("--index-url", q.index.index_url, "The package index (pip's --index-url)");
  sub.add_option("--extra-index-url", q.index.extra_index_urls,
                 "More indexes (pip's --extra-index-url)")
      ->allow_extra_args(false);
  sub.add_option("--find-links", q.index.find_links,
                 "Folders or pages of wheels and sdists (pip's --find-links)")
      ->allow_extra_args(false);
  sub.add_flag("--no-index", a->no_index, "Use only --find-links (pip's --no-index)");
  sub.add_option("--interpreter", q.interpreter, "The Python that runs pip (default python3)");
  sub.add_option("--cache-dir", q.cache_dir,
                 "Where wheels, sdists and their inspections are kept by sha256, and pip's "
                 "resolutions (default ~/.cache/tailor/stack)");
  sub.add_flag("--refresh", q.refresh,
               "Resolve with pip again even where the stored resolution still holds");
  sub.add_option("--wheelhouse", q.wheelhouse,
                 "a `tailor publish` wheelhouse (a folder, file:///DIR, http(s)://HOST/PATH or "
                 "s3://BUCKET/PREFIX[?endpoint=URL]): a package to build whose wheel of the same "
                 "sdist, GPUs, torch and Python is published there is prebuilt from it")
      ->type_name("DIR|URL");
  sub.add_option(
      "--progress", a->progress,
      "auto, live, plain or quiet (default auto: live on a terminal, plain lines when piped)");
  sub.add_flag("--json", a->json, "Machine-readable output");
  sub.add_option("--lock", a->lock,
                 "Write the lock: pinned wheel URLs with sha256, the sdists to build");
  sub.add_option("--from-lock", a->from_lock, "Use a lock written by --lock instead of resolving");
  sub.add_option("--script", a->script,
                 "Write a bash script that installs the stack into a venv (bash SCRIPT VENV)");
  sub.add_option("--install", a->install,
                 "Install the stack into this venv (created when missing) and verify it");
  sub.add_flag("--build", a->build, "Build the packages that have no usable wheel now, into --out");
  sub.add_option("--out", a->out, "Where --build puts the built wheels (default ./dist)");
  sub.callback([&run, a] { run = [a] { return run_stack(*a); }; });
}

}  // namespace tailor::cli
