#include "diagnose/log_markers.h"

#include "data/toml_document.h"

namespace tailor::diagnose {

namespace {

std::vector<std::regex> regex_list(const data::TomlDocument& doc, std::string_view key,
                                   bool icase) {
  std::vector<std::regex> out;
  for (const auto& v : doc[key].array()) {
    std::string s = v.string();
    try {
      auto flags = std::regex::ECMAScript | std::regex::optimize;
      if (icase) flags |= std::regex::icase;
      out.emplace_back(s, flags);
    } catch (const std::regex_error& e) {
      v.fail(std::string("not a valid regex: ") + e.what());
    }
  }
  return out;
}

bool any_match(const std::vector<std::regex>& res, const std::string& line) {
  for (const auto& re : res)
    if (std::regex_search(line, re)) return true;
  return false;
}

LogMarkers read_log_markers(const data::TomlDocument& doc) {
  LogMarkers m;
  for (const auto& n : doc["needles"].array()) {
    m.needles.push_back(n.string());
    if (m.needles.back().empty()) n.fail("empty needle");
  }
  if (m.needles.empty()) doc["needles"].fail("no needles");
  m.stop = regex_list(doc, "stop", false);
  m.tail = regex_list(doc, "tail", false);
  m.progress = regex_list(doc, "progress", false);
  m.failed = regex_list(doc, "failed", false);
  m.warning = regex_list(doc, "warning_icase", true);
  m.error = regex_list(doc, "error", false);
  m.python_exception = regex_list(doc, "python_exception", false);
  m.traceback = regex_list(doc, "traceback", false);
  m.benign = regex_list(doc, "benign", false);
  return m;
}

}  // namespace

Expected<LogMarkers> parse_log_markers(std::string_view toml_text, std::string_view source_name) {
  return data::expected_from(
      [&] { return read_log_markers(data::parse_toml(toml_text, std::string(source_name))); });
}

const LogMarkers& log_markers() {
  static const LogMarkers markers =
      read_log_markers(data::toml_document("diagnose/log_markers.toml"));
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
  if (any_match(m.benign, line)) return LineKind::plain;
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
