// Python interpreters and the torch each one would build against. One short script per
// interpreter prints everything as one JSON line; importing torch takes seconds, so the
// interpreters are probed in parallel with a generous timeout.
#include <filesystem>
#include <future>
#include <regex>
#include <set>

#include "cuda/cuda_version.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "probe/probe.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

// The programs run in each interpreter: data/probe/python_probe.py (what it is and its
// torch, one JSON line) and data/probe/python_stamp.py (what a cached probe is keyed by,
// without importing torch).
std::string marked_line(const std::string& output, std::string_view marker) {
  auto pos = output.rfind(marker);
  if (pos == std::string::npos) return "";
  auto end = output.find('\n', pos);
  return output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

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
  std::string line =
      output.substr(pos + 13, end == std::string::npos ? std::string::npos : end - pos - 13);
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("python probe printed malformed JSON");
  PythonInstall py;
  if (!j.contains("version") || !j["version"].is_string())
    return make_error("python probe: no 'version'");
  py.version = j["version"].get<std::string>();
  if (j.contains("executable") && j["executable"].is_string())
    py.path = j["executable"].get<std::string>();
  if (j.contains("torch_error") && j["torch_error"].is_string())
    py.torch_error = j["torch_error"].get<std::string>();
  if (j.contains("torch") && j["torch"].is_object()) {
    const auto& t = j["torch"];
    TorchInstall torch;
    if (!t.contains("version") || !t["version"].is_string())
      return make_error("python probe: torch without 'version'");
    torch.version = t["version"].get<std::string>();
    if (t.contains("cuda") && t["cuda"].is_string() && !t["cuda"].get<std::string>().empty()) {
      auto cuda = cuda::parse_cuda_version(t["cuda"].get<std::string>());
      if (!cuda) return make_error("python probe: torch's CUDA: " + cuda.error().message);
      torch.cuda_version = *cuda;
    }
    if (t.contains("path") && t["path"].is_string()) torch.path = t["path"].get<std::string>();
    if (t.contains("arch_list") && t["arch_list"].is_array())
      for (const auto& a : t["arch_list"])
        if (a.is_string()) torch.arch_list.push_back(a.get<std::string>());
    if (t.contains("cxx11_abi") && t["cxx11_abi"].is_boolean())
      torch.cxx11_abi = t["cxx11_abi"].get<bool>();
    py.torch = std::move(torch);
  }
  return py;
}

std::optional<PythonInstall> probe_python(const std::string& python, CommandRunner& runner,
                                          std::chrono::seconds timeout) {
  CommandSpec spec;
  spec.argv = {python, "-c", data::embedded_program("probe/python_probe.py")};
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

std::optional<PythonInstall> probe_python_cached(const std::string& python, CommandRunner& runner,
                                                 std::chrono::seconds timeout,
                                                 const std::string& cache_dir, bool* from_cache,
                                                 bool may_write) {
  if (from_cache) *from_cache = false;
  CommandSpec stamp_spec;
  stamp_spec.argv = {python, "-c", data::embedded_program("probe/python_stamp.py")};
  stamp_spec.timeout = std::min(timeout, std::chrono::seconds(30));
  stamp_spec.env["PYTHONDONTWRITEBYTECODE"] = "1";
  auto stamp_run = runner.run(stamp_spec);
  if (!stamp_run.started) return std::nullopt;
  std::string stamp = stamp_run.timed_out || stamp_run.exit_code != 0
                          ? ""
                          : marked_line(stamp_run.out, "TAILOR_STAMP ");
  nlohmann::json stamp_json =
      nlohmann::json::parse(stamp.empty() ? std::string("null") : stamp.substr(13), nullptr, false);
  // Only an interpreter that finds a torch is cached: the others probe in no time.
  const bool cacheable =
      !cache_dir.empty() && stamp_json.is_object() && stamp_json.contains("torch");
  const std::string entry =
      cacheable
          ? cache_dir + "/" +
                Sha256::hex(Sha256::of(std::as_bytes(std::span(python.data(), python.size()))))
                    .substr(0, 24) +
                ".json"
          : std::string();
  if (cacheable) {
    if (auto text = read_file(entry)) {
      nlohmann::json cached = nlohmann::json::parse(*text, nullptr, false);
      if (cached.is_object() && cached.value("stamp", "") == stamp && cached.contains("probe") &&
          cached["probe"].is_string())
        if (auto py = parse_python_probe(cached["probe"].get<std::string>())) {
          py->path = python;
          if (from_cache) *from_cache = true;
          return *py;
        }
    }
  }
  auto py = probe_python(python, runner, timeout);
  if (cacheable && may_write && py && py->torch) {
    // The probe's own line again, as parse_python_probe reads it.
    nlohmann::json t{
        {"version", py->torch->version},
        {"cuda", py->torch->cuda_version ? nlohmann::json(py->torch->cuda_version->to_string())
                                         : nlohmann::json()},
        {"path", py->torch->path},
        {"arch_list", py->torch->arch_list},
        {"cxx11_abi",
         py->torch->cxx11_abi ? nlohmann::json(*py->torch->cxx11_abi) : nlohmann::json()}};
    nlohmann::json line{{"version", py->version}, {"executable", py->path}, {"torch", t}};
    nlohmann::json doc{{"stamp", stamp}, {"probe", "TAILOR_PROBE " + line.dump()}};
    std::error_code ec;
    std::filesystem::create_directories(cache_dir, ec);
    (void)write_file_atomic(entry, doc.dump() + "\n");  // a cache: a failed write costs only time
  }
  return py;
}

std::vector<PythonInstall> probe_pythons(HostFiles& files, CommandRunner& runner,
                                         const std::vector<std::string>& extra,
                                         std::vector<std::string>& notes,
                                         std::chrono::seconds timeout) {
  std::vector<std::string> candidates = extra;
  // Shims (pyenv, asdf) are shell scripts that pick an interpreter by the current folder;
  // the interpreters behind them are probed directly.
  auto is_shim = [](const std::string& dir) {
    return dir.size() >= 6 && dir.compare(dir.size() - 6, 6, "/shims") == 0;
  };
  static const std::regex versioned(".*/python3\\.\\d+$");
  for (const auto& dir : split_any(files.getenv("PATH").value_or(""), ":")) {
    if (is_shim(dir)) continue;
    for (const char* name : {"python3", "python"})
      if (files.is_executable(dir + "/" + name)) candidates.push_back(dir + "/" + name);
    for (const auto& p : files.glob(dir + "/python3.[0-9]*"))
      if (std::regex_match(p, versioned) && files.is_executable(p)) candidates.push_back(p);
  }
  std::string pyenv =
      files.getenv("PYENV_ROOT").value_or(files.getenv("HOME").value_or("") + "/.pyenv");
  std::vector<std::string> managed = {pyenv + "/versions/*/bin/python3"};
  if (auto home = files.getenv("HOME"))
    managed.push_back(*home + "/.asdf/installs/python/*/bin/python3");
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
    jobs.push_back(std::async(std::launch::async,
                              [&runner, p, timeout] { return probe_python(p, runner, timeout); }));
  std::vector<PythonInstall> out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto py = jobs[i].get();
    if (py)
      out.push_back(std::move(*py));
    else
      notes.push_back("python " + unique[i] + " could not be run");
  }
  if (out.empty()) notes.push_back("no Python interpreter found");
  return out;
}

}  // namespace tailor::probe
