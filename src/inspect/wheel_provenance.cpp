#include "inspect/wheel_provenance.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/mapped_file.h"

namespace tailor::inspect {

namespace {

constexpr size_t k_max_provenance_bytes = 1 << 20;

std::string json_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::map<std::string, std::string> string_map(const nlohmann::json& j, const char* key) {
  std::map<std::string, std::string> out;
  if (auto t = j.find(key); t != j.end() && t->is_object())
    for (const auto& [k, v] : t->items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

}  // namespace

const formats::ZipEntry* find_dist_info_member(const formats::ZipArchive& archive,
                                               std::string_view file) {
  const formats::ZipEntry* found = nullptr;
  for (const auto& e : archive.entries) {
    std::string_view name = e.name;
    auto slash = name.find('/');
    if (slash != std::string_view::npos && name.substr(0, slash).ends_with(".dist-info") &&
        name.substr(slash + 1) == file)
      found = &e;
  }
  return found;
}

Expected<WheelProvenance> parse_wheel_provenance(std::string_view text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  auto bad = [&](const std::string& why) { return make_error(fmt::format("{}: {}", where, why)); };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  WheelProvenance p;
  p.text = std::string(text);
  if (auto tool = j.find("tool"); tool != j.end() && tool->is_object())
    p.tool_version = json_string(*tool, "version");
  p.package = json_string(j, "package");
  p.recipe = json_string(j, "recipe");
  p.profile = json_string(j, "profile");
  if (auto su = j.find("split_units"); su != j.end() && su->is_object())
    for (const auto& [unit, k] : su->items())
      if (k.is_number_integer() && k.get<int64_t>() >= 2 && k.get<int64_t>() <= 64 &&
          unit.size() < 4096)
        p.split_units[unit] = static_cast<int>(k.get<int64_t>());
  if (p.package.empty()) return bad("no package");
  if (auto t = j.find("targets"); t != j.end() && t->is_array())
    for (const auto& v : *t)
      if (v.is_string()) p.targets.push_back(v.get<std::string>());
  if (p.targets.empty()) return bad("no targets");
  auto src = j.find("source");
  if (src == j.end() || !src->is_object()) return bad("no source");
  p.source_kind = json_string(*src, "kind");
  p.source_name = json_string(*src, "name");
  for (const char* kind : {"sdist-sha256", "git-commit", "tree-sha256"})
    if (auto d = json_string(*src, kind); !d.empty()) {
      p.digest_kind = kind;
      p.digest = d;
    }
  if (p.source_kind.empty() || p.digest.empty()) return bad("no source kind or digest");
  p.toolchain = string_map(j, "toolchain");
  p.environment = string_map(j, "environment");
  return p;
}

Expected<WheelProvenance> read_wheel_provenance(Bytes file, const formats::ZipArchive& archive,
                                                const std::string& path) {
  const formats::ZipEntry* found = find_dist_info_member(archive, k_provenance_file);
  if (!found)
    return make_error(fmt::format("{}: no {} in its dist-info: not a wheel tailor built", path,
                                  k_provenance_file));
  if (found->uncompressed_size > k_max_provenance_bytes)
    return make_error(fmt::format("{}: {} is {} bytes, over the {} accepted", path, found->name,
                                  found->uncompressed_size, k_max_provenance_bytes));
  std::vector<std::byte> buffer;
  auto bytes = formats::extract_member(file, *found, buffer);
  if (!bytes) return make_error(fmt::format("{}: {}", path, bytes.error().message));
  return parse_wheel_provenance(
      std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
      path + ": " + found->name);
}

Expected<WheelProvenance> read_wheel_provenance(const std::string& wheel) {
  TAILOR_TRY(map, MappedFile::open(wheel));
  auto archive = formats::parse_zip(map.bytes());
  if (!archive) return make_error(fmt::format("{}: {}", wheel, archive.error().message));
  return read_wheel_provenance(map.bytes(), *archive, wheel);
}

}  // namespace tailor::inspect
