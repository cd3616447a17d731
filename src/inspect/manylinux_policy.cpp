#include "inspect/manylinux_policy.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <stdexcept>

#include "data/data_files.h"
#include "util/strings.h"

namespace tailor::inspect {

namespace {

constexpr std::string_view k_file = "manylinux/policies.toml";

[[noreturn]] void bad(const std::string& what) {
  throw std::logic_error("data/" + std::string(k_file) + ": " + what);
}

std::vector<std::string> strings_of(const toml::node* node, const std::string& where) {
  std::vector<std::string> out;
  if (!node) return out;
  const auto* arr = node->as_array();
  if (!arr) bad(where + " is not an array");
  for (const auto& v : *arr) {
    auto s = v.value<std::string>();
    if (!s) bad(where + " holds a non-string");
    out.push_back(*s);
  }
  return out;
}

bool is_numeric_version(const std::string& v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.')) return false;
  return true;
}

bool is_loader(const std::string& file) { return file.rfind("ld-linux", 0) == 0 || file.rfind("ld64.so", 0) == 0; }

}  // namespace

bool ManylinuxPolicy::allows(const std::string& version) const {
  if (also.count(version)) return true;
  size_t us = version.find('_');
  if (us == std::string::npos) return true;  // not a prefixed version: not policed
  std::string prefix = version.substr(0, us), number = version.substr(us + 1);
  if (none.count(prefix)) return false;
  auto it = max_version.find(prefix);
  if (it == max_version.end()) return true;  // a prefix this policy does not police
  if (!is_numeric_version(number)) return false;  // GLIBC_PRIVATE and the like
  return compare_versions(number, it->second) <= 0;
}

const ManylinuxPolicies& ManylinuxPolicies::get() {
  static const ManylinuxPolicies policies = [] {
    ManylinuxPolicies p;
    auto text = data::file(k_file);
    if (!text) throw std::logic_error(text.error().message);
    toml::table root;
    try {
      root = toml::parse(*text, k_file);
    } catch (const toml::parse_error& e) {
      bad(std::string(e.description()));
    }
    p.m_source = root["source"].value_or(std::string());
    p.m_whitelist = strings_of(root.get("whitelist"), "whitelist");
    if (p.m_whitelist.empty()) bad("empty whitelist");
    const auto* list = root["policy"].as_array();
    if (!list) bad("no [[policy]] tables");
    for (const auto& node : *list) {
      const auto* t = node.as_table();
      if (!t) bad("policy is not a table");
      ManylinuxPolicy base;
      base.name = (*t)["name"].value_or(std::string());
      base.priority = (*t)["priority"].value_or(-1);
      if (base.name.empty() || base.priority < 0) bad("policy without name or priority");
      base.aliases = strings_of(t->get("aliases"), base.name + ".aliases");
      if (std::sscanf(base.name.c_str(), "manylinux_%d_%d", &base.glibc_major, &base.glibc_minor) != 2)
        bad(base.name + ": name is not manylinux_X_Y");
      for (const auto& [arch, body] : *t) {
        const auto* at = body.as_table();
        if (!at) continue;
        ManylinuxPolicy pol = base;
        const auto* mx = (*at)["max"].as_table();
        if (!mx) bad(base.name + "." + std::string(arch.str()) + ": no max table");
        for (const auto& [prefix, v] : *mx) {
          auto s = v.value<std::string>();
          if (!s || !is_numeric_version(*s)) bad(base.name + ": max." + std::string(prefix.str()) + " is not a version");
          pol.max_version[std::string(prefix.str())] = *s;
        }
        for (auto& s : strings_of(at->get("none"), base.name + ".none")) pol.none.insert(s);
        for (auto& s : strings_of(at->get("also"), base.name + ".also")) pol.also.insert(s);
        p.m_by_arch[std::string(arch.str())].push_back(std::move(pol));
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

ManylinuxFit ManylinuxPolicies::strictest_fit(const std::string& arch,
                                              const std::vector<formats::ElfVersionNeed>& needs) const {
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
    fit.limiting = std::move(refused);  // what the last refusing (least strict so far) policy refused
  }
  return fit;
}

std::optional<ManylinuxPolicies::PlatformTag> ManylinuxPolicies::parse_platform_tag(const std::string& tag) const {
  if (tag.rfind("manylinux", 0) != 0) return std::nullopt;
  for (const auto& [arch, pols] : m_by_arch) {
    const std::string suffix = "_" + arch;
    if (tag.size() <= suffix.size() || tag.compare(tag.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string policy = tag.substr(0, tag.size() - suffix.size());
    for (const auto& p : pols)
      if (p.name == policy || std::find(p.aliases.begin(), p.aliases.end(), policy) != p.aliases.end())
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
    return PlatformTag{fmt::format("manylinux_{}_{}", major, minor), major, minor, tag.substr(third + 1)};
  }
  return std::nullopt;
}

}  // namespace tailor::inspect
