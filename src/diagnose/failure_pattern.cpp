#include "diagnose/failure_pattern.h"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <toml++/toml.h>

#include "data/data_files.h"

namespace tailor::diagnose {

namespace {

Expected<std::string> required_string(const toml::table& row, std::string_view key,
                                      const std::string& where) {
  auto value = row[key].value<std::string>();
  if (!value || value->empty())
    return make_error(where + ": field '" + std::string(key) + "' is missing or not a string");
  return *value;
}

}  // namespace

Expected<std::vector<FailurePattern>> parse_failure_patterns(std::string_view toml_text,
                                                             std::string_view source_name) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return make_error(std::string(source_name) + ":" +
                      std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  const auto* rows = doc["pattern"].as_array();
  if (!rows || rows->empty())
    return make_error(std::string(source_name) + ": no [[pattern]] rows");

  std::vector<FailurePattern> patterns;
  for (size_t i = 0; i < rows->size(); ++i) {
    const auto* row = (*rows)[i].as_table();
    std::string where = std::string(source_name) + ": pattern #" + std::to_string(i + 1);
    if (!row) return make_error(where + ": not a table");
    FailurePattern p;
    TAILOR_TRY(id, required_string(*row, "id", where));
    where += " (" + id + ")";
    p.id = std::move(id);
    TAILOR_TRY(symptom, required_string(*row, "symptom", where));
    TAILOR_TRY(cause, required_string(*row, "cause", where));
    TAILOR_TRY(fix, required_string(*row, "fix", where));
    p.symptom = std::move(symptom);
    p.cause = std::move(cause);
    p.fix = std::move(fix);
    p.needle = row->at_path("needle").value_or(std::string());
    p.priority = static_cast<int>(row->at_path("priority").value_or(int64_t{50}));
    try {
      std::regex check(p.symptom, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return make_error(where + ": field 'symptom' is not a valid regex: " + e.what());
    }
    if (const auto* ex = row->get_as<toml::array>("examples")) {
      for (const auto& e : *ex) {
        auto s = e.value<std::string>();
        if (!s) return make_error(where + ": field 'examples' must hold strings");
        p.examples.push_back(*s);
      }
    }
    for (const auto& seen : patterns)
      if (seen.id == p.id) return make_error(where + ": duplicate id");
    patterns.push_back(std::move(p));
  }
  return patterns;
}

const std::vector<FailurePattern>& failure_patterns() {
  static const std::vector<FailurePattern> table = [] {
    auto text = data::file("diagnose/failures.toml");
    if (!text) {
      std::fprintf(stderr, "tailor: internal error: %s\n", text.error().message.c_str());
      std::abort();
    }
    auto parsed = parse_failure_patterns(*text, "data/diagnose/failures.toml");
    if (!parsed) {
      std::fprintf(stderr, "tailor: internal error: %s\n", parsed.error().message.c_str());
      std::abort();
    }
    return std::move(parsed).value();
  }();
  return table;
}

}  // namespace tailor::diagnose
