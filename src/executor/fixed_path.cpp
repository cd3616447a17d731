#include "executor/fixed_path.h"

#include <cctype>

#include <fmt/format.h>

#include "util/strings.h"

namespace tailor::executor {

std::string fixed_work_path(std::string_view package) {
  std::string name;
  for (char c : package)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (name.empty() || name == "." || name == "..") name = "package";
  return std::string(k_fixed_root) + "/" + name;
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
    bool starts = hit == 0 || std::string_view("=: '\"\t\n,;@(").find(text[hit - 1]) != std::string_view::npos ||
                  (hit >= 2 && text[hit - 2] == '-' && std::isalpha(static_cast<unsigned char>(text[hit - 1])));
    bool ends = end == text.size() || text[end] == '/' ||
                std::string_view("=: '\"\t\n,;)").find(text[end]) != std::string_view::npos;
    out.append(text.substr(at, hit - at));
    out += (starts && ends) ? fp.fixed : fp.real;
    at = end;
  }
  out.append(text.substr(at));
  return out;
}

std::vector<std::string> fixed_path_argv(const FixedPath& fp, const std::string& cwd, const std::vector<std::string>& argv) {
  std::string root = fp.fixed.substr(0, fp.fixed.rfind('/'));
  std::vector<std::string> out = {fp.bwrap,         "--dev-bind", "/",          "/",       "--tmpfs",
                                  root.empty() ? "/" : root,     "--bind",     fp.real,    fp.fixed,  "--die-with-parent"};
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
  for (auto& [k, v] : step.env) v = to_fixed(v, fp);
  return step;
}

Expected<FixedPath> open_fixed_path(const std::string& real, const std::string& fixed, const std::string& bwrap,
                                    CommandRunner& runner) {
  if (bwrap.empty()) return make_error("no bwrap (bubblewrap) on PATH");
  FixedPath fp{real, fixed, bwrap};
  CommandSpec spec;
  spec.argv = fixed_path_argv(fp, real, {"true"});
  spec.timeout = std::chrono::seconds(20);
  CommandResult r = runner.run(spec);
  if (r.ok()) return fp;
  std::string why = std::string(trim(r.err));
  if (why.empty()) why = r.started ? fmt::format("exit {}", r.exit_code) : "could not run " + bwrap;
  if (auto nl = why.find('\n'); nl != std::string::npos) why = why.substr(0, nl);
  return make_error(why);
}

}  // namespace tailor::executor
