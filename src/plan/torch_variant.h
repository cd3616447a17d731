// A PyTorch build variant: what the user asked for, from command-line flags or a
// tailor.toml, before anything is resolved against a host. Every field is optional so
// that a config file's defaults, a named variant and explicit flags can be layered
// (overlay): resolution (torch_plan.h) fills in what nobody said.
#pragma once
#include <toml++/toml.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_version.h"
#include "util/expected.h"

namespace tailor::plan {

struct TorchVariant {
  std::string name;                       ///< "pytorch-sm90-avx512" (config / matrix), may be empty
  std::optional<std::string> torch;       ///< release "2.9.1"
  std::optional<std::string> source_dir;  ///< a local source tree instead of a tag
  /// --git / `git`: the repository the release tag is cloned from instead of the catalog's
  /// (a mirror, another remote, file:///PATH); meaningless with source_dir.
  std::optional<std::string> git_url;
  std::optional<cuda::CudaVersion> cuda;  ///< 12.6, parsed once from "12.6" or "cu126"
  std::optional<bool> cpu_only;
  std::optional<std::string> python;  ///< "3.10"
  std::vector<std::string> arch;      ///< GPU target specs as typed (any `tailor arch` spelling)
  /// --gpu: GPUs as typed (T4G, A10G, g5g.xlarge, 8.6), each one's SASS; never with `arch`
  /// (cuda::resolve_target_request). A tailor.toml's `gpu` key is `arch`'s other name.
  std::vector<std::string> gpu;
  std::optional<std::string> cpu_target;  ///< "avx512", "x86-64-v3", "neoverse-v2"
  std::optional<std::string> blas;        ///< "openblas" | "mkl"
  std::map<std::string, bool> features;   ///< explicit --with (true) / --without (false)
  std::optional<std::string> build_type;  ///< Release | RelWithDebInfo | Debug | MinSizeRel
  std::optional<bool> keep_debug;
  std::optional<std::string> compress;   ///< size | speed | none
  std::optional<std::string> platform;   ///< x86_64 | aarch64 (target platform)
  std::optional<std::string> manylinux;  ///< "2_28"
  /// --system-libs / `system_libs`: every vendored library with a switch from the system
  /// (USE_SYSTEM_LIBS=ON, as Debian, nixpkgs and conda-forge build).
  std::optional<bool> system_libs;
};

/// `top` wins wherever it says something; features merge key by key; arch or gpu in top
/// replaces both of base's.
TorchVariant overlay(const TorchVariant& base, const TorchVariant& top);

/// One variant table of a tailor.toml (`[defaults]`, `[variant.NAME]`, a matrix row).
/// Unknown keys are errors naming the key, so a typo never silently does nothing.
Expected<TorchVariant> variant_from_toml(const toml::table& table, std::string_view where);

/// "12.6", "12.6.3" or "cu126" -> 12.6; "none"/"cpu" -> nullopt (CPU-only); else an error.
Expected<std::optional<cuda::CudaVersion>> parse_cuda_choice(std::string_view text);

}  // namespace tailor::plan
