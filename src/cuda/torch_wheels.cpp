#include "cuda/torch_wheels.h"

#include "data/toml_document.h"

namespace tailor::cuda {

namespace {
constexpr std::string_view k_file = "cuda/torch_wheels.toml";

std::vector<OfficialArchList> load() {
  std::vector<OfficialArchList> out;
  for (const auto& n : data::toml_document(k_file)["wheel"].array()) {
    auto cuda = parse_cuda_version(n["cuda"].string());
    if (!cuda) n["cuda"].fail(cuda.error().message);
    out.push_back({*cuda, n["platform"].string(), n["torch_cuda_arch_list"].string(),
                   n["note"].string_or("")});
  }
  return out;
}
}  // namespace

const std::vector<OfficialArchList>& official_torch_arch_lists() {
  static const std::vector<OfficialArchList> list = load();
  return list;
}

}  // namespace tailor::cuda
