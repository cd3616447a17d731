#include "inspect/cuda_providers.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "data/data_files.h"

namespace tailor::inspect {

namespace {
constexpr std::string_view k_cuda_file = "manylinux/cuda_libraries.toml";
constexpr std::string_view k_torch_file = "manylinux/torch_libraries.toml";

[[noreturn]] void bad(std::string_view file, const std::string& what) {
  throw std::logic_error("data/" + std::string(file) + ": " + what);
}

toml::table parse(std::string_view file) {
  auto text = data::file(file);
  if (!text) throw std::logic_error(text.error().message);
  try {
    return toml::parse(*text, file);
  } catch (const toml::parse_error& e) {
    bad(file, std::string(e.description()));
  }
}
}  // namespace

std::optional<std::pair<std::string, std::string>> split_soname(const std::string& soname) {
  auto at = soname.rfind(".so");
  // The last ".so" followed by nothing or by ".<digits and dots>".
  while (at != std::string::npos) {
    std::string rest = soname.substr(at + 3);
    bool versioned = rest.size() >= 2 && rest[0] == '.' &&
                     std::all_of(rest.begin() + 1, rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
    if (rest.empty() || versioned) return std::pair(soname.substr(0, at + 3), rest.empty() ? rest : rest.substr(1));
    if (at == 0) break;
    at = soname.rfind(".so", at - 1);
  }
  return std::nullopt;
}

const CudaProviders& CudaProviders::get() {
  static const CudaProviders table = [] {
    CudaProviders t;
    auto root = parse(k_cuda_file);
    if (const auto* drv = root["driver"].as_array())
      for (const auto& v : *drv) t.m_driver.push_back(v.value_or(std::string()));
    const auto* rows = root["library"].as_array();
    if (!rows) bad(k_cuda_file, "no [[library]] rows");
    for (const auto& node : *rows) {
      const auto* r = node.as_table();
      if (!r) bad(k_cuda_file, "library row is not a table");
      CudaLibraryFamily f;
      f.stem = (*r)["stem"].value_or(std::string());
      f.what = (*r)["what"].value_or(std::string());
      if (f.stem.size() < 4 || f.stem.substr(f.stem.size() - 3) != ".so" || f.what.empty())
        bad(k_cuda_file, "library '" + f.stem + "': stem must end in .so, and what is required");
      const auto* providers = (*r)["providers"].as_array();
      if (!providers || providers->empty()) bad(k_cuda_file, "library '" + f.stem + "' has no providers");
      for (const auto& pn : *providers) {
        const auto* p = pn.as_table();
        if (!p) bad(k_cuda_file, "library '" + f.stem + "': a provider is not a table");
        CudaProvider row;
        row.major = (*p)["major"].value_or(std::string());
        row.cuda = (*p)["cuda"].value_or(std::string());
        row.wheel = (*p)["wheel"].value_or(std::string());
        row.system = (*p)["system"].value_or(std::string());
        row.what = f.what;
        row.soname = f.stem + "." + row.major;
        if (row.major.empty() || row.cuda.empty() || row.system.empty() ||
            !std::all_of(row.major.begin(), row.major.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
          bad(k_cuda_file, "library '" + f.stem + "': a provider lacks a numeric major, cuda or system");
        f.providers.push_back(std::move(row));
      }
      t.m_families.push_back(std::move(f));
    }
    std::sort(t.m_families.begin(), t.m_families.end(), [](auto& a, auto& b) { return a.stem < b.stem; });
    for (size_t i = 1; i < t.m_families.size(); ++i)
      if (t.m_families[i].stem == t.m_families[i - 1].stem) bad(k_cuda_file, "stem '" + t.m_families[i].stem + "' twice");
    return t;
  }();
  return table;
}

std::optional<CudaProviders::Match> CudaProviders::match(const std::string& soname) const {
  auto split = split_soname(soname);
  if (!split) return std::nullopt;
  auto it = std::lower_bound(m_families.begin(), m_families.end(), split->first,
                             [](const CudaLibraryFamily& f, const std::string& s) { return f.stem < s; });
  if (it == m_families.end() || it->stem != split->first) return std::nullopt;
  Match m;
  m.family = &*it;
  m.major = split->second.substr(0, split->second.find('.'));
  for (const auto& p : it->providers)
    if (p.major == m.major) m.providers.push_back(&p);
  return m;
}

std::vector<const CudaProvider*> CudaProviders::lookup(const std::string& soname) const {
  auto m = match(soname);
  return m ? m->providers : std::vector<const CudaProvider*>{};
}

bool CudaProviders::is_driver_library(const std::string& soname) const {
  return std::find(m_driver.begin(), m_driver.end(), soname) != m_driver.end();
}

const TorchLibraries& TorchLibraries::get() {
  static const TorchLibraries table = [] {
    TorchLibraries t;
    auto root = parse(k_torch_file);
    const auto* list = root["libraries"].as_array();
    if (!list || list->empty()) bad(k_torch_file, "no libraries");
    for (const auto& v : *list) {
      auto s = v.value<std::string>();
      if (!s || s->empty()) bad(k_torch_file, "libraries holds a non-string");
      t.m_names.push_back(*s);
    }
    std::sort(t.m_names.begin(), t.m_names.end());
    return t;
  }();
  return table;
}

bool TorchLibraries::contains(const std::string& soname) const {
  return std::binary_search(m_names.begin(), m_names.end(), soname);
}

}  // namespace tailor::inspect
