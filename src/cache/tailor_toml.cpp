#include "cache/tailor_toml.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>

#include "util/user_file.h"

namespace tailor::cache {
namespace {

// [cache] is read here; [wheelhouse] by workflow (extension_inputs.cpp), the others by plan
// (matrix.cpp).
constexpr std::array<std::string_view, 6> k_tables = {"defaults", "variant", "matrix",
                                                      "ci",       "cache",   "wheelhouse"};

}  // namespace

Expected<TailorToml> parse_tailor_toml(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return make_error(fmt::format("{}:{}:{}: {}", path, e.source().begin.line,
                                  e.source().begin.column, e.description()));
  }
  for (const auto& [key, value] : root)
    if (std::find(k_tables.begin(), k_tables.end(), key.str()) == k_tables.end())
      return make_error(fmt::format("{}: unknown table '{}' (known: {})", path, key.str(),
                                    fmt::join(k_tables, ", ")));
  TailorToml file{data::TomlDocument(std::move(root), path), {}};
  TAILOR_TRY(cache, parse_cache_table(file.document));
  file.cache = std::move(cache);
  return file;
}

Expected<TailorToml> load_tailor_toml(const std::string& path) {
  TAILOR_TRY(text, read_text_file(path, uint64_t{1} << 20, BinaryData::refused));
  return parse_tailor_toml(text, path);
}

}  // namespace tailor::cache
