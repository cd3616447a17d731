// GPUs and driver. NVML is loaded at run time (dlopen) so tailor runs on hosts without a
// driver; the interface lets tests stand in for it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "probe/host_report.h"
#include "util/expected.h"

namespace tailor::probe {

struct GpuQueryResult {
  std::vector<HostGpu> gpus;
  std::optional<GpuDriver> driver;
};

class GpuQuery {
 public:
  virtual ~GpuQuery() = default;
  /// An error when the query mechanism itself is unavailable (no libnvidia-ml, init
  /// failed); the caller then falls back to nvidia-smi.
  virtual Expected<GpuQueryResult> query() = 0;
};

/// NVML through dlopen("libnvidia-ml.so.1").
class NvmlGpuQuery : public GpuQuery {
 public:
  Expected<GpuQueryResult> query() override;
};

/// `nvidia-smi --query-gpu=index,name,compute_cap,memory.total,uuid,driver_version
/// --format=csv,noheader,nounits` output (memory in MiB).
Expected<GpuQueryResult> parse_nvidia_smi_csv(const std::string& text);

/// "CUDA Version: 13.0" from the banner of a plain `nvidia-smi`; nullopt when absent or
/// unreadable. (NVML's integer goes through cuda::cuda_version_from_driver.)
std::optional<cuda::CudaVersion> parse_smi_cuda_version(const std::string& banner);

}  // namespace tailor::probe
