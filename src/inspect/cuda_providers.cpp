#include "inspect/cuda_providers.h"

#include <algorithm>
#include <cctype>

#include "data/toml_document.h"

namespace tailor::inspect {

namespace {
constexpr std::string_view k_cuda_file = "manylinux/cuda_libraries.toml";
constexpr std::string_view k_torch_file = "manylinux/torch_libraries.toml";
constexpr std::string_view k_other_gpu_file = "manylinux/other_gpu_runtimes.toml";
}  // namespace

std::optional<std::pair<std::string, std::string>> split_soname(const std::string& soname) {
  auto at = soname.rfind(".so");
  // The last ".so" followed by nothing or by ".<digits and dots>".
  while (at != std::string::npos) {
    std::string rest = soname.substr(at + 3);
    bool versioned =
        rest.size() >= 2 && rest[0] == '.' && std::all_of(rest.begin() + 1, rest.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
        });
    if (rest.empty() || versioned)
      return std::pair(soname.substr(0, at + 3), rest.empty() ? rest : rest.substr(1));
    if (at == 0) break;
    at = soname.rfind(".so", at - 1);
  }
  return std::nullopt;
}

const CudaProviders& CudaProviders::get() {
  static const CudaProviders table = [] {
    CudaProviders t;
    const auto root = data::toml_document(k_cuda_file);
    t.m_driver = root["driver"].strings_or_empty();
    for (const auto& r : root["library"].array()) {
      CudaLibraryFamily f;
      f.stem = r["stem"].string();
      f.what = r["what"].string();
      if (f.stem.size() < 4 || f.stem.substr(f.stem.size() - 3) != ".so" || f.what.empty())
        r.fail("library '" + f.stem + "': stem must end in .so, and what is required");
      const auto providers = r["providers"].array();
      if (providers.empty()) r.fail("library '" + f.stem + "' has no providers");
      for (const auto& p : providers) {
        CudaProvider row;
        row.major = p["major"].string();
        row.cuda = p["cuda"].string();
        row.wheel = p["wheel"].string_or("");
        row.system = p["system"].string();
        row.what = f.what;
        row.soname = f.stem + "." + row.major;
        if (row.major.empty() || row.cuda.empty() || row.system.empty() ||
            !std::all_of(row.major.begin(), row.major.end(),
                         [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
          p.fail("library '" + f.stem + "': a provider lacks a numeric major, cuda or system");
        f.providers.push_back(std::move(row));
      }
      t.m_families.push_back(std::move(f));
    }
    std::sort(t.m_families.begin(), t.m_families.end(),
              [](auto& a, auto& b) { return a.stem < b.stem; });
    for (size_t i = 1; i < t.m_families.size(); ++i)
      if (t.m_families[i].stem == t.m_families[i - 1].stem)
        root.fail("stem '" + t.m_families[i].stem + "' twice");
    return t;
  }();
  return table;
}

std::optional<CudaProviders::Match> CudaProviders::match(const std::string& soname) const {
  auto split = split_soname(soname);
  if (!split) return std::nullopt;
  auto it =
      std::lower_bound(m_families.begin(), m_families.end(), split->first,
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
    const auto root = data::toml_document(k_torch_file);
    t.m_names = root["libraries"].strings();
    if (t.m_names.empty()) root["libraries"].fail("no libraries");
    for (const auto& n : t.m_names)
      if (n.empty()) root["libraries"].fail("holds an empty name");
    std::sort(t.m_names.begin(), t.m_names.end());
    t.m_cxx_runtime = root["cxx_runtime"].string();
    if (t.m_cxx_runtime.empty()) root["cxx_runtime"].fail("is empty");
    return t;
  }();
  return table;
}

bool TorchLibraries::contains(const std::string& soname) const {
  return std::binary_search(m_names.begin(), m_names.end(), soname);
}

const OtherGpuRuntimes& OtherGpuRuntimes::get() {
  static const OtherGpuRuntimes table = [] {
    OtherGpuRuntimes t;
    const auto root = data::toml_document(k_other_gpu_file);
    const auto platforms = root["platform"].array();
    if (platforms.empty()) root["platform"].fail("no platforms");
    for (const auto& p : platforms) {
      const std::string name = p["name"].string();
      if (name.empty()) p["name"].fail("is empty");
      const auto stems = p["stems"].strings();
      if (stems.empty()) p["stems"].fail("platform '" + name + "' has no stems");
      for (const auto& stem : stems) {
        if (stem.size() < 4 || stem.substr(stem.size() - 3) != ".so")
          p["stems"].fail("platform '" + name + "': stem '" + stem + "' must end in .so");
        t.m_stems.emplace_back(stem, name);
      }
    }
    std::sort(t.m_stems.begin(), t.m_stems.end());
    for (size_t i = 1; i < t.m_stems.size(); ++i)
      if (t.m_stems[i].first == t.m_stems[i - 1].first)
        root.fail("stem '" + t.m_stems[i].first + "' twice");
    return t;
  }();
  return table;
}

std::optional<std::string> OtherGpuRuntimes::platform_of(const std::string& soname) const {
  auto split = split_soname(soname);
  if (!split) return std::nullopt;
  auto it =
      std::lower_bound(m_stems.begin(), m_stems.end(), split->first,
                       [](const auto& row, const std::string& stem) { return row.first < stem; });
  if (it == m_stems.end() || it->first != split->first) return std::nullopt;
  return it->second;
}

}  // namespace tailor::inspect
