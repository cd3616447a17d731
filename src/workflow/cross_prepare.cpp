#include "workflow/cross_prepare.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "util/files.h"
#include "util/strings.h"
#include "workpath/folder_lock.h"

namespace tailor::workflow {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// One line of a failed command: its last line of output.
std::string last_line(const CommandResult& r) {
  std::string text = r.err.empty() ? r.out : r.err;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t nl = text.rfind('\n');
  std::string line = nl == std::string::npos ? text : text.substr(nl + 1);
  if (r.timed_out) return "timed out";
  if (r.interrupted) return "interrupted";
  if (!r.started) return "could not start it";
  return line.empty() ? fmt::format("exit {}", r.exit_code) : line;
}

struct Runner {
  CommandRunner& runner;
  Expected<CommandResult> operator()(std::vector<std::string> argv, std::chrono::seconds limit,
                                     const std::string& what) const {
    CommandSpec spec;
    spec.argv = std::move(argv);
    spec.timeout = limit;
    CommandResult r = runner.run(spec);
    if (!r.ok()) return make_error(fmt::format("{}: {}", what, last_line(r)));
    return r;
  }
};

// A part of the target: made by `make` in DIR.tmp-PID, renamed to DIR when whole.
Expected<void> make_part(const fs::path& dir,
                         const std::function<Expected<void>(const fs::path&)>& make) {
  if (fs::exists(dir / ".complete")) return {};
  std::error_code ec;
  const fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", tmp.string(), ec.message()));
  if (auto made = make(tmp); !made) {
    fs::remove_all(tmp, ec);
    return made;
  }
  if (auto marked = write_file_atomic((tmp / ".complete").string(), ""); !marked)
    return make_error(marked.error().message);
  fs::remove_all(dir, ec);
  fs::rename(tmp, dir, ec);
  if (ec) return make_error(fmt::format("cannot rename {}: {}", tmp.string(), ec.message()));
  return {};
}

std::vector<std::string> pip_platform_args(const CrossRequest& r) {
  std::vector<std::string> a = {"--only-binary=:all:", "--python-version", r.python_version,
                                "--implementation", "cp"};
  for (const auto& p : r.platform->wheel_platforms) {
    a.push_back("--platform");
    a.push_back(p);
  }
  return a;
}

// Debian's packages of the platform, fetched with an apt state of tailor's own (the host's
// sources, the platform's architecture) and unpacked into `sysroot`.
Expected<void> fetch_debian(const CrossRequest& r, const fs::path& apt_state,
                            const fs::path& sysroot, const Runner& run) {
  std::error_code ec;
  for (const char* sub : {"lists/partial", "cache/archives/partial"})
    fs::create_directories(apt_state / sub, ec);
  if (!fs::exists(apt_state / "status"))
    if (auto w = write_file_atomic((apt_state / "status").string(), ""); !w)
      return make_error(w.error().message);
  const std::vector<std::string> opts = {
      "-o", "Dir::State::Lists=" + (apt_state / "lists").string(),
      "-o", "Dir::State::status=" + (apt_state / "status").string(),
      "-o", "Dir::Cache=" + (apt_state / "cache").string(),
      "-o", "APT::Architecture=" + r.platform->debian_arch,
      "-o", "APT::Architectures::=" + r.platform->debian_arch,
      "-o", "Debug::NoLocking=1",
      "-o", "APT::Sandbox::User=root",
      "-q"};
  auto apt = [&](std::vector<std::string> tail) {
    std::vector<std::string> argv = {"apt-get"};
    argv.insert(argv.end(), opts.begin(), opts.end());
    argv.insert(argv.end(), tail.begin(), tail.end());
    return argv;
  };
  if (find_in_path("apt-get").empty() || find_in_path("dpkg-deb").empty())
    return make_error("the target Python's headers come from Debian's " + r.platform->debian_arch +
                      " packages: apt-get and dpkg-deb are needed (a Debian or Ubuntu host)");
  r.say(fmt::format("tailor: cross: Debian's {} package lists", r.platform->debian_arch));
  TAILOR_TRY_VOID(run(apt({"update"}), 600s, "apt-get update (" + r.platform->debian_arch + ")"));
  std::vector<std::string> names;
  for (const auto& p : r.platform->python_packages)
    names.push_back(replace_all(p, "{py}", r.python_version));
  if (r.for_import_test)
    names.insert(names.end(), r.platform->runtime_packages.begin(),
                 r.platform->runtime_packages.end());
  const fs::path debs = sysroot.string() + ".debs";
  fs::remove_all(debs, ec);
  fs::create_directories(debs, ec);
  r.say(fmt::format("tailor: cross: {} Debian packages ({})", names.size(), join(names, " ")));
  std::vector<std::string> dl = {"sh", "-c", "cd \"$0\" && exec \"$@\"", debs.string()};
  auto a = apt({"download"});
  dl.insert(dl.end(), a.begin(), a.end());
  dl.insert(dl.end(), names.begin(), names.end());
  auto got = run(dl, 600s, "apt-get download");
  if (!got) {
    fs::remove_all(debs, ec);
    return make_error(got.error().message +
                      fmt::format(" (Python {} for {}: is it packaged in this Debian release?)",
                                  r.python_version, r.platform->debian_arch));
  }
  for (const auto& e : fs::directory_iterator(debs, ec))
    if (e.path().extension() == ".deb")
      if (auto x = run({"dpkg-deb", "-x", e.path().string(), sysroot.string()}, 300s,
                       "dpkg-deb -x " + e.path().filename().string());
          !x) {
        fs::remove_all(debs, ec);
        return make_error(x.error().message);
      }
  fs::remove_all(debs, ec);
  return {};
}

// The target Python's headers with its own pyconfig.h (Debian's dispatches on the compiler's
// architecture macros to a multiarch folder), and its sysconfig data pointing there.
Expected<void> python_layout(const CrossRequest& r, const fs::path& sysroot, const fs::path& root) {
  const std::string py = "python" + r.python_version;
  const fs::path headers = sysroot / "usr/include" / py;
  const fs::path pyconfig = sysroot / "usr/include" / r.platform->triplet / py / "pyconfig.h";
  const fs::path data = sysroot / "usr/lib" / py / (r.platform->sysconfigdata + ".py");
  for (const auto& p : {headers, pyconfig, data})
    if (!fs::exists(p))
      return make_error(fmt::format("Debian's packages of Python {} for {} lack {}",
                                    r.python_version, r.platform->debian_arch, p.string()));
  return make_part(root / "include", [&](const fs::path& tmp) -> Expected<void> {
    std::error_code ec;
    fs::copy(headers, tmp / py, fs::copy_options::recursive, ec);
    if (!ec)
      fs::copy_file(pyconfig, tmp / py / "pyconfig.h", fs::copy_options::overwrite_existing, ec);
    if (ec) return make_error("copying the target Python's headers: " + ec.message());
    auto text = read_file(data.string());
    if (!text) return make_error("cannot read " + data.string());
    fs::create_directories(root / "sysconfig", ec);
    return write_file_atomic(
        (root / "sysconfig" / (r.platform->sysconfigdata + ".py")).string(),
        rewrite_sysconfigdata(*text, r.python_version, (root / "include" / py).string()));
  });
}

// The public version of a local one: "2.11.0+cu130" -> "2.11.0".
std::string public_version(const std::string& v) { return v.substr(0, v.find('+')); }

Expected<void> fetch_torch(const CrossRequest& r, const fs::path& site, const Runner& run) {
  const std::string req = "torch==" + public_version(r.torch_version);
  r.say(fmt::format("tailor: cross: {} for {} (Python {}) from the index", req, r.platform->name,
                    r.python_version));
  std::vector<std::string> argv = {r.python, "-m",        "pip",      "install",
                                   "-q",     "--no-deps", "--target", site.string()};
  auto plat = pip_platform_args(r);
  argv.insert(argv.end(), plat.begin(), plat.end());
  argv.push_back(req);
  TAILOR_TRY_VOID(run(argv, 1800s, "pip install " + req + " for " + r.platform->name));
  // Its CUDA runtime, as torch requires it, for the link.
  std::string metadata;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(site, ec))
    if (e.path().filename().string().starts_with("torch-") && e.path().extension() == ".dist-info")
      metadata = read_file((e.path() / "METADATA").string()).value_or("");
  const std::string runtime = cuda_runtime_requirement(metadata);
  if (runtime.empty())
    return make_error(
        fmt::format("{} for {} names no CUDA runtime: a CPU build cannot link CUDA "
                    "code",
                    req, r.platform->name));
  std::vector<std::string> rt = {
      r.python, "-m", "pip", "install", "-q", "--target", (site / ".cuda-runtime").string()};
  rt.insert(rt.end(), plat.begin(), plat.end());
  rt.push_back(runtime);
  TAILOR_TRY_VOID(run(rt, 1800s, "pip install " + runtime + " for " + r.platform->name));
  return {};
}

// torch's other requirements, for the import test: the same platform tags.
Expected<void> fetch_runtime(const CrossRequest& r, const fs::path& build_site,
                             const fs::path& site, const Runner& run) {
  std::string metadata;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(build_site, ec))
    if (e.path().filename().string().starts_with("torch-") && e.path().extension() == ".dist-info")
      metadata = read_file((e.path() / "METADATA").string()).value_or("");
  auto reqs = runtime_requirements(metadata);
  r.say(fmt::format("tailor: cross: torch's {} requirements for the import test", reqs.size()));
  std::vector<std::string> argv = {r.python, "-m",       "pip",        "install",
                                   "-q",     "--target", site.string()};
  auto plat = pip_platform_args(r);
  argv.insert(argv.end(), plat.begin(), plat.end());
  argv.insert(argv.end(), reqs.begin(), reqs.end());
  TAILOR_TRY_VOID(run(argv, 1800s, "pip install torch's requirements for " + r.platform->name));
  return {};
}

// Linker names (libcudart.so) for the CUDA runtime the wheels ship under their sonames.
Expected<void> link_names(const fs::path& site, const fs::path& lib) {
  std::error_code ec;
  fs::create_directories(lib, ec);
  bool cudart = false;
  for (auto it = fs::recursive_directory_iterator(site, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t so = name.find(".so.");
    if (so == std::string::npos || !name.starts_with("lib")) continue;
    const fs::path link = lib / name.substr(0, so + 3);
    if (fs::exists(fs::symlink_status(link))) continue;
    fs::create_symlink(it->path(), link, ec);
    if (ec) return make_error("linking " + link.string() + ": " + ec.message());
    cudart = cudart || name.starts_with("libcudart.so.");
  }
  if (!cudart) return make_error("the target's CUDA runtime wheel holds no libcudart.so");
  return {};
}

}  // namespace

std::string find_qemu(const plan::CrossPlatform& platform) {
  for (const auto& name : platform.qemu)
    if (auto path = find_in_path(name); !path.empty()) return path;
  return "";
}

std::optional<cuda::CudaVersion> torch_cuda_from_version_py(std::string_view text) {
  static const std::regex re(R"(^cuda\s*(?::\s*[^=]+)?=\s*['"]([0-9]+\.[0-9]+)['"])",
                             std::regex::multiline);
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(text.begin(), text.end(), m, re)) return std::nullopt;
  auto v = cuda::parse_cuda_version(m[1].str());
  if (!v) return std::nullopt;
  return *v;
}

Expected<cuda::CudaVersion> target_torch_cuda(std::string_view version_py,
                                              const std::string& torch_version,
                                              const std::string& platform, cuda::CudaVersion nvcc) {
  auto cuda = torch_cuda_from_version_py(version_py);
  if (!cuda)
    return make_error(
        fmt::format("torch {} for {} is a CPU build (torch/version.py names no "
                    "CUDA): a CUDA extension needs a CUDA torch",
                    torch_version, platform));
  if (cuda->major != nvcc.major)
    return make_error(fmt::format(
        "torch {} for {} is built with CUDA {}, nvcc here is {}: their CUDA majors must match "
        "(use the nvcc of CUDA {}, or a torch built with CUDA {})",
        torch_version, platform, cuda->to_string(), nvcc.to_string(), cuda->major, nvcc.major));
  return *cuda;
}

std::string rewrite_sysconfigdata(std::string_view text, const std::string& python_version,
                                  const std::string& include_dir) {
  const std::string from = "/usr/include/python" + python_version;
  std::string out(text);
  for (const char q : {'\'', '"'})
    out = replace_all(out, std::string(1, q) + from + q, std::string(1, q) + include_dir + q);
  return "# tailor: the target Python's sysconfig data; its headers are " + include_dir + "\n" +
         out;
}

namespace {
// The Requires-Dist values of a METADATA text's headers: (requirement, marker). The headers
// end at the first empty line; the description follows.
std::vector<std::pair<std::string, std::string>> requires_dist(std::string_view metadata) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t end = metadata.find("\n\n");
  for (const auto& line : split_any(metadata.substr(0, end), "\n")) {
    std::string_view l = trim(line);
    if (!l.starts_with("Requires-Dist:")) continue;
    std::string_view v = trim(l.substr(14));
    size_t semi = v.find(';');
    out.emplace_back(std::string(trim(v.substr(0, semi))),
                     semi == std::string_view::npos ? "" : std::string(trim(v.substr(semi + 1))));
  }
  return out;
}
}  // namespace

std::string cuda_runtime_requirement(std::string_view metadata) {
  for (const auto& [req, marker] : requires_dist(metadata)) {
    if (marker.find("extra ==") != std::string::npos) continue;
    const std::string lower = to_lower(req);
    if (lower.starts_with("nvidia-cuda-runtime")) return req;
    if (lower.starts_with("cuda-toolkit") && lower.find("cudart") != std::string::npos) {
      // Only the runtime of the meta package's extras: the rest is the import test's.
      static const std::regex extras(R"(\[[^\]]*\])");
      return std::regex_replace(req, extras, "[cudart]");
    }
  }
  return "";
}

std::vector<std::string> runtime_requirements(std::string_view metadata) {
  std::vector<std::string> out;
  for (const auto& [req, marker] : requires_dist(metadata)) {
    if (marker.find("extra ==") != std::string::npos) continue;
    if (!marker.empty() && marker.find("Linux") == std::string::npos) continue;
    out.push_back(req);
  }
  return out;
}

Expected<plan::CrossTarget> prepare_cross_target(const CrossRequest& r, CommandRunner& runner) {
  const Runner run{runner};
  const plan::CrossPlatform& p = *r.platform;
  const std::string cache = r.cache_root.empty() ? user_cache_dir("cross") : r.cache_root;
  plan::CrossTarget t = cross_target_paths(r);
  const fs::path root = t.root;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return make_error(fmt::format("cannot create {}: {}", root.string(), ec.message()));
  auto lock = workpath::FolderLock::acquire(root.string(), workpath::FolderLock::Place::inside,
                                            true, stderr);
  if (!lock) return make_error(lock.error().message);
  // What an interrupted preparation left (under the lock, nobody else is writing): its
  // temporary parts and downloaded packages.
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp-") != std::string::npos || name.ends_with(".debs"))
      fs::remove_all(e.path(), ec);
  }

  const fs::path apt_state = fs::path(cache) / ("apt-" + p.debian_arch);
  // The runtime packages are small: the sysroot always has them, so one fetch serves both.
  CrossRequest all = r;
  all.for_import_test = true;
  TAILOR_TRY_VOID(make_part(root / "sysroot", [&](const fs::path& tmp) {
    return fetch_debian(all, apt_state, tmp, run);
  }));
  TAILOR_TRY_VOID(python_layout(r, root / "sysroot", root));
  TAILOR_TRY_VOID(make_part(root / "build-site",
                            [&](const fs::path& tmp) { return fetch_torch(r, tmp, run); }));
  TAILOR_TRY(cuda, target_torch_cuda(
                       read_file((root / "build-site/torch/version.py").string()).value_or(""),
                       t.torch_version, p.name, r.nvcc));
  t.torch_cuda = cuda.to_string();
  TAILOR_TRY_VOID(make_part(root / "cuda-lib", [&](const fs::path& tmp) {
    return link_names(root / "build-site/.cuda-runtime", tmp);
  }));
  if (r.for_import_test)
    TAILOR_TRY_VOID(make_part(root / "run-site", [&](const fs::path& tmp) {
      return fetch_runtime(r, root / "build-site", tmp, run);
    }));
  return t;
}

plan::CrossTarget cross_target_paths(const CrossRequest& r) {
  const plan::CrossPlatform& p = *r.platform;
  const std::string cache = r.cache_root.empty() ? user_cache_dir("cross") : r.cache_root;
  const fs::path root = fs::path(cache) / fmt::format("{}-py{}-torch{}", p.name, r.python_version,
                                                      public_version(r.torch_version));
  plan::CrossTarget t;
  t.platform = r.platform;
  t.root = root.string();
  t.python_version = r.python_version;
  t.torch_version = public_version(r.torch_version);
  t.sysroot = (root / "sysroot").string();
  t.sysconfig_dir = (root / "sysconfig").string();
  t.include_dir = (root / "include" / ("python" + r.python_version)).string();
  t.torch_dir = (root / "build-site" / "torch").string();
  t.cuda_lib_dir = (root / "cuda-lib").string();
  t.site_dir = (root / "run-site").string();
  t.python = (root / "sysroot/usr/bin" / ("python" + r.python_version)).string();
  return t;
}

}  // namespace tailor::workflow
