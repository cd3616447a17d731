// probe_host(): every piece of the host report, over real or fake side effects.
#include <future>

#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

HostOs probe_os(HostFiles& files) {
  HostOs os;
  os.arch = files.machine();
  os.glibc = files.libc_version();
  if (auto k = files.read("/proc/sys/kernel/osrelease")) os.kernel = std::string(trim(*k));
  if (auto rel = files.read("/etc/os-release")) {
    for (const auto& line : split_any(*rel, "\n")) {
      if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
      std::string v = line.substr(12);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
      os.name = v;
    }
  }
  return os;
}

}  // namespace

HostReport probe_host(const ProbeOptions& options, HostFiles& files, CommandRunner& runner,
                      GpuQuery& gpus) {
  HostReport report;
  // Importing torch dominates the run time; start it first and probe the rest meanwhile.
  std::future<std::vector<PythonInstall>> pythons;
  std::vector<std::string> python_notes;
  if (options.probe_pythons) {
    pythons = std::async(std::launch::async, [&] {
      return probe_pythons(files, runner, options.pythons, python_notes, options.python_timeout);
    });
  }
  report.os = probe_os(files);
  report.cpu = probe_cpu(files);
  report.memory = probe_memory(files);
  report.disk.path = files.realpath(options.build_dir);
  if (auto space = files.disk_space(options.build_dir)) {
    report.disk.free_bytes = space->free_bytes;
    report.disk.total_bytes = space->total_bytes;
  } else {
    report.notes.push_back("free disk of " + options.build_dir + " unknown (path not found)");
  }
  auto gpu = probe_gpus(gpus, runner, report.notes);
  report.gpus = std::move(gpu.gpus);
  report.driver = std::move(gpu.driver);
  report.compilers = find_host_compilers(files, runner);
  if (report.compilers.empty()) report.notes.push_back("no host C++ compiler (gcc/clang) on PATH");
  report.cuda_toolkits = find_cuda_toolkits(files, runner, report.compilers);
  if (report.cuda_toolkits.empty())
    report.notes.push_back(
        "no CUDA toolkit: no nvcc under CUDA_HOME, CUDA_PATH, PATH or /usr/local/cuda*");
  for (const auto& tk : report.cuda_toolkits)
    if (tk.version.empty()) report.notes.push_back(tk.nvcc + " --version failed");
  report.tools = find_tools(files, runner);
  for (const char* name : {"ninja", "cmake"}) {
    bool found = false;
    for (const auto& t : report.tools) found = found || t.name == name;
    if (!found) report.notes.push_back(std::string(name) + " not found on PATH");
  }
  if (options.probe_pythons) {
    report.pythons = pythons.get();
    report.notes.insert(report.notes.end(), python_notes.begin(), python_notes.end());
  }
  return report;
}

HostReport probe_host(const ProbeOptions& options) {
  SystemHostFiles files;
  SystemCommandRunner runner;
  NvmlGpuQuery gpus;
  return probe_host(options, files, runner, gpus);
}

}  // namespace tailor::probe
