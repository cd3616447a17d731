// The outputs of tailor stack: the lock (JSON, read back by --from-lock), the install
// script, and --install, which runs that same script.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cuda/arch_spec.h"
#include "cuda/compatibility.h"
#include "stack/stack.h"
#include "util/files.h"
#include "util/strings.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tailor::stack {

namespace {
constexpr std::string_view k_lock_schema = "tailor.stack-lock/1";

Kind kind_of(std::string_view key) {
  for (Kind k :
       {Kind::pure, Kind::native, Kind::cuda, Kind::cuda_runtime, Kind::torch, Kind::source})
    if (kind_key(k) == key) return k;
  return Kind::pure;
}
std::optional<Outcome> outcome_of(std::string_view key) {
  for (Outcome o : {Outcome::prebuilt, Outcome::build, Outcome::unsupported, Outcome::installed,
                    Outcome::unknown})
    if (outcome_key(o) == key) return o;
  return std::nullopt;
}

std::string single_quoted(std::string_view s) { return shell_quote(s); }
}  // namespace

std::string render_lock(const StackResult& r) {
  json packages = json::array();
  for (const auto& row : r.rows) {
    json p = {{"name", row.name},
              {"key", row.key},
              {"version", row.version},
              {"kind", kind_key(row.kind)},
              {"outcome", outcome_key(row.outcome)},
              {"reason", row.reason},
              {"covers", row.covers},
              {"buildable", row.buildable},
              {"requested", row.requested},
              {"targets", row.targets},
              {"depends", row.depends}};
    if (!row.wheel_url.empty())
      p["wheel"] = {{"url", row.wheel_url}, {"sha256", row.wheel_sha256}, {"file", row.wheel_file}};
    if (!row.wheelhouse.empty()) p["wheel"]["wheelhouse"] = row.wheelhouse;
    if (!row.sdist_url.empty())
      p["sdist"] = {{"url", row.sdist_url},
                    {"sha256", row.sdist_sha256},
                    {"file", row.sdist_file},
                    {"recipe", row.recipe}};
    else if (!row.recipe.empty())
      p["recipe"] = row.recipe;
    packages.push_back(std::move(p));
  }
  std::vector<std::string> gpus;
  for (const auto& cc : r.target.gpus) gpus.push_back(cc.str());
  json doc = {
      {"schema", k_lock_schema},
      {"target",
       {{"platform", r.target.platform},
        {"python", r.target.python},
        {"glibc", r.target.glibc},
        {"gpu", r.target.gpu_text},
        {"gpus", gpus}}},
      {"torch",
       {{"version", r.torch.version},
        {"cuda", r.torch.cuda ? r.torch.cuda->to_string() : ""},
        {"arch_list", r.torch.arch_list},
        {"source", r.torch.source},
        {"python", r.torch_python}}},
      {"index",
       {{"index_url", r.index.index_url},
        {"extra_index_urls", r.index.extra_index_urls},
        {"find_links", r.index.find_links},
        {"no_index", r.index.no_index}}},
      {"packages", packages},
      {"notes", r.notes},
  };
  if (r.torch.cxx11_abi) doc["torch"]["cxx11_abi"] = *r.torch.cxx11_abi;
  return doc.dump(2) + "\n";
}

Expected<StackResult> read_lock(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("the lock is not JSON");
  if (j.value("schema", std::string()) != k_lock_schema)
    return make_error(fmt::format("the lock's schema is '{}', expected {}",
                                  j.value("schema", std::string()), k_lock_schema));
  try {
    StackResult r;
    const auto& t = j.at("target");
    r.target.platform = t.at("platform").get<std::string>();
    r.target.python = t.at("python").get<std::string>();
    r.target.glibc = t.at("glibc").get<std::string>();
    r.target.gpu_text = t.at("gpu").get<std::string>();
    for (const auto& g : t.at("gpus")) {
      auto cc = cuda::parse_compute_capability(g.get<std::string>());
      if (!cc) return make_error("the lock: target.gpus: " + cc.error().message);
      r.target.gpus.push_back(*cc);
    }
    const auto& tj = j.at("torch");
    r.torch.version = tj.at("version").get<std::string>();
    if (auto cuda = tj.at("cuda").get<std::string>(); !cuda.empty()) {
      auto v = cuda::parse_cuda_version(cuda);
      if (!v) return make_error("the lock: torch.cuda: " + v.error().message);
      r.torch.cuda = *v;
    }
    r.torch.arch_list = tj.at("arch_list").get<std::string>();
    r.torch.source = tj.at("source").get<std::string>();
    r.torch_python = tj.at("python").get<std::string>();
    if (tj.contains("cxx11_abi")) r.torch.cxx11_abi = tj["cxx11_abi"].get<bool>();
    const auto& ij = j.at("index");
    r.index.index_url = ij.at("index_url").get<std::string>();
    r.index.extra_index_urls = ij.at("extra_index_urls").get<std::vector<std::string>>();
    r.index.find_links = ij.at("find_links").get<std::vector<std::string>>();
    r.index.no_index = ij.at("no_index").get<bool>();
    for (const auto& p : j.at("packages")) {
      Row row;
      row.name = p.at("name").get<std::string>();
      row.key = p.at("key").get<std::string>();
      row.version = p.at("version").get<std::string>();
      row.kind = kind_of(p.at("kind").get<std::string>());
      auto outcome = outcome_of(p.at("outcome").get<std::string>());
      if (!outcome)
        return make_error(fmt::format("the lock: {}: unknown outcome '{}'", row.name,
                                      p.at("outcome").get<std::string>()));
      row.outcome = *outcome;
      row.reason = p.at("reason").get<std::string>();
      row.covers = p.at("covers").get<std::string>();
      row.buildable = p.at("buildable").get<std::string>();
      row.requested = p.at("requested").get<bool>();
      row.targets = p.at("targets").get<std::vector<std::string>>();
      row.depends = p.at("depends").get<std::vector<std::string>>();
      if (p.contains("wheel")) {
        row.wheel = true;
        row.wheel_url = p["wheel"].at("url").get<std::string>();
        row.wheel_sha256 = p["wheel"].at("sha256").get<std::string>();
        row.wheel_file = p["wheel"].at("file").get<std::string>();
        row.wheelhouse = p["wheel"].value("wheelhouse", "");
      }
      if (p.contains("sdist")) {
        row.sdist_url = p["sdist"].at("url").get<std::string>();
        row.sdist_sha256 = p["sdist"].at("sha256").get<std::string>();
        row.sdist_file = p["sdist"].at("file").get<std::string>();
        row.recipe = p["sdist"].at("recipe").get<std::string>();
      } else if (p.contains("recipe")) {
        row.recipe = p["recipe"].get<std::string>();
      }
      if (row.outcome == Outcome::prebuilt &&
          (row.wheel_url.empty() || row.wheel_sha256.size() != 64))
        return make_error(
            fmt::format("the lock: {}: a prebuilt package needs a wheel url and sha256", row.name));
      r.rows.push_back(std::move(row));
    }
    r.notes = j.at("notes").get<std::vector<std::string>>();
    return r;
  } catch (const json::exception& e) {
    return make_error(std::string("the lock: ") + e.what());
  }
}

std::string render_script(const StackResult& r) {
  std::string gpu = r.target.gpu_text;
  if (gpu.empty()) {
    std::vector<std::string> ccs;
    for (const auto& cc : r.target.gpus) ccs.push_back(cc.str());
    gpu = join(ccs, ",");
  }
  std::string s;
  s += "#!/usr/bin/env bash\n";
  s += fmt::format(
      "# Installs the stack tailor resolved for {} Python {} with {} into a virtual environment:\n",
      r.target.platform, r.target.python, r.target.gpu_label());
  s += "# hashed prebuilt wheels, then the packages to build (tailor build, dependency order), "
       "then a\n";
  s += "# verification printed as one JSON line. Written by `tailor stack --script`.\n";
  s += "# Usage: bash THIS_SCRIPT VENV   (PYTHON=python3.X and TAILOR=path/to/tailor are "
       "honoured)\n";
  s += "set -euo pipefail\n";
  s += "VENV=${1:?usage: bash $0 VENV}\n";
  s += "PYTHON=${PYTHON:-python3}\nTAILOR=${TAILOR:-tailor}\n";
  for (const auto& row : r.rows)
    if (row.outcome == Outcome::unsupported)
      s += fmt::format(
          "echo {} >&2; exit 1\n",
          single_quoted(fmt::format("stack: {} cannot be installed: {}", row.name, row.reason)));
  for (const auto& row : r.rows)
    if (row.outcome == Outcome::unknown)
      s += fmt::format(
          "echo {} >&2; exit 1\n",
          single_quoted(fmt::format("stack: {}'s coverage is unknown: {}", row.name, row.reason)));
  for (const auto& row : r.rows)
    if (row.kind == Kind::torch && row.outcome == Outcome::build)
      s += fmt::format("echo {} >&2; exit 1\n",
                       single_quoted(fmt::format("stack: torch must be built first ({}); then run "
                                                 "tailor stack again with --torch PYTHON",
                                                 row.reason)));
  s += "[ -x \"$VENV/bin/python\" ] || \"$PYTHON\" -m venv \"$VENV\"\n";
  s += "py=\"$VENV/bin/python\"\n";
  s += fmt::format(
      "[ \"$(\"$py\" -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])')\" = {} ] || "
      "{{ echo \"stack: $VENV is not Python {}\" >&2; exit 1; }}\n",
      r.target.python, r.target.python);
  s += "work=$(mktemp -d)\ntrap 'rm -rf \"$work\"' EXIT\n";
  std::string idx;
  for (const auto& a : r.index.args()) idx += " " + single_quoted(a);
  if (!r.torch_python.empty()) {
    s += "# torch comes from another interpreter: make its site-packages visible here.\n";
    s += fmt::format(
        "{} -c 'import sysconfig; p = sysconfig.get_paths(); print(p[\"purelib\"]); "
        "print(p[\"platlib\"])' "
        "| sort -u >\"$(\"$py\" -c 'import sysconfig; "
        "print(sysconfig.get_paths()[\"purelib\"])')/tailor-stack-torch.pth\"\n",
        single_quoted(r.torch_python));
  }
  std::string hashed;
  for (const auto& row : r.rows)
    if (row.outcome == Outcome::prebuilt && !row.wheel_url.empty())
      hashed +=
          fmt::format("{} @ {} --hash=sha256:{}\n", row.name, row.wheel_url, row.wheel_sha256);
  if (!hashed.empty()) {
    s += "cat >\"$work/prebuilt.txt\" <<'TAILOR_REQUIREMENTS'\n" + hashed + "TAILOR_REQUIREMENTS\n";
    s += "echo \"stack: installing the prebuilt wheels\"\n";
    s += "\"$py\" -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes" +
         idx + " -r \"$work/prebuilt.txt\"\n";
  }
  for (const auto& row : r.rows) {
    if (row.outcome != Outcome::build || row.kind == Kind::torch) continue;
    std::string file =
        fs::path(row.sdist_url.substr(0, row.sdist_url.find_first_of("#?"))).filename().string();
    s += fmt::format("echo \"stack: building {} {} from its sdist\"\n", row.name, row.version);
    s += fmt::format("\"$py\" - {} \"$work/{}\" {} <<'TAILOR_FETCH'\n",
                     single_quoted(row.sdist_url), file, row.sdist_sha256);
    s += "import hashlib, shutil, sys, urllib.request\n"
         "with urllib.request.urlopen(sys.argv[1], timeout=300) as src, open(sys.argv[2], 'wb') as "
         "dst:\n"
         "    shutil.copyfileobj(src, dst)\n"
         "digest = hashlib.sha256(open(sys.argv[2], 'rb').read()).hexdigest()\n"
         "if digest != sys.argv[3]:\n"
         "    sys.exit(f'{sys.argv[2]}: sha256 {digest}, the lock says {sys.argv[3]}')\n"
         "TAILOR_FETCH\n";
    s += fmt::format(
        "\"$TAILOR\" build \"$work/{}\" --gpu {} --python \"$py\" --out \"$work/dist-{}\" "
        "--no-tests --progress plain\n",
        file, single_quoted(gpu), row.key);
    s += fmt::format(
        "\"$py\" -m pip install --quiet --disable-pip-version-check --no-deps "
        "\"$work/dist-{}\"/*.whl\n",
        row.key);
  }
  std::string names;
  for (const auto& row : r.rows) names += " " + single_quoted(row.name);
  s += "echo \"stack: verifying\"\n";
  s += "\"$py\" -" + names + " <<'TAILOR_VERIFY'\n" + python_helper("verify_env.py") +
       "TAILOR_VERIFY\n";
  return s;
}

std::vector<std::string> verification_failures(const StackResult& r, std::string_view text) {
  std::vector<std::string> out;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {"the verification printed no JSON"};
  for (const auto& i : j.value("imports", json::array()))
    if (!i.value("ok", false))
      out.push_back(fmt::format("import {} ({}): {}", i.value("module", ""), i.value("dist", ""),
                                i.value("error", "")));
  bool cuda_needed = std::any_of(r.rows.begin(), r.rows.end(), [](const Row& row) {
    return row.kind == Kind::cuda || row.kind == Kind::torch;
  });
  if (j.contains("torch_error"))
    out.push_back("import torch: " + j["torch_error"].get<std::string>());
  if (j.contains("torch") && j["torch"].is_object() && cuda_needed) {
    const auto& t = j["torch"];
    if (t.value("cuda", "").empty()) {
      out.push_back(fmt::format("torch {} has no CUDA", t.value("version", "")));
    } else {
      std::vector<std::string> arch = t.value("arch_list", std::vector<std::string>{});
      auto set = cuda::parse_arch_spec(join(arch, " "));
      for (const auto& cc : r.target.gpus)
        if (!set || cuda::coverage_on(*set, cc).mode == cuda::RunMode::none)
          out.push_back(fmt::format("torch.cuda.get_arch_list() is {}: nothing runs on {}",
                                    join(arch, " "), cc.str()));
    }
  }
  if (j.contains("gpu") && j["gpu"].is_object() && !j["gpu"].value("matmul", false))
    out.push_back(
        fmt::format("the GPU smoke test on {} failed", j["gpu"].value("name", "the GPU")));
  return out;
}

Expected<InstallReport> install_stack(const StackResult& r, const std::string& venv,
                                      const StackRequest& request, CommandRunner& runner,
                                      std::function<void(std::string_view)> on_line) {
  InstallReport report;
  report.venv = fs::absolute(venv).string();
  fs::path script = fs::temp_directory_path() / fmt::format("tailor-stack-{}.sh", ::getpid());
  if (auto w = write_file_atomic(script.string(), render_script(r)); !w) return w.error();
  CommandSpec spec;
  spec.argv = {"bash", script.string(), report.venv};
  spec.env["PYTHON"] = request.interpreter;
  spec.env["TAILOR"] = request.self;
  spec.timeout = std::chrono::hours(12);
  std::string last_json;
  spec.on_line = [&](std::string_view line) {
    if (line.starts_with("{\"imports\""))
      last_json = std::string(line);
    else if (on_line)
      on_line(line);
    if (line.starts_with("stack: ")) report.steps.push_back(std::string(line.substr(7)));
  };
  // A venv this run creates is removed again when the run fails or is interrupted: no
  // half-made environment is left behind. One that existed keeps what was done to it.
  bool created = !fs::exists(fs::path(report.venv) / "bin" / "python");
  auto result = runner.run(spec);
  std::error_code ec;
  fs::remove(script, ec);
  if (created && !result.ok()) fs::remove_all(report.venv, ec);
  if (result.interrupted)
    return make_error(created ? "interrupted; the new venv was removed" : "interrupted");
  if (!result.started) return make_error("cannot run bash");
  report.verification_json = last_json;
  if (result.exit_code != 0) {
    report.failures.push_back(fmt::format("the install script stopped (exit {}){}",
                                          result.exit_code,
                                          created ? "; the new venv was removed" : ""));
    return report;
  }
  report.failures = verification_failures(r, last_json);
  return report;
}

}  // namespace tailor::stack
