// The target platform (and CPU) that a variant's GPU names imply: an instance type or a
// GPU that exists on one platform only (g5g.xlarge and T4G: aarch64 with Graviton2 =
// Neoverse N1; GH200: aarch64 with Grace) means a wheel for that platform, whatever the
// host tailor runs on. Facts: the `host` and `cpu_target` of data/cuda/instances.toml and
// data/cuda/gpus.toml (loaded by cuda/gpu_catalog).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::plan {

struct ImpliedPlatform {
  std::string platform;    ///< "aarch64" | "x86_64"
  std::string cpu_target;  ///< "neoverse-n1"; empty when not known or the names disagree
  std::string source;      ///< the names that imply it, as typed: "g5g.xlarge"
};

/// nullopt when no name implies a platform; an error naming both when two disagree
/// ("T4G is aarch64 only, g4dn.xlarge is x86_64").
Expected<std::optional<ImpliedPlatform>> implied_platform(const std::vector<std::string>& gpu_specs);

/// "aarch64" from "arm64"/"sbsa", "x86_64" from "amd64"/"x64", otherwise lowercased.
std::string normalize_platform(std::string_view platform);

/// The platform a variant asked for (explicitly or through its GPU names), or an error
/// when the two disagree: "--platform x86_64 conflicts with g5g.xlarge (aarch64 only)".
/// nullopt when neither says (the host's is used).
Expected<std::optional<std::string>> variant_platform(const std::optional<std::string>& asked,
                                                      const std::vector<std::string>& gpu_specs);

}  // namespace tailor::plan
