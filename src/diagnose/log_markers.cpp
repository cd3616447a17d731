#include "diagnose/log_markers.h"

#include <cstdio>
#include <cstdlib>
#include <toml++/toml.h>

#include "data/data_files.h"

namespace tailor::diagnose {

namespace {

Expected<std::vector<std::regex>> regex_list(const toml::table& doc, std::string_view key,
                                             std::string_view source, bool icase) {
  const auto* arr = doc[key].as_array();
  if (!arr) return make_error(std::string(source) + ": '" + std::string(key) + "' is missing");
  std::vector<std::regex> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    auto s = (*arr)[i].value<std::string>();
    std::string where = std::string(source) + ": " + std::string(key) + "[" + std::to_string(i) + "]";
    if (!s) return make_error(where + " is not a string");
    try {
      auto flags = std::regex::ECMAScript | std::regex::optimize;
      if (icase) flags |= std::regex::icase;
      out.emplace_back(*s, flags);
    } catch (const std::regex_error& e) {
      return make_error(where + " is not a valid regex: " + e.what());
    }
  }
  return out;
}

bool any_match(const std::vector<std::regex>& res, const std::string& line) {
  for (const auto& re : res)
    if (std::regex_search(line, re)) return true;
  return false;
}

}  // namespace

Expected<LogMarkers> parse_log_markers(std::string_view toml_text, std::string_view source_name) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return make_error(std::string(source_name) + ":" + std::to_string(e.source().begin.line) +
                      ": " + std::string(e.description()));
  }
  LogMarkers m;
  if (const auto* needles = doc["needles"].as_array()) {
    for (const auto& n : *needles) {
      auto s = n.value<std::string>();
      if (!s || s->empty()) return make_error(std::string(source_name) + ": 'needles' must hold non-empty strings");
      m.needles.push_back(*s);
    }
  }
  if (m.needles.empty()) return make_error(std::string(source_name) + ": 'needles' is missing");
  TAILOR_TRY(stop, regex_list(doc, "stop", source_name, false));
  TAILOR_TRY(tail, regex_list(doc, "tail", source_name, false));
  TAILOR_TRY(progress, regex_list(doc, "progress", source_name, false));
  TAILOR_TRY(failed, regex_list(doc, "failed", source_name, false));
  TAILOR_TRY(warning, regex_list(doc, "warning_icase", source_name, true));
  TAILOR_TRY(error, regex_list(doc, "error", source_name, false));
  TAILOR_TRY(python_exception, regex_list(doc, "python_exception", source_name, false));
  TAILOR_TRY(traceback, regex_list(doc, "traceback", source_name, false));
  m.stop = std::move(stop);
  m.tail = std::move(tail);
  m.progress = std::move(progress);
  m.failed = std::move(failed);
  m.warning = std::move(warning);
  m.error = std::move(error);
  m.python_exception = std::move(python_exception);
  m.traceback = std::move(traceback);
  return m;
}

const LogMarkers& log_markers() {
  static const LogMarkers markers = [] {
    auto text = data::file("diagnose/log_markers.toml");
    auto parsed = text ? parse_log_markers(*text, "data/diagnose/log_markers.toml")
                       : Expected<LogMarkers>(text.error());
    if (!parsed) {
      std::fprintf(stderr, "tailor: internal error: %s\n", parsed.error().message.c_str());
      std::abort();
    }
    return std::move(parsed).value();
  }();
  return markers;
}

bool may_be_error_or_tail(const LogMarkers& m, const std::string& line) {
  for (const auto& n : m.needles)
    if (line.find(n) != std::string::npos) return true;
  return false;
}

LineKind classify_line(const LogMarkers& m, const std::string& raw) {
  // Command lines can be several KB; the messages we look for start near the beginning.
  const std::string line = raw.size() > 1024 ? raw.substr(0, 1024) : raw;
  if (line.find_first_not_of(" \t") == std::string::npos) return LineKind::plain;
  if (any_match(m.stop, line)) return LineKind::stop;
  if (any_match(m.tail, line)) return LineKind::tail;
  if (any_match(m.progress, line)) return LineKind::progress;
  if (any_match(m.failed, line)) return LineKind::failed;
  const bool error = any_match(m.error, line);
  if (!error && any_match(m.warning, line)) return LineKind::warning;
  if (error) return LineKind::error;
  if (any_match(m.python_exception, line)) return LineKind::python_exception;
  if (any_match(m.traceback, line)) return LineKind::traceback;
  return LineKind::plain;
}

}  // namespace tailor::diagnose
