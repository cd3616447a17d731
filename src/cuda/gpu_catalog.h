// GPU models, the compute capabilities they have and the cloud instances that carry
// them: data/cuda/gpus.toml and data/cuda/instances.toml.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/compute_capability.h"

namespace tailor::cuda {

struct GpuModel {
  std::string name;                  ///< "H100"
  std::vector<std::string> aliases;  ///< other names people and drivers use
  ComputeCapability cc;
  std::string family;  ///< "Hopper"
  bool tegra = false;
  std::string host_arch;   ///< "x86_64", "aarch64" (T4G, GH200), "any"
  std::string cpu_target;  ///< the CPU of every host that carries it ("neoverse-n1"), or ""
};

/// A known compute capability: its family and whether it is a Tegra part.
struct CapabilityFacts {
  ComputeCapability cc;
  std::string family;
  bool tegra = false;
};

const std::vector<GpuModel>& gpu_catalog();
/// Every CC tailor knows (3.5 ... 12.1), ascending.
const std::vector<CapabilityFacts>& known_capabilities();
std::optional<CapabilityFacts> find_capability(ComputeCapability cc);
/// Case-insensitive and tolerant of vendor decoration, so a detected device name maps
/// to its model: "NVIDIA H100 80GB HBM3" -> H100, "Tesla T4" -> T4, "rtx4090" -> RTX 4090.
std::optional<GpuModel> find_gpu(std::string_view name);
/// GPU models with this CC (for "runs on" examples).
std::vector<GpuModel> gpus_with_capability(ComputeCapability cc);

struct CloudInstance {
  std::string family;      ///< "g5g", "p4d", "a3-highgpu"
  std::string cloud;       ///< "aws", "gcp"
  std::string gpu;         ///< a name in gpu_catalog()
  std::string host_arch;   ///< "x86_64" | "aarch64": the CPU architecture of the family
  std::string cpu_target;  ///< its CPU ("neoverse-n1" for g5g), or "" where not one
};
const std::vector<CloudInstance>& cloud_instances();
/// "g5g.xlarge", "g5g", "a2-highgpu-1g" -> the instance family, case-insensitive.
std::optional<CloudInstance> find_instance(std::string_view instance_type);

/// The platform a GPU or instance name implies: it exists only on that platform.
struct PlatformHint {
  std::string name;        ///< the name as typed: "g5g.xlarge", "T4G"
  std::string what;        ///< "instance g5g" | "GPU T4G"
  std::string host_arch;   ///< "x86_64" | "aarch64"
  std::string cpu_target;  ///< "neoverse-n1", or "" where the CPU is not one
};
/// Every instance type and single-platform GPU named in a target spec (any `tailor arch`
/// spelling; entries that are not names imply nothing): "g5g.xlarge;8.0" -> g5g (aarch64).
std::vector<PlatformHint> platform_hints(std::string_view spec);

}  // namespace tailor::cuda
