// Minimal implementation so dependants link while the probe fills in.
#include "probe/probe.h"

namespace tailor::probe {

Expected<GpuQueryResult> NvmlGpuQuery::query() { return make_error("NVML not probed yet"); }
Expected<GpuQueryResult> parse_nvidia_smi_csv(const std::string&) { return GpuQueryResult{}; }
std::string cuda_version_from_int(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
HostReport probe_host(const ProbeOptions& o) {
  SystemHostFiles f;
  SystemCommandRunner r;
  NvmlGpuQuery g;
  return probe_host(o, f, r, g);
}
HostReport probe_host(const ProbeOptions&, HostFiles&, CommandRunner&, GpuQuery&) { return {}; }
MemoryInfo probe_memory(HostFiles&) { return {}; }
CpuInfo probe_cpu(HostFiles&) { return {}; }
GpuQueryResult probe_gpus(GpuQuery&, CommandRunner&, std::vector<std::string>&) { return {}; }
std::optional<PythonInstall> probe_python(const std::string&, CommandRunner&) { return std::nullopt; }
std::vector<PythonInstall> probe_pythons(HostFiles&, CommandRunner&, const std::vector<std::string>&,
                                         std::vector<std::string>&) { return {}; }
std::vector<CudaToolkit> find_cuda_toolkits(HostFiles&, CommandRunner&) { return {}; }
std::vector<Compiler> find_host_compilers(HostFiles&, CommandRunner&) { return {}; }
std::vector<Tool> find_tools(HostFiles&, CommandRunner&) { return {}; }
MeminfoFields parse_meminfo(const std::string&) { return {}; }
std::string x86_isa_level(const std::set<std::string>&) { return "x86-64"; }
std::string aarch64_isa_level(const std::set<std::string>&) { return "armv8-a"; }
std::set<std::string> cpuid_features() { return {}; }
std::optional<std::string> parse_nvcc_version(const std::string&) { return std::nullopt; }
std::optional<std::string> parse_cudnn_version(const std::string&) { return std::nullopt; }
std::optional<std::string> parse_nccl_version(const std::string&) { return std::nullopt; }
std::optional<int> parse_host_config_max_gcc(const std::string&) { return std::nullopt; }
Expected<PythonInstall> parse_python_probe(const std::string&) { return make_error("not yet"); }
std::optional<Compiler> parse_compiler_version(const std::string&) { return std::nullopt; }
nlohmann::json to_json(const HostReport&) { return nlohmann::json::object(); }

}  // namespace tailor::probe
