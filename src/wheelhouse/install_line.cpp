#include "wheelhouse/install_line.h"

#include <fmt/format.h>

#include "cuda/cuda_version.h"
#include "cuda/torch_wheels.h"
#include "data/toml_document.h"
#include "inspect/torch_pin.h"
#include "util/strings.h"

namespace tailor::wheelhouse {

namespace {

struct InstallFacts {
  std::string installer, default_index;
};

const InstallFacts& facts() {
  static const InstallFacts f = [] {
    auto doc = data::toml_document("wheelhouse/install.toml");
    return InstallFacts{doc["installer"].string(), doc["default_index"].string()};
  }();
  return f;
}

std::string provenance_torch(const WheelEntry& e) {
  if (!e.provenance.is_object()) return {};
  auto t = e.provenance.find("toolchain");
  if (t == e.provenance.end() || !t->is_object()) return {};
  auto v = t->find("torch");
  return v != t->end() && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace

std::string install_command(const WheelEntry& entry, const std::string& wheelhouse_url,
                            const std::string& torch_pin) {
  const auto& f = facts();
  std::string base = wheelhouse_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string line =
      fmt::format("{} --index-url {} --extra-index-url {}", f.installer, f.default_index,
                  shell_quote(base + "/" + entry.target_set + "/simple"));
  if (!torch_pin.empty()) {
    std::optional<cuda::CudaVersion> cuda;
    auto torch = inspect::parse_torch_build(provenance_torch(entry));
    if (torch && !torch->cuda.empty())
      if (auto v = cuda::parse_cuda_version(torch->cuda)) cuda = *v;
    line += " --extra-index-url " + cuda::pytorch_index_url(cuda);
  }
  return line + " " + shell_quote(entry.project + "==" + entry.version);
}

}  // namespace tailor::wheelhouse
