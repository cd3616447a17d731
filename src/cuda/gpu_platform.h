// The target platform (and CPU) that GPU and instance names imply: an instance type or a
// GPU that exists on one platform only (g5g.xlarge and T4G: aarch64 with Graviton2 =
// Neoverse N1; GH200: aarch64 with Grace) means that platform, whatever the host tailor
// runs on. One rule for every command: plan picks the wheel's platform from it, build
// refuses a host of another platform, inspect fails a library of another machine, stack
// resolves for it. Facts: the `host` and `cpu_target` of data/cuda/instances.toml and
// data/cuda/gpus.toml (loaded by gpu_catalog).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/gpu_catalog.h"
#include "util/expected.h"

namespace tailor::cuda {

struct ImpliedPlatform {
  std::string platform;             ///< "aarch64" | "x86_64"
  std::string cpu_target;           ///< "neoverse-n1"; empty when not known or the names disagree
  std::string source;               ///< the names that imply it, as typed: "g5g.xlarge"
  std::vector<PlatformHint> hints;  ///< one per name, in the order typed
};

/// nullopt when no name implies a platform; an error naming both when two disagree
/// ("T4G (GPU T4G) exists only on aarch64, g4dn.xlarge (instance g4dn) only on x86_64 ...").
Expected<std::optional<ImpliedPlatform>> implied_platform(
    const std::vector<std::string>& gpu_specs);

/// "aarch64" from "arm64"/"sbsa", "x86_64" from "amd64"/"x64", otherwise lowercased.
std::string normalize_platform(std::string_view platform);

/// The platform a variant asked for (explicitly or through its GPU names), or an error
/// when the two disagree: "platform x86_64 conflicts with g5g.xlarge, which exists only on
/// aarch64". nullopt when neither says (the host's is used).
Expected<std::optional<std::string>> variant_platform(const std::optional<std::string>& asked,
                                                      const std::vector<std::string>& gpu_specs);

/// The one rule for a machine (an ELF's, a host's): empty when it fits the implied
/// platform or is not a CPU platform tailor knows ("cuda", "em_<n>", ""), else the reason
/// in one line: "T4G (g5g) exists only on aarch64; this library is x86_64", with `what`
/// = "this library".
std::string platform_mismatch(const ImpliedPlatform& implied, std::string_view machine,
                              std::string_view what);

}  // namespace tailor::cuda
