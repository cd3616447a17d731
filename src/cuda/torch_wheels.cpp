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

std::string pytorch_index_url(const std::optional<CudaVersion>& cuda) {
  struct Index {
    std::string base, cuda_variant, cpu_variant;
  };
  static const Index index = [] {
    auto doc = data::toml_document(k_file);
    return Index{doc["pytorch_index"]["base"].string(),
                 doc["pytorch_index"]["cuda_variant"].string(),
                 doc["pytorch_index"]["cpu_variant"].string()};
  }();
  if (!cuda) return index.base + "/" + index.cpu_variant;
  std::string variant = index.cuda_variant;
  variant.replace(variant.find("{major}"), 7, std::to_string(cuda->major));
  variant.replace(variant.find("{minor}"), 7, std::to_string(cuda->minor));
  return index.base + "/" + variant;
}

}  // namespace tailor::cuda
