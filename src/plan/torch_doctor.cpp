#include "plan/torch_doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/strings.h"
#include "util/terminal_style.h"

namespace tailor::plan {

namespace {
constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;
double gib(uint64_t bytes) { return static_cast<double>(bytes) / k_gib; }

// The libraries the plan takes from the system: each one's files there, else the packages
// that install them in one command.
DoctorCheck system_libraries_check(const TorchPlan& plan, const DoctorFacts& facts) {
  DoctorCheck c{"system-libs"};
  std::vector<std::string> names, missing;
  for (const auto& l : plan.system_libraries) names.push_back(l.name);
  for (const auto& l : facts.system_missing.missing)
    missing.push_back(fmt::format("{} ({})", l.name, join(l.debian, " ")));
  c.ok = missing.empty();
  c.detail = c.ok ? fmt::format("{} from the system, installed: {}", names.size(), join(names, " "))
                  : fmt::format("{} of {} from the system not installed: {}", missing.size(),
                                names.size(), join(missing, ", "));
  if (!c.ok) c.fix = facts.system_missing.install_command;
  return c;
}
}  // namespace

bool DoctorReport::ok() const {
  return std::none_of(checks.begin(), checks.end(),
                      [](const auto& c) { return !c.ok && !c.warning; });
}

Requirement parse_requirement(std::string_view text) {
  Requirement r;
  std::string t(trim(text));
  size_t cut = t.find_first_of("<>=!~ ;[");
  r.name = to_lower(t.substr(0, cut));
  std::replace(r.name.begin(), r.name.end(), '_', '-');
  if (cut != std::string::npos) {
    std::string rest = t.substr(cut);
    if (auto semi = rest.find(';'); semi != std::string::npos)
      rest = rest.substr(0, semi);  // markers
    for (auto& s : split_any(rest, ",")) {
      std::string spec(trim(s));
      if (!spec.empty() && spec[0] != '[') r.specs.push_back(spec);
    }
  }
  return r;
}

bool satisfies(std::string_view version, const std::vector<std::string>& specs) {
  // Pre/post/local parts ("2.0.0rc1", "1.26.4+x") compare by their release numbers.
  std::string v(version);
  v = v.substr(0, v.find_first_not_of("0123456789."));
  for (const auto& spec : specs) {
    size_t op_len = spec.find_first_of("0123456789");
    if (op_len == std::string::npos) continue;
    std::string op(trim(spec.substr(0, op_len)));
    std::string ref(trim(spec.substr(op_len)));
    int c = compare_versions(v, ref);
    bool ok = op == "<"    ? c < 0
              : op == "<=" ? c <= 0
              : op == ">"  ? c > 0
              : op == ">=" ? c >= 0
              : op == "==" ? c == 0
              : op == "!=" ? c != 0
              : op == "~=" ? (c >= 0 &&
                              [&] {
                                auto parts = split_any(ref, ".");
                                parts.pop_back();
                                std::string prefix = join(parts, ".");
                                return compare_versions(v.substr(0, prefix.size()), prefix) == 0;
                              }())
                           : true;
    if (!ok) return false;
  }
  return true;
}

DoctorReport run_torch_doctor(const TorchPlan& plan, const probe::HostReport& host,
                              const DoctorFacts& facts) {
  DoctorReport r;
  auto add = [&](DoctorCheck c) { r.checks.push_back(std::move(c)); };

  // Disk: the derived need against the work folder's free space.
  {
    DoctorCheck c{"disk"};
    double need = plan.estimate.disk_gib, free = gib(host.disk.free_bytes);
    c.ok = host.disk.free_bytes == 0 ? true : free >= need;
    c.warning = host.disk.free_bytes == 0;
    c.detail = host.disk.free_bytes == 0
                   ? fmt::format("free space unknown; this build needs ~{:.0f} GiB ({})", need,
                                 plan.estimate.disk_formula)
                   : fmt::format("{:.0f} GiB free at {}, this build needs ~{:.0f} GiB", free,
                                 host.disk.path, need);
    if (!c.ok) c.fix = fmt::format("free {:.0f} GiB or choose another --work-dir", need - free);
    add(c);
  }
  // Memory against jobs, and swap as the safety margin.
  {
    DoctorCheck c{"memory"};
    c.detail = fmt::format("{:.1f} GiB usable ({}), {} jobs: {}", gib(host.memory.usable),
                           host.memory.limited_by.empty() ? "MemAvailable" : host.memory.limited_by,
                           plan.jobs, plan.jobs_reason);
    c.ok = host.memory.usable == 0 || plan.jobs >= 1;
    // Only when memory, not the core count, is what holds the jobs down.
    if (plan.jobs <= 2 && host.memory.usable > 0 && host.cpu.build_cores() > plan.jobs) {
      c.warning = true;
      c.ok = false;
      c.fix =
          "only 1-2 parallel jobs fit in memory: the build will take many hours; use a larger "
          "machine";
    }
    add(c);
    DoctorCheck s{"swap"};
    s.detail = fmt::format("{:.1f} GiB swap", gib(host.memory.swap_total));
    if (host.memory.swap_total == 0) {
      s.ok = false;
      s.warning = true;
      s.fix =
          "add swap as a margin against OOM kills near the end (e.g. 32 GB: sudo fallocate -l 32G "
          "/swapfile && sudo chmod 600 /swapfile && sudo mkswap /swapfile && sudo swapon "
          "/swapfile)";
    }
    add(s);
  }
  // Toolchain and variant problems come from resolution.
  for (const auto& p : plan.problems) {
    DoctorCheck c{p.field};
    c.ok = false;
    c.warning = p.severity == ProblemSeverity::warning;
    c.detail = p.message;
    c.fix = p.fix;
    add(c);
  }
  if (plan.cuda) {
    bool found = std::any_of(
        host.cuda_toolkits.begin(), host.cuda_toolkits.end(),
        [&](const auto& tk) { return plan.cuda_version && tk.release == *plan.cuda_version; });
    if (found)
      add({"nvcc", true, false, fmt::format("CUDA {} at {}", plan.cuda_text(), plan.cuda_home),
           ""});
    if (!plan.host_compiler.empty() &&
        std::none_of(plan.problems.begin(), plan.problems.end(),
                     [](const auto& p) { return p.field == "host.compiler"; }))
      add({"host-compiler", true, false, "nvcc host compiler " + plan.host_compiler, ""});
  }
  // Python build requirements importable, with the pins this release needs.
  if (facts.python_checked) {
    std::vector<std::string> missing, wrong;
    for (const auto& req_text : plan.requirements) {
      Requirement req = parse_requirement(req_text);
      auto it = facts.python_packages.find(req.name);
      if (it == facts.python_packages.end() || !it->second)
        missing.push_back(req_text);
      else if (!satisfies(*it->second, req.specs))
        wrong.push_back(fmt::format("{} (have {})", req_text, *it->second));
    }
    DoctorCheck c{"python-deps"};
    c.ok = missing.empty() && wrong.empty();
    // `build torch` installs them into its venv: only a warning for the interpreter itself.
    c.warning = true;
    c.detail = c.ok ? fmt::format("{} build requirements satisfied in {}", plan.requirements.size(),
                                  plan.python)
                    : fmt::format("in {}: missing {}{}{}", plan.python,
                                  missing.empty() ? "none" : join(missing, ", "),
                                  wrong.empty() ? "" : "; wrong versions: ", join(wrong, ", "));
    if (!c.ok) {
      std::vector<std::string> q;
      for (const auto& req : plan.requirements) q.push_back(shell_quote(req));
      c.fix = fmt::format("{} -m pip install {} (tailor build torch does this in its own venv)",
                          plan.python, join(q, " "));
    }
    add(c);
  }
  if (facts.source_checked) {
    DoctorCheck c{"submodules"};
    if (!facts.source_exists) {
      c.ok = false;
      c.detail = plan.layout.source_dir + " does not exist";
      c.fix = "check --source";
    } else {
      c.ok = facts.empty_submodules.empty();
      c.detail = c.ok ? "third_party submodules present in " + plan.layout.source_dir
                      : fmt::format("empty submodules in {}: {}", plan.layout.source_dir,
                                    join(facts.empty_submodules, ", "));
      if (!c.ok)
        c.fix = fmt::format(
            "cd {} && git submodule sync && git submodule update --init --recursive --depth 1",
            shell_quote(plan.layout.source_dir));
    }
    add(c);
  }
  if (!plan.system_libraries.empty()) add(system_libraries_check(plan, facts));
  return r;
}

std::string render_doctor(const DoctorReport& report) {
  std::string o;
  for (const auto& c : report.checks) {
    const std::string mark = c.ok        ? paint("ok  ", Paint::green)
                             : c.warning ? paint("warn", Paint::yellow)
                                         : paint("FAIL", Paint::red);
    o += fmt::format("[{}] {:<14} {}\n", mark, c.name, c.detail);
    if (!c.ok && !c.fix.empty()) o += fmt::format("       fix: {}\n", c.fix);
  }
  o += report.ok() ? "ready to build\n" : "not ready: fix the FAIL lines above\n";
  return o;
}

}  // namespace tailor::plan
