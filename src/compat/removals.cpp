#include "compat/removals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "data/toml_document.h"

namespace tailor::compat {
namespace {

RemovalInfo read_info(const data::TomlValue& v) {
  RemovalInfo info;
  info.id = v["id"].string();
  const std::string library = v["library"].string();
  if (library == "torch")
    info.library = Library::torch;
  else if (library == "cuda")
    info.library = Library::cuda;
  else
    v["library"].fail("expected \"torch\" or \"cuda\"");
  info.removed_in = v["removed_in"].string();
  info.why = v["why"].string();
  return info;
}

Removals read_removals(const data::TomlDocument& doc) {
  Removals out;
  for (const auto& v : doc["dispatch_type"].array_or_empty())
    out.dispatch_types.push_back({read_info(v), v["macro_prefix"].string(), v["to"].string()});
  for (const auto& v : doc["rename"].array_or_empty())
    out.renames.push_back({read_info(v), v["from"].string(), v["to"].string(),
                           v["include"].string_or(""), v["unless_defined"].string_or(""),
                           v["unless_file"].string_or(""), v["after"].string_or("")});
  for (const auto& v : doc["drop_argument"].array_or_empty())
    out.drop_arguments.push_back(
        {read_info(v), v["namespace"].string(), v["prefix"].string(), v["last"].strings()});
  for (const auto& v : doc["shim"].array_or_empty())
    out.shims.push_back(
        {read_info(v), v["header"].string(), v["text"].string(), v["also"].strings_or_empty()});
  for (const auto& v : doc["std_header"].array_or_empty())
    out.std_headers.push_back({v["header"].string(), v["same_as"].strings_or_empty(),
                               v["gcc"].string(), v["names"].strings(),
                               v["covered_by"].strings_or_empty()});
  for (const auto& v : doc["cxx_standard"].array_or_empty())
    out.cxx_standards.push_back({read_info(v), v["standard"].string(), v["older"].strings(),
                                 v["error"].string(), v["refuse_tokens"].strings_or_empty()});
  for (const auto& v : doc["asm_cache_hint"].array_or_empty())
    out.asm_cache_hints.push_back({read_info(v), v["note"].string()});
  return out;
}

}  // namespace

std::string_view library_name(Library library) {
  return library == Library::torch ? "torch" : "CUDA";
}

std::string RemovalInfo::removed_label() const {
  return fmt::format("{} {}", library_name(library), removed_in);
}

const Removals& removals() {
  static const Removals table = read_removals(data::toml_document("compat/removals.toml"));
  return table;
}

Expected<Removals> parse_removals(std::string_view text, const std::string& source) {
  return data::expected_from([&] { return read_removals(data::parse_toml(text, source)); });
}

}  // namespace tailor::compat

namespace tailor::compat {
namespace {

// `name` as a compiler quotes it: ‘name’ (g++), "name" (nvcc), 'name' (g++ in C locale).
bool quoted(std::string_view line, std::string_view name) {
  for (auto [open, close] :
       {std::pair<std::string_view, std::string_view>{"\xe2\x80\x98", "\xe2\x80\x99"},
        {"\"", "\""},
        {"'", "'"}}) {
    const std::string q = std::string(open) + std::string(name) + std::string(close);
    if (line.find(q) != std::string_view::npos) return true;
  }
  return false;
}

// The identifiers of a C++ spelling: "cub::Sum" -> {"cub", "Sum"}.
std::vector<std::string> identifiers(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::optional<RemovalHit> removal_in_error(std::string_view line, const Removals& table) {
  if (line.find("error") == std::string_view::npos) return std::nullopt;
  for (const auto& d : table.dispatch_types)
    if (line.find("DeprecatedTypeProperties") != std::string_view::npos)
      return RemovalHit{d.info.id, "x.type() as the type of " + d.macro_prefix + "*",
                        d.info.removed_label(), d.info.why};
  for (const auto& d : table.drop_arguments)
    if ((line.find("no instance of overloaded function") != std::string_view::npos ||
         line.find("no matching function for call") != std::string_view::npos) &&
        line.find(d.ns + "::") != std::string_view::npos &&
        line.find("::" + d.prefix) != std::string_view::npos)
      return RemovalHit{d.info.id,
                        fmt::format("{}::{}*::F(..., {})", d.ns, d.prefix, d.last.front()),
                        d.info.removed_label(), d.info.why};
  for (const auto& c : table.cxx_standards)
    if (line.find(c.error) != std::string_view::npos)
      return RemovalHit{c.info.id,
                        fmt::format("a -std= before C++{} in the package's flags", c.standard),
                        c.info.removed_label(), c.info.why};
  for (const auto& s : table.shims)
    if (line.find(s.header) != std::string_view::npos &&
        line.find("No such file") != std::string_view::npos)
      return RemovalHit{s.info.id, s.header, s.info.removed_label(), s.info.why};
  for (const auto& r : table.renames) {
    const auto ids = identifiers(r.from);
    if (ids.empty() || !quoted(line, ids.back())) continue;
    if (std::all_of(ids.begin(), ids.end(),
                    [&](const std::string& id) { return line.find(id) != std::string_view::npos; }))
      return RemovalHit{r.info.id, r.from, r.info.removed_label(), r.info.why};
  }
  for (const auto& h : table.std_headers)
    for (const auto& name : h.names) {
      const bool in_std = name.starts_with("std::");
      const std::string_view bare = in_std ? std::string_view(name).substr(5) : name;
      if (!quoted(line, bare) || (in_std && !quoted(line, "std"))) continue;
      return RemovalHit{
          "std-header-" + h.header, name,
          h.gcc.empty() ? "newer libstdc++" : "GCC " + h.gcc + "'s libstdc++",
          fmt::format("{} is declared in <{}>, which {} no longer includes from "
                      "other standard headers",
                      name, h.header,
                      h.gcc.empty() ? "newer libstdc++" : "GCC " + h.gcc + "'s libstdc++")};
    }
  return std::nullopt;
}

}  // namespace tailor::compat

namespace tailor::compat {

std::optional<RemovalInLog> removal_in_log(std::string_view log, const Removals& table) {
  size_t number = 0, looked = 0;
  for (size_t at = 0; at < log.size() && looked < 4000;) {
    const size_t end = std::min(log.find('\n', at), log.size());
    const std::string_view line = log.substr(at, end - at);
    ++number;
    if (line.find("error") != std::string_view::npos) {
      ++looked;
      if (auto hit = removal_in_error(line, table))
        return RemovalInLog{number, std::string(line), std::move(*hit)};
    }
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace tailor::compat
