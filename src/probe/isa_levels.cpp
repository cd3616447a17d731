#include "probe/isa_levels.h"

#include <stdexcept>
#include <toml++/toml.h>

#include "data/data_files.h"

namespace tailor::probe {
namespace {

constexpr const char* k_isa_file = "probe/isa_levels.toml";

std::vector<std::string> string_array(const toml::node* node, const std::string& where) {
  std::vector<std::string> out;
  const auto* arr = node ? node->as_array() : nullptr;
  if (!arr) throw std::runtime_error(std::string(k_isa_file) + ": " + where + " must be an array");
  for (const auto& v : *arr) {
    auto s = v.value<std::string>();
    if (!s) throw std::runtime_error(std::string(k_isa_file) + ": " + where + " holds a non-string");
    out.push_back(*s);
  }
  return out;
}

std::vector<IsaLevelRule> rules(const toml::table& root, const char* key) {
  std::vector<IsaLevelRule> out;
  const auto* arr = root[key].as_array();
  if (!arr) throw std::runtime_error(std::string(k_isa_file) + ": missing [[" + key + "]]");
  for (const auto& n : *arr) {
    const auto* t = n.as_table();
    if (!t) throw std::runtime_error(std::string(k_isa_file) + ": " + key + " entry is not a table");
    IsaLevelRule r;
    r.level = (*t)["level"].value_or(std::string());
    if (r.level.empty()) throw std::runtime_error(std::string(k_isa_file) + ": " + key + " entry without level");
    r.features = string_array(t->get("features"), std::string(key) + "." + r.level + ".features");
    out.push_back(std::move(r));
  }
  return out;
}

std::map<std::string, std::string> string_map(const toml::table& root, const char* key) {
  std::map<std::string, std::string> out;
  if (const auto* t = root[key].as_table()) {
    for (const auto& [k, v] : *t) out[std::string(k.str())] = v.value_or(std::string());
  }
  return out;
}

IsaLevelTable load() {
  auto text = data::file(k_isa_file);
  if (!text) throw std::runtime_error(text.error().message);
  toml::table root;
  try {
    root = toml::parse(*text, std::string_view(k_isa_file));
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(std::string(k_isa_file) + ": " + std::string(e.description()));
  }
  IsaLevelTable table;
  table.x86_64 = rules(root, "x86_64");
  table.aarch64 = rules(root, "aarch64");
  table.x86_64_cpuinfo_names = string_map(root, "x86_64_cpuinfo_names");
  table.aarch64_parts = string_map(root, "aarch64_parts");
  if (const auto* ext = root["aarch64_extensions"].as_table()) {
    for (const auto& [k, v] : *ext) {
      const auto* t = v.as_table();
      table.aarch64_extensions[std::string(k.str())] =
          t && t->get("implied_by") ? string_array(t->get("implied_by"), "aarch64_extensions." + std::string(k.str()))
                                    : std::vector<std::string>{};
    }
  }
  return table;
}

}  // namespace

const IsaLevelTable& isa_level_table() {
  static const IsaLevelTable table = load();
  return table;
}

}  // namespace tailor::probe
