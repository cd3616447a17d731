// torch's named architectures (Kepler ... Blackwell, "+Tegra" forms), from
// data/cuda/named_arches.toml, with the meaning torch's cpp_extension gives them.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tailor::cuda {

struct NamedArch {
  std::string name;       ///< "Hopper", "Ampere+Tegra"
  std::string arch_list;  ///< "9.0+PTX" in TORCH_CUDA_ARCH_LIST spelling
};

const std::vector<NamedArch>& named_arches();
/// Case-insensitive lookup.
std::optional<NamedArch> find_named_arch(std::string_view name);

}  // namespace tailor::cuda
