#include "diagnose/failure_pattern.h"

#include <regex>

#include "data/toml_document.h"

namespace tailor::diagnose {

namespace {

std::string required_string(const data::TomlValue& row, std::string_view key) {
  std::string value = row[key].string();
  if (value.empty()) row[key].fail("empty");
  return value;
}

std::vector<FailurePattern> read_failure_patterns(const data::TomlDocument& doc) {
  auto rows = doc["pattern"].array();
  if (rows.empty()) doc.fail("no [[pattern]] rows");
  std::vector<FailurePattern> patterns;
  for (const auto& row : rows) {
    FailurePattern p;
    p.id = required_string(row, "id");
    p.symptom = required_string(row, "symptom");
    p.cause = required_string(row, "cause");
    p.fix = required_string(row, "fix");
    p.needle = row["needle"].string_or("");
    p.priority = static_cast<int>(row["priority"].integer_or(50));
    try {
      std::regex check(p.symptom, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      row["symptom"].fail("not a valid regex (pattern '" + p.id + "'): " + e.what());
    }
    p.examples = row["examples"].strings_or_empty();
    if (auto steps = row["steps"].strings_or_empty(); !steps.empty()) p.steps = steps;
    for (const auto& st : p.steps)
      if (st != "build" && st != "clone")
        row["steps"].fail("'" + st + "' is not a step (build, clone)");
    for (const auto& seen : patterns)
      if (seen.id == p.id) row["id"].fail("duplicate id '" + p.id + "'");
    patterns.push_back(std::move(p));
  }
  return patterns;
}

}  // namespace

Expected<std::vector<FailurePattern>> parse_failure_patterns(std::string_view toml_text,
                                                             std::string_view source_name) {
  return data::expected_from(
      [&] { return read_failure_patterns(data::parse_toml(toml_text, std::string(source_name))); });
}

const std::vector<FailurePattern>& failure_patterns() {
  static const std::vector<FailurePattern> table =
      read_failure_patterns(data::toml_document("diagnose/failures.toml"));
  return table;
}

}  // namespace tailor::diagnose
