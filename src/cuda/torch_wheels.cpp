#include "cuda/torch_wheels.h"

#include "cuda/data_loading.h"

namespace tailor::cuda {

namespace {
constexpr std::string_view k_file = "cuda/torch_wheels.toml";

std::vector<OfficialArchList> load() {
  std::vector<OfficialArchList> out;
  const toml::table t = detail::load_table(k_file);
  if (auto* list = t["wheel"].as_array()) {
    for (const auto& node : *list) {
      toml::node_view<const toml::node> n{node};
      out.push_back({detail::require<std::string>(n["cuda"], k_file, "cuda"),
                     detail::require<std::string>(n["platform"], k_file, "platform"),
                     detail::require<std::string>(n["torch_cuda_arch_list"], k_file, "torch_cuda_arch_list"),
                     n["note"].value_or(std::string())});
    }
  }
  return out;
}
}  // namespace

const std::vector<OfficialArchList>& official_torch_arch_lists() {
  static const std::vector<OfficialArchList> list = load();
  return list;
}

}  // namespace tailor::cuda
