#include "inspect/manylinux_policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::inspect {

namespace {

constexpr std::string_view k_file = "manylinux/policies.toml";

bool is_numeric_version(const std::string& v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.')) return false;
  return true;
}

bool is_loader(const std::string& file) {
  return file.rfind("ld-linux", 0) == 0 || file.rfind("ld64.so", 0) == 0;
}

}  // namespace

bool ManylinuxPolicy::allows(const std::string& version) const {
  if (also.count(version)) return true;
  size_t us = version.find('_');
  if (us == std::string::npos) return true;  // not a prefixed version: not policed
  std::string prefix = version.substr(0, us), number = version.substr(us + 1);
  if (none.count(prefix)) return false;
  auto it = max_version.find(prefix);
  if (it == max_version.end()) return true;       // a prefix this policy does not police
  if (!is_numeric_version(number)) return false;  // GLIBC_PRIVATE and the like
  return compare_versions(number, it->second) <= 0;
}

const ManylinuxPolicies& ManylinuxPolicies::get() {
  static const ManylinuxPolicies policies = [] {
    ManylinuxPolicies p;
    const auto root = data::toml_document(k_file);
    p.m_source = root["source"].string_or("");
    p.m_whitelist = root["whitelist"].strings_or_empty();
    if (p.m_whitelist.empty()) root.fail("empty whitelist");
    for (const auto& t : root["policy"].array()) {
      ManylinuxPolicy base;
      base.name = t["name"].string();
      base.priority = static_cast<int>(t["priority"].integer());
      if (base.name.empty() || base.priority < 0) t.fail("policy without name or priority");
      base.aliases = t["aliases"].strings_or_empty();
      if (std::sscanf(base.name.c_str(), "manylinux_%d_%d", &base.glibc_major, &base.glibc_minor) !=
          2)
        t["name"].fail(base.name + " is not manylinux_X_Y");
      for (const auto& [arch, at] : t.entries()) {
        if (!at.is_table()) continue;
        ManylinuxPolicy pol = base;
        for (const auto& [prefix, v] : at["max"].entries()) {
          std::string s = v.string();
          if (!is_numeric_version(s)) v.fail("'" + s + "' is not a version");
          pol.max_version[prefix] = s;
        }
        for (auto& s : at["none"].strings_or_empty()) pol.none.insert(s);
        for (auto& s : at["also"].strings_or_empty()) pol.also.insert(s);
        p.m_by_arch[arch].push_back(std::move(pol));
      }
    }
    for (auto& [arch, pols] : p.m_by_arch)
      std::sort(pols.begin(), pols.end(), [](auto& a, auto& b) { return a.priority > b.priority; });
    return p;
  }();
  return policies;
}

bool ManylinuxPolicies::whitelisted(const std::string& soname) const {
  return std::find(m_whitelist.begin(), m_whitelist.end(), soname) != m_whitelist.end();
}

const std::vector<ManylinuxPolicy>& ManylinuxPolicies::for_arch(const std::string& arch) const {
  static const std::vector<ManylinuxPolicy> k_empty;
  auto it = m_by_arch.find(arch);
  return it == m_by_arch.end() ? k_empty : it->second;
}

ManylinuxFit ManylinuxPolicies::strictest_fit(
    const std::string& arch, const std::vector<formats::ElfVersionNeed>& needs) const {
  ManylinuxFit fit;
  fit.policy = "linux";
  fit.tag = "linux_" + arch;
  for (const auto& policy : for_arch(arch)) {
    std::vector<std::string> refused;
    for (const auto& need : needs) {
      if (is_loader(need.file)) continue;
      for (const auto& v : need.versions)
        if (!policy.allows(v)) refused.push_back(fmt::format("{} ({})", v, need.file));
    }
    if (refused.empty()) {
      fit.policy = policy.name;
      fit.tag = policy.name + "_" + arch;
      fit.priority = policy.priority;
      return fit;
    }
    fit.limiting =
        std::move(refused);  // what the last refusing (least strict so far) policy refused
  }
  return fit;
}

std::optional<ManylinuxPolicies::PlatformTag> ManylinuxPolicies::parse_platform_tag(
    const std::string& tag) const {
  if (tag.rfind("manylinux", 0) != 0) return std::nullopt;
  for (const auto& [arch, pols] : m_by_arch) {
    const std::string suffix = "_" + arch;
    if (tag.size() <= suffix.size() ||
        tag.compare(tag.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string policy = tag.substr(0, tag.size() - suffix.size());
    for (const auto& p : pols)
      if (p.name == policy ||
          std::find(p.aliases.begin(), p.aliases.end(), policy) != p.aliases.end())
        return PlatformTag{p.name, p.glibc_major, p.glibc_minor, arch};
    int major = 0, minor = 0;
    char rest = 0;
    if (std::sscanf(policy.c_str(), "manylinux_%d_%d%c", &major, &minor, &rest) == 2)
      return PlatformTag{policy, major, minor, arch};
  }
  // Architectures without policy data (ppc64le ...): still a manylinux claim.
  int major = 0, minor = 0;
  if (std::sscanf(tag.c_str(), "manylinux_%d_%d_", &major, &minor) == 2) {
    size_t third = tag.find('_', tag.find('_', tag.find('_') + 1) + 1);
    return PlatformTag{fmt::format("manylinux_{}_{}", major, minor), major, minor,
                       tag.substr(third + 1)};
  }
  return std::nullopt;
}

}  // namespace tailor::inspect
