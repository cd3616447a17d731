#include "cuda/named_arches.h"

#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::cuda {

namespace {
constexpr std::string_view k_file = "cuda/named_arches.toml";

std::vector<NamedArch> load() {
  std::vector<NamedArch> out;
  for (const auto& n : data::toml_document(k_file)["named"].array())
    out.push_back({n["name"].string(), n["arch_list"].string()});
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
