#include "cuda/named_arches.h"

#include "cuda/data_loading.h"
#include "util/strings.h"

namespace tailor::cuda {

namespace {
constexpr std::string_view k_file = "cuda/named_arches.toml";

std::vector<NamedArch> load() {
  std::vector<NamedArch> out;
  const toml::table t = detail::load_table(k_file);
  if (auto* list = t["named"].as_array()) {
    for (const auto& node : *list) {
      toml::node_view<const toml::node> n{node};
      out.push_back({detail::require<std::string>(n["name"], k_file, "name"),
                     detail::require<std::string>(n["arch_list"], k_file, "arch_list")});
    }
  }
  return out;
}
}  // namespace

const std::vector<NamedArch>& named_arches() {
  static const std::vector<NamedArch> list = load();
  return list;
}

std::optional<NamedArch> find_named_arch(std::string_view name) {
  const std::string n = to_lower(name);
  for (const auto& a : named_arches())
    if (to_lower(a.name) == n) return a;
  return std::nullopt;
}

}  // namespace tailor::cuda
