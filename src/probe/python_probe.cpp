// Python interpreters and the torch each one would build against. One short script per
// interpreter prints everything as one JSON line; importing torch takes seconds, so the
// interpreters are probed in parallel with a generous timeout.
#include <future>
#include <regex>
#include <set>

#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

// torch.cuda.get_arch_list() is [] without a GPU on some versions; the compiled-in list
// is then read from torch._C._cuda_getArchFlags().
constexpr const char* k_probe_script = R"PY(
import json, platform, sys
r = {"version": platform.python_version(), "executable": sys.executable}
try:
    import torch
    t = {"version": torch.__version__, "cuda": torch.version.cuda, "path": torch.__path__[0]}
    a = []
    try:
        a = list(torch.cuda.get_arch_list())
    except Exception:
        pass
    if not a:
        f = getattr(torch._C, "_cuda_getArchFlags", None)
        if f is not None:
            a = (f() or "").split()
    t["arch_list"] = a
    t["cxx11_abi"] = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", None)
    r["torch"] = t
except Exception as e:
    r["torch_error"] = type(e).__name__ + ": " + str(e)
print("TAILOR_PROBE " + json.dumps(r))
)PY";

std::string dirname(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Expected<PythonInstall> parse_python_probe(const std::string& output) {
  // Site hooks may print before the script; take the marked line.
  auto pos = output.rfind("TAILOR_PROBE ");
  if (pos == std::string::npos) return make_error("python probe printed no result line");
  auto end = output.find('\n', pos);
  std::string line = output.substr(pos + 13, end == std::string::npos ? std::string::npos : end - pos - 13);
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("python probe printed malformed JSON");
  PythonInstall py;
  if (!j.contains("version") || !j["version"].is_string()) return make_error("python probe: no 'version'");
  py.version = j["version"].get<std::string>();
  if (j.contains("executable") && j["executable"].is_string()) py.path = j["executable"].get<std::string>();
  if (j.contains("torch_error") && j["torch_error"].is_string()) py.torch_error = j["torch_error"].get<std::string>();
  if (j.contains("torch") && j["torch"].is_object()) {
    const auto& t = j["torch"];
    TorchInstall torch;
    if (!t.contains("version") || !t["version"].is_string()) return make_error("python probe: torch without 'version'");
    torch.version = t["version"].get<std::string>();
    if (t.contains("cuda") && t["cuda"].is_string()) torch.cuda_version = t["cuda"].get<std::string>();
    if (t.contains("path") && t["path"].is_string()) torch.path = t["path"].get<std::string>();
    if (t.contains("arch_list") && t["arch_list"].is_array())
      for (const auto& a : t["arch_list"])
        if (a.is_string()) torch.arch_list.push_back(a.get<std::string>());
    if (t.contains("cxx11_abi") && t["cxx11_abi"].is_boolean()) torch.cxx11_abi = t["cxx11_abi"].get<bool>();
    py.torch = std::move(torch);
  }
  return py;
}

std::optional<PythonInstall> probe_python(const std::string& python, CommandRunner& runner,
                                         std::chrono::seconds timeout) {
  CommandSpec spec;
  spec.argv = {python, "-c", k_probe_script};
  spec.timeout = timeout;
  spec.env["PYTHONDONTWRITEBYTECODE"] = "1";
  auto r = runner.run(spec);
  if (!r.started) return std::nullopt;
  PythonInstall py;
  py.path = python;
  if (r.timed_out) {
    py.torch_error = "timed out after " + std::to_string(timeout.count()) + " s";
    return py;
  }
  auto parsed = parse_python_probe(r.out);
  if (!parsed) {
    // Not a Python we can talk to (Python 2, a broken venv): report what it said.
    std::string why = std::string(trim(r.err.empty() ? r.out : r.err));
    if (auto nl = why.rfind('\n'); nl != std::string::npos) why = why.substr(nl + 1);
    py.torch_error = parsed.error().message + (why.empty() ? "" : ": " + why);
    return py;
  }
  parsed->path = python;  // the name it was found by, not sys.executable of a venv's base
  return *parsed;
}

std::vector<PythonInstall> probe_pythons(HostFiles& files, CommandRunner& runner,
                                         const std::vector<std::string>& extra,
                                         std::vector<std::string>& notes, std::chrono::seconds timeout) {
  std::vector<std::string> candidates = extra;
  // Shims (pyenv, asdf) are shell scripts that pick an interpreter by the current folder;
  // the interpreters behind them are probed directly.
  auto is_shim = [](const std::string& dir) { return dir.size() >= 6 && dir.compare(dir.size() - 6, 6, "/shims") == 0; };
  static const std::regex versioned(".*/python3\\.\\d+$");
  for (const auto& dir : split_any(files.getenv("PATH").value_or(""), ":")) {
    if (is_shim(dir)) continue;
    for (const char* name : {"python3", "python"})
      if (files.is_executable(dir + "/" + name)) candidates.push_back(dir + "/" + name);
    for (const auto& p : files.glob(dir + "/python3.[0-9]*"))
      if (std::regex_match(p, versioned) && files.is_executable(p)) candidates.push_back(p);
  }
  std::string pyenv = files.getenv("PYENV_ROOT").value_or(files.getenv("HOME").value_or("") + "/.pyenv");
  std::vector<std::string> managed = {pyenv + "/versions/*/bin/python3"};
  if (auto home = files.getenv("HOME")) managed.push_back(*home + "/.asdf/installs/python/*/bin/python3");
  for (const auto& g : managed)
    for (const auto& p : files.glob(g))
      if (files.is_executable(p)) candidates.push_back(p);

  // A venv's python is a symlink to its base interpreter but sees other packages, so
  // the venv folder is part of the identity.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const auto& p : candidates) {
    std::string venv = dirname(dirname(p));
    std::string key = files.realpath(p);
    if (files.exists(venv + "/pyvenv.cfg")) key = files.realpath(venv) + "|" + key;
    if (seen.insert(key).second) unique.push_back(p);
  }

  std::vector<std::future<std::optional<PythonInstall>>> jobs;
  for (const auto& p : unique)
    jobs.push_back(std::async(std::launch::async, [&runner, p, timeout] { return probe_python(p, runner, timeout); }));
  std::vector<PythonInstall> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto py = jobs[i].get();
    if (py) out.push_back(std::move(*py));
    else notes.push_back("python " + unique[i] + " could not be run");
  }
  if (out.empty()) notes.push_back("no Python interpreter found");
  return out;
}

}  // namespace tailor::probe
