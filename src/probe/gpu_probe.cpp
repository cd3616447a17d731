// GPUs and the driver: NVML first (what the driver itself says, no process to start),
// nvidia-smi when the library cannot be loaded, and an empty list with a note when
// neither is there: a host without a GPU is a normal answer, not an error.
#include <dlfcn.h>

#include <cctype>
#include <charconv>

#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

// The few NVML entry points used, declared here so no NVML header is needed. Their ABI
// is stable across drivers for these versioned names.
using nvmlReturn = int;
using nvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
constexpr nvmlReturn k_nvml_success = 0;

struct NvmlLibrary {
  void* handle = nullptr;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  nvmlReturn (*get_count)(unsigned*) = nullptr;
  nvmlReturn (*get_handle)(unsigned, nvmlDevice*) = nullptr;
  nvmlReturn (*get_name)(nvmlDevice, char*, unsigned) = nullptr;
  nvmlReturn (*get_cc)(nvmlDevice, int*, int*) = nullptr;
  nvmlReturn (*get_memory)(nvmlDevice, NvmlMemory*) = nullptr;
  nvmlReturn (*get_uuid)(nvmlDevice, char*, unsigned) = nullptr;
  nvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn (*cuda_driver_version)(int*) = nullptr;
  ~NvmlLibrary() {
    if (handle) dlclose(handle);
  }
};

template <typename F>
bool bind(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  return out != nullptr;
}

std::string trimmed(std::string_view s) { return std::string(trim(s)); }

}  // namespace

Expected<GpuQueryResult> NvmlGpuQuery::query() {
  NvmlLibrary lib;
  lib.handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) return make_error("libnvidia-ml.so.1 not loadable (no NVIDIA driver)");
  if (!bind(lib.handle, "nvmlInit_v2", lib.init) ||
      !bind(lib.handle, "nvmlShutdown", lib.shutdown) ||
      !bind(lib.handle, "nvmlDeviceGetCount_v2", lib.get_count) ||
      !bind(lib.handle, "nvmlDeviceGetHandleByIndex_v2", lib.get_handle) ||
      !bind(lib.handle, "nvmlDeviceGetName", lib.get_name) ||
      !bind(lib.handle, "nvmlDeviceGetCudaComputeCapability", lib.get_cc) ||
      !bind(lib.handle, "nvmlDeviceGetMemoryInfo", lib.get_memory) ||
      !bind(lib.handle, "nvmlSystemGetDriverVersion", lib.driver_version))
    return make_error("libnvidia-ml.so.1 lacks an expected entry point");
  bind(lib.handle, "nvmlDeviceGetUUID", lib.get_uuid);
  bind(lib.handle, "nvmlSystemGetCudaDriverVersion_v2", lib.cuda_driver_version);
  if (int rc = lib.init(); rc != k_nvml_success)
    return make_error("nvmlInit_v2 failed with NVML error " + std::to_string(rc));

  GpuQueryResult result;
  GpuDriver driver;
  driver.source = "nvml";
  char buf[256] = {};
  if (lib.driver_version(buf, sizeof buf) == k_nvml_success) driver.version = buf;
  int cuda = 0;
  if (lib.cuda_driver_version && lib.cuda_driver_version(&cuda) == k_nvml_success)
    if (auto v = cuda::cuda_version_from_driver(cuda)) driver.cuda_version = *v;
  result.driver = driver;

  unsigned count = 0;
  if (lib.get_count(&count) != k_nvml_success) count = 0;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice dev = nullptr;
    if (lib.get_handle(i, &dev) != k_nvml_success) continue;
    HostGpu gpu;
    gpu.index = static_cast<int>(i);
    char name[256] = {};
    if (lib.get_name(dev, name, sizeof name) == k_nvml_success) gpu.name = name;
    int major = 0, minor = 0;
    if (lib.get_cc(dev, &major, &minor) == k_nvml_success)
      gpu.compute_capability = cuda::ComputeCapability{major, minor};
    NvmlMemory mem{};
    if (lib.get_memory(dev, &mem) == k_nvml_success) gpu.memory_bytes = mem.total;
    char uuid[128] = {};
    if (lib.get_uuid && lib.get_uuid(dev, uuid, sizeof uuid) == k_nvml_success) gpu.uuid = uuid;
    result.gpus.push_back(std::move(gpu));
  }
  lib.shutdown();
  return result;
}

Expected<GpuQueryResult> parse_nvidia_smi_csv(const std::string& text) {
  GpuQueryResult result;
  int line_no = 0;
  for (const auto& line : split_any(text, "\n")) {
    ++line_no;
    if (trim(line).empty()) continue;
    // GPU names hold no commas; a row is exactly six fields.
    std::vector<std::string> f;
    size_t start = 0;
    while (true) {
      auto comma = line.find(',', start);
      f.push_back(trimmed(std::string_view(line).substr(
          start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (f.size() != 6)
      return make_error("nvidia-smi line " + std::to_string(line_no) + ": expected 6 fields, got " +
                        std::to_string(f.size()) + ": " + line);
    HostGpu gpu;
    auto [p, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), gpu.index);
    if (ec != std::errc() || p != f[0].data() + f[0].size())
      return make_error("nvidia-smi line " + std::to_string(line_no) + ": bad index '" + f[0] +
                        "'");
    gpu.name = f[1];
    if (auto cc = cuda::parse_compute_capability(f[2]))
      gpu.compute_capability = *cc;  // "[N/A]": unknown
    uint64_t mib = 0;
    auto [q, ec2] = std::from_chars(f[3].data(), f[3].data() + f[3].size(), mib);
    if (ec2 == std::errc() && q == f[3].data() + f[3].size()) gpu.memory_bytes = mib * 1024 * 1024;
    gpu.uuid = f[4];
    if (!result.driver) result.driver = GpuDriver{f[5], std::nullopt, "nvidia-smi"};
    result.gpus.push_back(std::move(gpu));
  }
  return result;
}

GpuQueryResult probe_gpus(GpuQuery& gpus, CommandRunner& runner, std::vector<std::string>& notes) {
  auto nvml = gpus.query();
  if (nvml) {
    if (nvml->gpus.empty())
      notes.push_back("no GPU: the NVIDIA driver is loaded but reports no device");
    return *nvml;
  }
  CommandSpec spec;
  spec.argv = {"nvidia-smi", "--query-gpu=index,name,compute_cap,memory.total,uuid,driver_version",
               "--format=csv,noheader,nounits"};
  spec.timeout = std::chrono::seconds(15);
  auto r = runner.run(spec);
  if (!r.started) {
    notes.push_back("no GPU: " + nvml.error().message + ", and nvidia-smi not found");
    return {};
  }
  if (r.timed_out) {
    notes.push_back("no GPU: " + nvml.error().message + ", and nvidia-smi timed out after 15 s");
    return {};
  }
  if (r.exit_code != 0) {
    std::string why = trimmed(r.out + r.err);
    if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    notes.push_back("no GPU: " + nvml.error().message + ", and nvidia-smi failed: " + why);
    return {};
  }
  auto parsed = parse_nvidia_smi_csv(r.out);
  if (!parsed) {
    notes.push_back("GPU query: " + parsed.error().message);
    return {};
  }
  if (parsed->gpus.empty()) notes.push_back("no GPU: nvidia-smi lists no device");
  // The CUDA version the driver supports appears only in nvidia-smi's banner.
  if (parsed->driver) {
    CommandSpec banner;
    banner.argv = {"nvidia-smi"};
    banner.timeout = std::chrono::seconds(15);
    auto b = runner.run(banner);
    if (b.ok()) parsed->driver->cuda_version = parse_smi_cuda_version(b.out);
  }
  return *parsed;
}

std::optional<cuda::CudaVersion> parse_smi_cuda_version(const std::string& banner) {
  auto pos = banner.find("CUDA Version:");
  if (pos == std::string::npos) return std::nullopt;
  auto rest = std::string_view(banner).substr(pos + 13);
  rest = trim(rest);
  size_t n = 0;
  while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '.'))
    ++n;
  auto v = cuda::parse_cuda_version(rest.substr(0, n));
  if (!v) return std::nullopt;
  return *v;
}

std::vector<cuda::DetectedGpu> detected_gpus(const std::vector<HostGpu>& gpus) {
  std::vector<cuda::DetectedGpu> out;
  for (const auto& g : gpus) out.push_back({g.index, g.name, g.compute_capability});
  return out;
}

std::function<std::vector<cuda::DetectedGpu>()> gpu_detector() {
  return [] {
    NvmlGpuQuery nvml;
    SystemCommandRunner runner;
    std::vector<std::string> notes;
    return detected_gpus(probe_gpus(nvml, runner, notes).gpus);
  };
}

}  // namespace tailor::probe
