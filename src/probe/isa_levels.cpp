#include "probe/isa_levels.h"

#include "data/toml_document.h"

namespace tailor::probe {
namespace {

constexpr const char* k_isa_file = "probe/isa_levels.toml";

std::vector<IsaLevelRule> rules(const data::TomlDocument& root, const char* key) {
  std::vector<IsaLevelRule> out;
  for (const auto& t : root[key].array()) {
    IsaLevelRule r;
    r.level = t["level"].string();
    if (r.level.empty()) t["level"].fail("empty level");
    r.features = t["features"].strings();
    out.push_back(std::move(r));
  }
  return out;
}

IsaLevelTable load() {
  const auto root = data::toml_document(k_isa_file);
  IsaLevelTable table;
  table.x86_64 = rules(root, "x86_64");
  table.aarch64 = rules(root, "aarch64");
  table.x86_64_cpuinfo_names = root["x86_64_cpuinfo_names"].string_table_or_empty();
  table.aarch64_parts = root["aarch64_parts"].string_table_or_empty();
  for (const auto& [k, t] : root["aarch64_extensions"].entries_or_empty())
    table.aarch64_extensions[k] = t["implied_by"].strings_or_empty();
  return table;
}

}  // namespace

const IsaLevelTable& isa_level_table() {
  static const IsaLevelTable table = load();
  return table;
}

}  // namespace tailor::probe
