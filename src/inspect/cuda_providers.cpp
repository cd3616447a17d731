#include "inspect/cuda_providers.h"

#include <algorithm>

#include "data/toml_document.h"

namespace tailor::inspect {

namespace {
constexpr std::string_view k_file = "manylinux/cuda_libraries.toml";
}  // namespace

const CudaProviders& CudaProviders::get() {
  static const CudaProviders table = [] {
    CudaProviders t;
    const auto root = data::toml_document(k_file);
    t.m_driver = root["driver"].strings_or_empty();
    for (const auto& r : root["library"].array()) {
      CudaProvider p;
      p.soname = r["soname"].string();
      p.cuda = r["cuda"].string();
      p.wheel = r["wheel"].string();
      p.system = r["system"].string();
      p.what = r["what"].string_or("");
      if (p.soname.empty() || p.wheel.empty() || p.system.empty() || p.cuda.empty())
        r.fail("library row '" + p.soname + "' has an empty soname, cuda, wheel or system");
      t.m_rows.push_back(std::move(p));
    }
    return t;
  }();
  return table;
}

std::vector<const CudaProvider*> CudaProviders::lookup(const std::string& soname) const {
  std::vector<const CudaProvider*> out;
  for (const auto& r : m_rows)
    if (r.soname == soname) out.push_back(&r);
  return out;
}

bool CudaProviders::is_driver_library(const std::string& soname) const {
  return std::find(m_driver.begin(), m_driver.end(), soname) != m_driver.end();
}

}  // namespace tailor::inspect
