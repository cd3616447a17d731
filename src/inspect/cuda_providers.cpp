#include "inspect/cuda_providers.h"

#include <toml++/toml.h>

#include <algorithm>
#include <stdexcept>

#include "data/data_files.h"

namespace tailor::inspect {

namespace {
constexpr std::string_view k_file = "manylinux/cuda_libraries.toml";

[[noreturn]] void bad(const std::string& what) {
  throw std::logic_error("data/" + std::string(k_file) + ": " + what);
}
}  // namespace

const CudaProviders& CudaProviders::get() {
  static const CudaProviders table = [] {
    CudaProviders t;
    auto text = data::file(k_file);
    if (!text) throw std::logic_error(text.error().message);
    toml::table root;
    try {
      root = toml::parse(*text, k_file);
    } catch (const toml::parse_error& e) {
      bad(std::string(e.description()));
    }
    if (const auto* drv = root["driver"].as_array())
      for (const auto& v : *drv) t.m_driver.push_back(v.value_or(std::string()));
    const auto* rows = root["library"].as_array();
    if (!rows) bad("no [[library]] rows");
    for (const auto& node : *rows) {
      const auto* r = node.as_table();
      if (!r) bad("library row is not a table");
      CudaProvider p;
      p.soname = (*r)["soname"].value_or(std::string());
      p.cuda = (*r)["cuda"].value_or(std::string());
      p.wheel = (*r)["wheel"].value_or(std::string());
      p.system = (*r)["system"].value_or(std::string());
      p.what = (*r)["what"].value_or(std::string());
      if (p.soname.empty() || p.wheel.empty() || p.system.empty() || p.cuda.empty())
        bad("library row '" + p.soname + "' lacks soname, cuda, wheel or system");
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
