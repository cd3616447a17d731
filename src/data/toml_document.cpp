#include "data/toml_document.h"

#include "data/data_files.h"

namespace tailor::data {
namespace {

std::string child_key(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    default:
      return "a date or time";
  }
}

}  // namespace

void TomlValue::fail(std::string_view what) const {
  throw DataError(*m_file + ": " + (m_key.empty() ? std::string() : m_key + ": ") +
                  std::string(what));
}

TomlValue TomlValue::operator[](std::string_view key) const {
  const auto* t = m_node ? m_node->as_table() : nullptr;
  if (m_node && !t) fail("expected a table, found " + std::string(type_name(*m_node)));
  return TomlValue(m_root, t ? t->get(key) : nullptr, m_file, child_key(m_key, key));
}

TomlValue TomlValue::operator[](size_t index) const {
  const auto* a = m_node ? m_node->as_array() : nullptr;
  if (m_node && !a) fail("expected an array, found " + std::string(type_name(*m_node)));
  return TomlValue(m_root, a && index < a->size() ? a->get(index) : nullptr, m_file,
                   m_key + "[" + std::to_string(index) + "]");
}

TomlValue TomlValue::at_path(std::string_view dotted) const {
  TomlValue v = *this;
  while (true) {
    size_t dot = dotted.find('.');
    v = v[dotted.substr(0, dot)];
    if (dot == std::string_view::npos) return v;
    dotted.remove_prefix(dot + 1);
  }
}

#define TAILOR_REQUIRE(expected_what) \
  if (!m_node) fail("missing (expected " expected_what ")");

std::string TomlValue::string() const {
  TAILOR_REQUIRE("a string");
  auto v = m_node->value_exact<std::string>();
  if (!v) fail("expected a string, found " + std::string(type_name(*m_node)));
  return *v;
}

int64_t TomlValue::integer() const {
  TAILOR_REQUIRE("an integer");
  auto v = m_node->value_exact<int64_t>();
  if (!v) fail("expected an integer, found " + std::string(type_name(*m_node)));
  return *v;
}

double TomlValue::number() const {
  TAILOR_REQUIRE("a number");
  if (auto i = m_node->value_exact<int64_t>()) return static_cast<double>(*i);
  auto v = m_node->value_exact<double>();
  if (!v) fail("expected a number, found " + std::string(type_name(*m_node)));
  return *v;
}

bool TomlValue::boolean() const {
  TAILOR_REQUIRE("a boolean");
  auto v = m_node->value_exact<bool>();
  if (!v) fail("expected a boolean, found " + std::string(type_name(*m_node)));
  return *v;
}

std::vector<TomlValue> TomlValue::array() const {
  TAILOR_REQUIRE("an array");
  const auto* a = m_node->as_array();
  if (!a) fail("expected an array, found " + std::string(type_name(*m_node)));
  std::vector<TomlValue> out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i)
    out.emplace_back(m_root, a->get(i), m_file, m_key + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<std::pair<std::string, TomlValue>> TomlValue::entries() const {
  TAILOR_REQUIRE("a table");
  const auto* t = m_node->as_table();
  if (!t) fail("expected a table, found " + std::string(type_name(*m_node)));
  std::vector<std::pair<std::string, TomlValue>> out;
  for (const auto& [k, v] : *t)
    out.emplace_back(std::string(k.str()),
                     TomlValue(m_root, &v, m_file, child_key(m_key, k.str())));
  return out;
}

std::vector<std::string> TomlValue::strings() const {
  std::vector<std::string> out;
  for (const auto& v : array()) out.push_back(v.string());
  return out;
}

std::map<std::string, std::string> TomlValue::string_table() const {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : entries()) out.emplace(k, v.string());
  return out;
}

#undef TAILOR_REQUIRE

std::string TomlValue::string_or(std::string fallback) const {
  return m_node ? string() : fallback;
}
int64_t TomlValue::integer_or(int64_t fallback) const { return m_node ? integer() : fallback; }
double TomlValue::number_or(double fallback) const { return m_node ? number() : fallback; }
bool TomlValue::boolean_or(bool fallback) const { return m_node ? boolean() : fallback; }
std::vector<std::string> TomlValue::strings_or_empty() const {
  return m_node ? strings() : std::vector<std::string>{};
}
std::map<std::string, std::string> TomlValue::string_table_or_empty() const {
  return m_node ? string_table() : std::map<std::string, std::string>{};
}
std::vector<TomlValue> TomlValue::array_or_empty() const {
  return m_node ? array() : std::vector<TomlValue>{};
}
std::vector<std::pair<std::string, TomlValue>> TomlValue::entries_or_empty() const {
  return m_node ? entries() : std::vector<std::pair<std::string, TomlValue>>{};
}

TomlDocument::TomlDocument(toml::table table, std::string file)
    : m_table(std::make_shared<const toml::table>(std::move(table))),
      m_file(std::make_shared<const std::string>(std::move(file))) {}

void TomlDocument::fail(std::string_view what) const {
  throw DataError(*m_file + ": " + std::string(what));
}

TomlDocument parse_toml(std::string_view text, std::string source) {
  try {
    return TomlDocument(toml::parse(text, source), source);
  } catch (const toml::parse_error& e) {
    throw DataError(source + ":" + std::to_string(e.source().begin.line) + ": " +
                    std::string(e.description()));
  }
}

TomlDocument toml_document(std::string_view path) {
  auto text = file(path);
  if (!text) throw DataError(text.error().message);
  return parse_toml(*text, "data/" + std::string(path));
}

std::string embedded_program(std::string_view path) {
  auto text = file(path);
  if (!text) throw DataError(text.error().message);
  return std::string(*text);
}

}  // namespace tailor::data
