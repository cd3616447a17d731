#include "workpath/fixed_path.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "util/strings.h"
#include "workpath/fixed_folder.h"
#include "workpath/fixed_path_wrapper.h"

namespace tailor::workpath {

namespace fs = std::filesystem;

std::string fixed_work_path(std::string_view package) {
  std::string name;
  for (char c : package)
    name +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  // A leading dot would make `..x` (a package name of issue 51): never a hidden or parent name.
  if (name.empty() || name == "." || name == "..") name = "package";
  if (name.front() == '.') name.front() = '_';
  return std::string(k_fixed_root) + "/" + name;
}

std::string_view fixed_path_route_name(FixedPathRoute route) {
  switch (route) {
    case FixedPathRoute::own_namespace:
      return "namespace";
    case FixedPathRoute::bwrap:
      return "bwrap";
    case FixedPathRoute::folder:
      return "folder";
    case FixedPathRoute::none:
      break;
  }
  return "none";
}

Expected<std::optional<FixedPathRoute>> parse_fixed_path_route(const char* value) {
  if (value == nullptr || *value == '\0') return std::optional<FixedPathRoute>();
  for (FixedPathRoute r : {FixedPathRoute::own_namespace, FixedPathRoute::bwrap,
                           FixedPathRoute::folder, FixedPathRoute::none})
    if (fixed_path_route_name(r) == value) return std::optional<FixedPathRoute>(r);
  return make_error(fmt::format(
      "{}={}: expected namespace, bwrap, folder or none (a switch for tests and diagnosis; "
      "unset it to let tailor choose)",
      k_fixed_path_route_variable, value));
}

std::string FixedPathChoice::refusals() const {
  std::vector<std::string> parts;
  for (const auto& [route, why] : refused)
    parts.push_back(fmt::format("{}: {}", fixed_path_route_name(route), why));
  return join(parts, "; ");
}

FixedPathChoice choose_fixed_path(const std::string& real, const std::string& fixed,
                                  const FixedPathTools& tools, std::optional<FixedPathRoute> forced,
                                  const std::function<Expected<void>(const FixedPath&)>& open) {
  FixedPathChoice choice;
  if (forced)
    choice.forced =
        fmt::format("{}={}", k_fixed_path_route_variable, fixed_path_route_name(*forced));
  for (FixedPathRoute route :
       {FixedPathRoute::own_namespace, FixedPathRoute::bwrap, FixedPathRoute::folder}) {
    if (forced && *forced != route) continue;
    FixedPath fp{real, fixed, route,
                 route == FixedPathRoute::own_namespace ? tools.tailor_exe
                 : route == FixedPathRoute::bwrap       ? tools.bwrap
                                                        : std::string()};
    if (route == FixedPathRoute::bwrap && tools.bwrap.empty()) {
      choice.refused.emplace_back(route, "no bwrap (bubblewrap) on PATH");
      continue;
    }
    if (route == FixedPathRoute::own_namespace && tools.tailor_exe.empty()) {
      choice.refused.emplace_back(route, "tailor's own executable is unknown (no /proc/self/exe)");
      continue;
    }
    auto opened = open(fp);
    if (opened) {
      choice.path = std::move(fp);
      return choice;
    }
    choice.refused.emplace_back(route, opened.error().message);
  }
  return choice;
}

namespace {

/// The first line of a failed try's stderr, else its exit.
std::string first_line_of(const CommandResult& r, const std::string& program) {
  std::string why = std::string(trim(r.err));
  if (why.empty())
    why = r.started ? fmt::format("exit {}", r.exit_code) : "could not run " + program;
  if (auto nl = why.find('\n'); nl != std::string::npos) why = why.substr(0, nl);
  // The launcher's own "tailor: fixed path: " says nothing the caller does not.
  if (why.starts_with("tailor: fixed path: "))
    why.erase(0, std::string_view("tailor: fixed path: ").size());
  return why;
}

}  // namespace

FixedPathChoice open_fixed_path(const std::string& real, const std::string& fixed,
                                const FixedPathTools& tools, std::optional<FixedPathRoute> forced,
                                CommandRunner& runner) {
  return choose_fixed_path(real, fixed, tools, forced, [&](const FixedPath& fp) -> Expected<void> {
    if (fp.route == FixedPathRoute::folder) return check_fixed_folder(fp.fixed);
    // Tried once, as every step will run: `true` behind the launcher.
    CommandSpec spec;
    spec.argv = fixed_path_argv(fp, real, {"true"});
    spec.timeout = std::chrono::seconds(20);
    CommandResult r = runner.run(spec);
    if (r.ok()) return {};
    return make_error(first_line_of(r, fp.launcher));
  });
}

FixedPathChoice probe_fixed_path_route(const FixedPathTools& tools,
                                       std::optional<FixedPathRoute> forced,
                                       CommandRunner& runner) {
  if (forced == FixedPathRoute::none) {
    FixedPathChoice choice;
    choice.forced = fmt::format("{}=none", k_fixed_path_route_variable);
    return choice;
  }
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  std::string scratch = (base / "tailor-fixed-path-XXXXXX").string();
  if (::mkdtemp(scratch.data()) == nullptr) scratch = base.string();
  const std::string fixed = fixed_work_path("tailor-detect");
  FixedPathChoice choice =
      choose_fixed_path(scratch, fixed, tools, forced, [&](const FixedPath& fp) -> Expected<void> {
        if (fp.route == FixedPathRoute::folder) return check_fixed_root(std::string(k_fixed_root));
        CommandSpec spec;
        spec.argv = fixed_path_argv(fp, scratch, {"true"});
        spec.timeout = std::chrono::seconds(20);
        CommandResult r = runner.run(spec);
        if (r.ok()) return {};
        return make_error(first_line_of(r, fp.launcher));
      });
  if (scratch != base.string()) fs::remove(scratch, ec);
  return choice;
}

std::string describe_fixed_path_route(FixedPathRoute route) {
  switch (route) {
    case FixedPathRoute::own_namespace:
      return fmt::format(
          "tailor's own private mount namespace: builds see their work folder at {}/<package>, "
          "nothing to install",
          k_fixed_root);
    case FixedPathRoute::bwrap:
      return fmt::format(
          "bubblewrap's mount namespace: builds see their work folder at {}/<package>",
          k_fixed_root);
    case FixedPathRoute::folder:
      return fmt::format(
          "builds run in a real folder {}/<package>, one build of a package at a time (others "
          "wait): the same bytes without a namespace",
          k_fixed_root);
    case FixedPathRoute::none:
      break;
  }
  return "no fixed path: wheels carry their work folder's path";
}

std::string no_fixed_path_warning(const FixedPathChoice& choice) {
  std::string why = choice.forced.empty() ? choice.refusals() : choice.forced;
  if (!choice.forced.empty() && !choice.refused.empty()) why += ": " + choice.refusals();
  std::string fix;
  if (!choice.forced.empty()) {
    fix = fmt::format("unset {}", k_fixed_path_route_variable);
  } else {
    fix = fmt::format(
        "let this user make namespaces (sysctl user.max_user_namespaces > 0, "
        "kernel.unprivileged_userns_clone = 1; a container started with them allowed), "
        "or make {} a folder this user owns (or remove it)",
        k_fixed_root);
  }
  return fmt::format(
      "no fixed work path ({}): nvcc's symbol names and the cache keys carry this work folder's "
      "path, "
      "so the wheel's bytes depend on it; fix: {}",
      why, fix);
}

std::string self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec || p.empty()) return "";
  // Deleted or replaced since it started (a rebuild under a running tailor): the kernel
  // still holds this process's image, which /proc/self/exe names in a forked child too.
  struct stat now {};
  if (p.string().ends_with(" (deleted)") || ::stat(p.c_str(), &now) != 0) return "/proc/self/exe";
  return p.string();
}

std::string to_fixed(std::string_view text, const FixedPath& fp) {
  if (fp.real.empty()) return std::string(text);
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t hit = text.find(fp.real, at);
    if (hit == std::string_view::npos) break;
    size_t end = hit + fp.real.size();
    // A whole path: it starts the text or follows a separator, and ends the text or a
    // path component ("/w/a" in "/w/ab" is not the folder).
    // "-I/w/a/src": a compiler's one-letter option glued to the path starts it too.
    bool starts =
        hit == 0 ||
        std::string_view("=: '\"\t\n,;@(").find(text[hit - 1]) != std::string_view::npos ||
        (hit >= 2 && text[hit - 2] == '-' &&
         std::isalpha(static_cast<unsigned char>(text[hit - 1])));
    bool ends = end == text.size() || text[end] == '/' ||
                std::string_view("=: '\"\t\n,;)").find(text[end]) != std::string_view::npos;
    out.append(text.substr(at, hit - at));
    out += (starts && ends) ? fp.fixed : fp.real;
    at = end;
  }
  out.append(text.substr(at));
  return out;
}

std::vector<std::string> fixed_path_argv(const FixedPath& fp, const std::string& cwd,
                                         const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  std::string root = fp.fixed.substr(0, fp.fixed.rfind('/'));
  if (root.empty()) root = "/";
  switch (fp.route) {
    case FixedPathRoute::own_namespace:
      out = {fp.launcher, std::string(k_fixed_path_command), "--tmpfs", root, "--bind", fp.real,
             fp.fixed};
      if (fp.sandbox) {
        out.push_back("--sandbox");
        for (const auto& w : fp.writable) {
          out.push_back("--rw");
          out.push_back(w);
        }
      }
      break;
    case FixedPathRoute::bwrap:
      out = {fp.launcher, "--dev-bind", "/",     "/",      "--tmpfs",
             root,        "--bind",     fp.real, fp.fixed, "--die-with-parent"};
      break;
    case FixedPathRoute::folder:
    case FixedPathRoute::none:
      for (const auto& a : argv) out.push_back(to_fixed(a, fp));
      return out;
  }
  if (!cwd.empty()) {
    out.push_back("--chdir");
    out.push_back(to_fixed(cwd, fp));
  }
  out.push_back("--");
  for (const auto& a : argv) out.push_back(to_fixed(a, fp));
  return out;
}

plan::Step in_fixed_path(plan::Step step, const FixedPath& fp) {
  step.argv = fixed_path_argv(fp, step.cwd, step.argv);
  if (fp.route == FixedPathRoute::folder) step.cwd = to_fixed(step.cwd, fp);
  for (auto& [k, v] : step.env) v = to_fixed(v, fp);
  return step;
}

}  // namespace tailor::workpath
