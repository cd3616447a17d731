// CUDA toolkits: every nvcc a build could pick up, its version, the cuDNN and NCCL it
// would compile against, and which host compilers it accepts.
#include "probe/cuda_toolkit_probe.h"

#include <regex>
#include <set>

#include "probe/probe.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::probe {
namespace {

std::string dirname(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// `#define NAME 12` -> 12.
std::optional<int> define_value(const std::string& header, const std::string& name) {
  std::regex re("#\\s*define\\s+" + name + "\\s+\\(?\\s*(\\d+)");
  std::smatch m;
  if (!std::regex_search(header, m, re)) return std::nullopt;
  return std::stoi(m[1].str());
}

std::optional<std::string> three_part(const std::string& header, const char* major,
                                      const char* minor, const char* patch) {
  auto a = define_value(header, major), b = define_value(header, minor),
       c = define_value(header, patch);
  if (!a || !b) return std::nullopt;
  return std::to_string(*a) + "." + std::to_string(*b) + "." + std::to_string(c.value_or(0));
}

/// Where a header such as cudnn_version.h may live for `root`: the toolkit itself, the
/// distribution's include folders, and the nvidia-* pip wheels that torch pulls in.
std::vector<std::string> header_candidates(HostFiles& files, const std::string& root,
                                           const std::string& wheel, const std::string& name,
                                           const char* home_env) {
  std::vector<std::string> out;
  if (auto h = files.getenv(home_env)) out.push_back(*h + "/include/" + name);
  out.push_back(root + "/include/" + name);
  for (const auto& p : files.glob(root + "/targets/*/include/" + name)) out.push_back(p);
  out.push_back("/usr/include/" + name);
  for (const auto& p : files.glob("/usr/include/*-linux-gnu/" + name)) out.push_back(p);
  out.push_back("/usr/local/include/" + name);
  std::vector<std::string> site_globs = {"/usr/local/lib/python3*/*-packages",
                                         "/usr/lib/python3*/*-packages"};
  if (auto home = files.getenv("HOME")) {
    site_globs.push_back(*home + "/.local/lib/python3*/site-packages");
    site_globs.push_back(*home + "/.pyenv/versions/*/lib/python3*/site-packages");
  }
  if (auto pyenv = files.getenv("PYENV_ROOT"))
    site_globs.push_back(*pyenv + "/versions/*/lib/python3*/site-packages");
  for (const auto& g : site_globs)
    for (const auto& p : files.glob(g + "/nvidia/" + wheel + "/include/" + name)) out.push_back(p);
  return out;
}

std::string first_header_version(HostFiles& files, const std::vector<std::string>& candidates,
                                 std::optional<std::string> (*parse)(const std::string&)) {
  for (const auto& path : candidates) {
    if (auto text = files.read(path))
      if (auto v = parse(*text)) return *v;
  }
  return "";
}

std::optional<int> clang_max_from_header(const std::string& header) {
  // The host (non-Grace) clang check: `__clang_major__ >= 21` -> 20.
  std::regex ge("\\(__clang_major__\\s*>=\\s*(\\d+)\\)"),
      gt("\\(__clang_major__\\s*>\\s*(\\d+)\\)");
  std::optional<int> best;
  for (const auto& line : split_any(header, "\n")) {
    if (line.find("#if") == std::string::npos || line.find("GRCO") != std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(line, m, ge))
      best = std::stoi(m[1].str()) - 1;
    else if (std::regex_search(line, m, gt))
      best = std::stoi(m[1].str());
    if (best) return best;
  }
  return best;
}

}  // namespace

std::optional<std::string> parse_nvcc_version(const std::string& text) {
  std::smatch m;
  static const std::regex full("release\\s+\\d+\\.\\d+,\\s+V(\\d+\\.\\d+\\.\\d+)");
  if (std::regex_search(text, m, full)) return m[1].str();
  static const std::regex release("release\\s+(\\d+\\.\\d+)");
  if (std::regex_search(text, m, release)) return m[1].str();
  return std::nullopt;
}

std::optional<std::string> parse_cudnn_version(const std::string& header) {
  return three_part(header, "CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL");
}

std::optional<std::string> parse_nccl_version(const std::string& header) {
  return three_part(header, "NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH");
}

std::optional<int> parse_host_config_max_gcc(const std::string& header) {
  std::smatch m;
  static const std::regex gt("#\\s*if\\s+__GNUC__\\s*>\\s*(\\d+)"),
      ge("#\\s*if\\s+__GNUC__\\s*>=\\s*(\\d+)");
  if (std::regex_search(header, m, gt)) return std::stoi(m[1].str());
  if (std::regex_search(header, m, ge)) return std::stoi(m[1].str()) - 1;
  return std::nullopt;
}

std::optional<int> parse_host_config_max_clang(const std::string& header) {
  return clang_max_from_header(header);
}

std::optional<int> host_compiler_max_major(const CudaToolkit& toolkit, CompilerKind kind) {
  switch (kind) {
    case CompilerKind::gcc:
      return toolkit.max_gcc_major;
    case CompilerKind::clang:
      return toolkit.max_clang_major;
    case CompilerKind::other:
      break;
  }
  return std::nullopt;
}

std::optional<bool> toolkit_accepts_compiler(const CudaToolkit& toolkit, const Compiler& compiler) {
  std::optional<int> max = host_compiler_max_major(toolkit, compiler.kind);
  if (!max || compiler.major <= 0) return std::nullopt;
  return compiler.major <= *max;
}

std::vector<std::string> accepted_host_compilers(const CudaToolkit& toolkit,
                                                 const std::vector<Compiler>& compilers) {
  std::vector<std::string> out;
  for (const auto& c : compilers)
    if (toolkit_accepts_compiler(toolkit, c) == true) out.push_back(c.path);
  return out;
}

std::vector<CudaToolkit> find_cuda_toolkits(HostFiles& files, CommandRunner& runner,
                                            const std::vector<Compiler>& compilers) {
  std::vector<std::string> candidates;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (auto root = files.getenv(env); root && !root->empty())
      candidates.push_back(*root + "/bin/nvcc");
  if (auto on_path = find_executable(files, "nvcc"); !on_path.empty())
    candidates.push_back(on_path);
  for (const char* g : {"/usr/local/cuda/bin/nvcc", "/usr/local/cuda*/bin/nvcc",
                        "/opt/cuda*/bin/nvcc", "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"})
    for (const auto& p : files.glob(g)) candidates.push_back(p);

  std::vector<CudaToolkit> out;
  std::set<std::string> seen;
  for (const auto& nvcc : candidates) {
    if (!files.is_executable(nvcc)) continue;
    std::string real = files.realpath(nvcc);
    if (!seen.insert(real).second) continue;
    CudaToolkit tk;
    tk.nvcc = real;
    tk.root = dirname(dirname(real));
    CommandSpec spec;
    spec.argv = {real, "--version"};
    spec.timeout = std::chrono::seconds(10);
    auto r = runner.run(spec);
    if (r.ok()) {
      if (auto v = parse_nvcc_version(r.out)) {
        tk.version = *v;
        if (auto release = cuda::parse_cuda_version(*v)) tk.release = *release;
      }
    }
    tk.cudnn_version = first_header_version(
        files, header_candidates(files, tk.root, "cudnn", "cudnn_version.h", "CUDNN_HOME"),
        parse_cudnn_version);
    if (tk.cudnn_version.empty())  // cuDNN 7 kept the version in cudnn.h
      tk.cudnn_version = first_header_version(
          files, header_candidates(files, tk.root, "cudnn", "cudnn.h", "CUDNN_HOME"),
          parse_cudnn_version);
    tk.nccl_version = first_header_version(
        files, header_candidates(files, tk.root, "nccl", "nccl.h", "NCCL_HOME"),
        parse_nccl_version);
    if (auto hc = files.read(tk.root + "/include/crt/host_config.h")) {
      tk.max_gcc_major = parse_host_config_max_gcc(*hc);
      tk.max_clang_major = parse_host_config_max_clang(*hc);
    }
    tk.accepted_host_compilers = accepted_host_compilers(tk, compilers);
    out.push_back(std::move(tk));
  }
  return out;
}

std::vector<CudaToolkit> find_cuda_toolkits(HostFiles& files, CommandRunner& runner) {
  return find_cuda_toolkits(files, runner, find_host_compilers(files, runner));
}

}  // namespace tailor::probe
