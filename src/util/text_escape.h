// Strings taken from input (DT_NEEDED names, zip member names, log lines, paths) on their
// way to a terminal or to JSON. Decided once, here:
//  - bytes that are not part of valid UTF-8 become the four characters `\xNN` (lower-case
//    hex), in JSON and in text alike, so the output stays valid UTF-8 and still says which
//    byte was there (a name that itself contains the text `\x41` is indistinguishable from
//    an escaped byte: names with backslashes are not real library or member names);
//  - for the terminal also C0 controls other than TAB (ESC, BEL, CR, LF ...), DEL and the
//    C1 controls U+0080..U+009F become `\xNN` per byte, so input cannot move the cursor,
//    set the title (OSC), ring the bell or forge extra lines.
#pragma once
#include <string>
#include <string_view>

namespace tailor {

/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF).
bool is_valid_utf8(std::string_view s);

/// `s` with every byte outside a valid UTF-8 sequence written as `\xNN`.
std::string escape_invalid_utf8(std::string_view s);

/// `s` safe to print on a terminal: invalid UTF-8 and control characters (C0 but TAB,
/// DEL, C1) written as `\xNN`.
std::string terminal_safe(std::string_view s);

/// Applies escape_invalid_utf8 to every string value and key of a JSON document
/// (nlohmann::json or anything with its interface), so dump() cannot throw type_error 316.
template <typename Json>
void escape_json_strings(Json& j) {
  if (j.is_string()) {
    auto& s = j.template get_ref<typename Json::string_t&>();
    if (!is_valid_utf8(s)) s = escape_invalid_utf8(s);
  } else if (j.is_array()) {
    for (auto& e : j) escape_json_strings(e);
  } else if (j.is_object()) {
    bool bad_key = false;
    for (auto it = j.begin(); it != j.end(); ++it) {
      bad_key = bad_key || !is_valid_utf8(it.key());
      escape_json_strings(it.value());
    }
    if (bad_key) {
      Json fixed = Json::object();
      for (auto it = j.begin(); it != j.end(); ++it)
        fixed[escape_invalid_utf8(it.key())] = std::move(it.value());
      j = std::move(fixed);
    }
  }
}

}  // namespace tailor
