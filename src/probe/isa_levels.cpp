#include "probe/isa_levels.h"

#include "data/toml_document.h"

namespace tailor::probe {
namespace {

constexpr const char* k_isa_file = "probe/isa_levels.toml";

std::vector<IsaLevelRule> rules(const data::TomlDocument& root, const char* key,
                                const char* name = "level") {
  std::vector<IsaLevelRule> out;
  for (const auto& t : root[key].array()) {
    IsaLevelRule r;
    r.level = t[name].string();
    if (r.level.empty()) t[name].fail("empty " + std::string(name));
    r.features = t["features"].strings();
    out.push_back(std::move(r));
  }
  return out;
}

/// "0x41" / "0xd0c": the spelling of /proc/cpuinfo, one to three hex digits.
unsigned hex_id(const data::TomlValue& node) {
  const std::string s = node.string();
  if (s.size() < 3 || s.size() > 5 || s[0] != '0' || s[1] != 'x' ||
      s.find_first_not_of("0123456789abcdef", 2) != std::string::npos)
    node.fail("expected 0x and one to three lower-case hex digits, got '" + s + "'");
  return static_cast<unsigned>(std::stoul(s.substr(2), nullptr, 16));
}

IsaLevelTable load() {
  const auto root = data::toml_document(k_isa_file);
  IsaLevelTable table;
  table.x86_64 = rules(root, "x86_64");
  table.aarch64 = rules(root, "aarch64");
  table.x86_64_cpuinfo_names = root["x86_64_cpuinfo_names"].string_table_or_empty();
  table.aarch64_hwcap = root["aarch64_hwcap_names"]["hwcap"].strings();
  table.aarch64_hwcap2 = root["aarch64_hwcap_names"]["hwcap2"].strings();
  if (table.aarch64_hwcap.size() > 64)
    root["aarch64_hwcap_names"]["hwcap"].fail("more than 64 bits");
  if (table.aarch64_hwcap2.size() > 64)
    root["aarch64_hwcap_names"]["hwcap2"].fail("more than 64 bits");
  for (const auto& t : root["aarch64_core"].array()) {
    ArmCore c;
    c.implementer = hex_id(t["implementer"]);
    c.part = hex_id(t["part"]);
    c.name = t["name"].string();
    if (c.name.empty()) t["name"].fail("empty name");
    c.neoverse = t["neoverse"].string();
    c.seen_in = t["seen_in"].string();
    if (table.find_arm_core(c.implementer, c.part))
      t["part"].fail("duplicate implementer and part");
    table.aarch64_cores.push_back(std::move(c));
  }
  table.aarch64_neoverse_classes = rules(root, "aarch64_neoverse_class", "class");
  for (const auto& [k, t] : root["aarch64_extensions"].entries_or_empty())
    table.aarch64_extensions[k] = t["implied_by"].strings_or_empty();
  return table;
}

}  // namespace

const ArmCore* IsaLevelTable::find_arm_core(unsigned implementer, unsigned part) const {
  for (const auto& c : aarch64_cores)
    if (c.implementer == implementer && c.part == part) return &c;
  return nullptr;
}

const IsaLevelTable& isa_level_table() {
  static const IsaLevelTable table = load();
  return table;
}

}  // namespace tailor::probe
