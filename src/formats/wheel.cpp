#include "formats/wheel.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <optional>

#include "util/base64.h"
#include "util/strings.h"

namespace tailor::formats {

namespace {

std::vector<std::string> split_keep(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(
        s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

bool valid_tag_part(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

// Walks the header block of an email-style file, handing each (key, value) to `visit`
// (continuation lines are folded into the value first). Lines are cut from the text one by
// one, never collected: a file of sixteen million newlines costs nothing.
template <class Visit>
void header_fields(std::string_view text, Visit&& visit) {
  std::string key, value;
  bool have = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // end of headers
    if ((line.front() == ' ' || line.front() == '\t') && have) {
      value += std::string(trim(line));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (have) visit(key, value);
    key = std::string(trim(line.substr(0, colon)));
    value = std::string(trim(line.substr(colon + 1)));
    have = true;
  }
  if (have) visit(key, value);
}

}  // namespace

std::vector<std::string> WheelName::tags() const {
  std::vector<std::string> out;
  for (const auto& p : python_tags)
    for (const auto& a : abi_tags)
      for (const auto& pl : platform_tags) out.push_back(p + "-" + a + "-" + pl);
  return out;
}

std::string normalize_distribution_name(std::string_view name) {
  std::string out;
  bool sep = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      sep = true;
      continue;
    }
    if (sep && !out.empty()) out += '-';
    sep = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

Expected<WheelName> parse_wheel_filename(std::string_view path) {
  std::string_view file =
      path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  if (file.size() < 5 || file.substr(file.size() - 4) != ".whl")
    return make_error(fmt::format("wheel file name '{}' does not end in .whl", file));
  auto parts = split_keep(file.substr(0, file.size() - 4), '-');
  if (parts.size() != 5 && parts.size() != 6)
    return make_error(
        fmt::format("wheel file name '{}' has {} dash-separated parts, expected 5 or 6 "
                    "(name-version[-build]-python-abi-platform)",
                    file, parts.size()));
  WheelName w;
  w.distribution = parts[0];
  w.version = parts[1];
  if (w.distribution.empty())
    return make_error(fmt::format("wheel file name '{}' has an empty name", file));
  if (w.version.empty() || !std::isdigit(static_cast<unsigned char>(w.version[0])))
    return make_error(fmt::format("wheel file name '{}': version '{}' does not start with a digit",
                                  file, w.version));
  if (auto plus = w.version.find('+'); plus != std::string::npos) {
    w.local_label = w.version.substr(plus + 1);
    if (w.local_label.empty())
      return make_error(fmt::format("wheel file name '{}': empty local version label", file));
  }
  size_t t = 2;
  if (parts.size() == 6) {
    w.build = parts[2];
    if (w.build.empty() || !std::isdigit(static_cast<unsigned char>(w.build[0])))
      return make_error(fmt::format(
          "wheel file name '{}': build tag '{}' does not start with a digit", file, w.build));
    t = 3;
  }
  const char* what[] = {"python", "abi", "platform"};
  std::vector<std::string>* dest[] = {&w.python_tags, &w.abi_tags, &w.platform_tags};
  for (int i = 0; i < 3; ++i) {
    for (auto& tag : split_keep(parts[t + i], '.')) {
      if (!valid_tag_part(tag))
        return make_error(
            fmt::format("wheel file name '{}': bad {} tag '{}'", file, what[i], parts[t + i]));
      dest[i]->push_back(tag);
    }
  }
  return w;
}

Expected<WheelFile> parse_wheel_file(std::string_view text) {
  if (text.size() > WheelLimits{}.max_wheel_file_bytes)
    return make_error(fmt::format("WHEEL: {} bytes, over the limit of {}", text.size(),
                                  WheelLimits{}.max_wheel_file_bytes));
  WheelFile w;
  std::optional<Error> error;
  header_fields(text, [&](const std::string& key, const std::string& value) {
    if (error) return;
    std::string k = to_lower(key);
    if (k == "wheel-version")
      w.wheel_version = value;
    else if (k == "generator")
      w.generator = value;
    else if (k == "root-is-purelib")
      w.root_is_purelib = to_lower(value) == "true";
    else if (k == "tag") {
      auto pieces = split_keep(value, '-');
      if (pieces.size() != 3 || !valid_tag_part(pieces[0]) || !valid_tag_part(pieces[1]) ||
          !valid_tag_part(pieces[2]))
        error = make_error(fmt::format("WHEEL: malformed Tag '{}'", value.substr(0, 200)));
      else
        w.tags.push_back(value);
    } else if (k == "build")
      w.build = value;
  });
  if (error) return *error;
  if (w.wheel_version.empty()) return make_error("WHEEL: no Wheel-Version field");
  return w;
}

Expected<std::vector<RecordRow>> parse_record(std::string_view text, uint64_t max_rows) {
  std::vector<RecordRow> rows;
  size_t pos = 0, line = 0;
  while (pos < text.size()) {
    ++line;
    // One CSV record: fields separated by commas, optionally quoted with "" escapes.
    std::vector<std::string> fields(1);
    bool quoted = false, field_start = true;
    for (; pos < text.size(); ++pos) {
      char c = text[pos];
      if (quoted) {
        if (c == '"') {
          if (pos + 1 < text.size() && text[pos + 1] == '"') {
            fields.back() += '"';
            ++pos;
          } else {
            quoted = false;
          }
        } else {
          fields.back() += c;
        }
        continue;
      }
      if (c == '"' && field_start) {
        quoted = true;
        field_start = false;
      } else if (c == ',') {
        fields.emplace_back();
        field_start = true;
      } else if (c == '\n') {
        ++pos;
        break;
      } else if (c != '\r') {
        fields.back() += c;
        field_start = false;
      }
    }
    if (quoted) return make_error(fmt::format("RECORD line {}: unterminated quote", line));
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (fields.size() != 3)
      return make_error(fmt::format("RECORD line {}: {} fields, expected 3 (path,hash,size)", line,
                                    fields.size()));
    if (rows.size() >= max_rows)
      return make_error(fmt::format(
          "RECORD line {}: more than {} rows, more than the archive can hold", line, max_rows));
    RecordRow row;
    row.line = line;
    row.path = fields[0];
    if (row.path.empty()) return make_error(fmt::format("RECORD line {}: empty path", line));
    if (!fields[1].empty()) {
      size_t eq = fields[1].find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == fields[1].size())
        return make_error(
            fmt::format("RECORD line {}: hash '{}' is not algorithm=value", line, fields[1]));
      row.hash_algorithm = fields[1].substr(0, eq);
      row.hash_value = fields[1].substr(eq + 1);
    }
    if (!fields[2].empty()) {
      uint64_t size = 0;
      auto [end, ec] = std::from_chars(fields[2].data(), fields[2].data() + fields[2].size(), size);
      if (ec != std::errc() || end != fields[2].data() + fields[2].size())
        return make_error(
            fmt::format("RECORD line {}: size '{}' is not a number", line, fields[2]));
      row.size = size;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

WheelMetadata parse_metadata(std::string_view text) {
  WheelMetadata m;
  header_fields(text.substr(0, WheelLimits{}.max_metadata_bytes),
                [&](const std::string& key, const std::string& value) {
                  std::string k = to_lower(key);
                  if (k == "name")
                    m.name = value;
                  else if (k == "version")
                    m.version = value;
                  else if (k == "requires-dist")
                    m.requires_dist.push_back(value);
                  else if (k == "requires-python")
                    m.requires_python = value;
                });
  return m;
}

std::string record_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string record_digest(const Sha256::Digest& d) {
  return "sha256=" + base64url_nopad_encode(std::as_bytes(std::span(d.data(), d.size())));
}

}  // namespace tailor::formats
