// The one reader of the TOML files under data/ (and of TOML text in the same shape, for
// tests and users' files). Every loader goes through it, so every failure reads the same:
//   data/cuda/gpus.toml: gpus[3].cc: expected a string
//
// Failure policy (ARCHITECTURE.md, "Errors"): reading a document throws data::DataError.
// For the embedded files that is a programming error, caught by the unit tests (every file
// under data/ is read there), so the static tables that loaders build never see one at run
// time. A parse function over text that can come from outside the binary returns
// Expected<T> and converts at its boundary with data::expected_from.
#pragma once
#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/expected.h"

namespace tailor::data {

/// A data document that does not parse, or a key that is missing or of the wrong type.
/// The message names the file and the key.
class DataError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// A value inside a document, with the path that reached it ("gpus[3].cc"). It shares the
/// parsed document, so it stays valid after the TomlDocument it came from is gone
/// (`for (auto& n : data::toml_document(f)["x"].array())` is safe). Navigating to a
/// missing key is allowed (the value is then absent); the typed getters say what is wrong.
class TomlValue {
 public:
  TomlValue(std::shared_ptr<const toml::table> root, const toml::node* node,
            std::shared_ptr<const std::string> file, std::string key)
      : m_root(std::move(root)), m_node(node), m_file(std::move(file)), m_key(std::move(key)) {}

  TomlValue operator[](std::string_view key) const;
  TomlValue operator[](size_t index) const;
  /// "jobs.variable": operator[] per dotted part.
  TomlValue at_path(std::string_view dotted) const;

  bool present() const { return m_node != nullptr; }
  const std::string& key() const { return m_key; }
  const std::string& file() const { return *m_file; }
  const toml::node* node() const { return m_node; }

  // Required: absent or mistyped throws DataError.
  std::string string() const;
  int64_t integer() const;
  double number() const;  ///< an integer or a float
  bool boolean() const;
  std::vector<std::string> strings() const;                        ///< an array of strings
  std::map<std::string, std::string> string_table() const;         ///< a table of strings
  std::vector<TomlValue> array() const;                            ///< an array of anything
  std::vector<std::pair<std::string, TomlValue>> entries() const;  ///< a table, in file order

  // Optional: absent gives the fallback (or empty); present but mistyped throws DataError.
  std::string string_or(std::string fallback) const;
  int64_t integer_or(int64_t fallback) const;
  double number_or(double fallback) const;
  bool boolean_or(bool fallback) const;
  std::vector<std::string> strings_or_empty() const;
  std::map<std::string, std::string> string_table_or_empty() const;
  std::vector<TomlValue> array_or_empty() const;
  std::vector<std::pair<std::string, TomlValue>> entries_or_empty() const;
  /// The *_or getter for the fallback's type: std::string, bool, an integer or double.
  template <typename T>
  T value_or(T fallback) const {
    if constexpr (std::is_same_v<T, bool>)
      return boolean_or(fallback);
    else if constexpr (std::is_integral_v<T>)
      return static_cast<T>(integer_or(fallback));
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(number_or(fallback));
    else
      return string_or(std::move(fallback));
  }

  bool is_table() const { return m_node && m_node->is_table(); }
  bool is_array() const { return m_node && m_node->is_array(); }
  bool is_string() const { return m_node && m_node->is_string(); }

  /// Throws DataError "<file>: <key>: <what>" (a loader's own check of a value).
  [[noreturn]] void fail(std::string_view what) const;

 private:
  std::shared_ptr<const toml::table> m_root;  ///< keeps m_node alive
  const toml::node* m_node;
  std::shared_ptr<const std::string> m_file;
  std::string m_key;
};

/// A parsed document and the name it is reported under ("data/cuda/gpus.toml").
class TomlDocument {
 public:
  TomlDocument(toml::table table, std::string file);
  const std::string& file() const { return *m_file; }
  const toml::table& table() const { return *m_table; }
  TomlValue root() const { return TomlValue(m_table, m_table.get(), m_file, ""); }
  TomlValue operator[](std::string_view key) const { return root()[key]; }
  TomlValue at_path(std::string_view dotted) const { return root().at_path(dotted); }
  /// "<file>: <what>", thrown as DataError (a check that spans several keys).
  [[noreturn]] void fail(std::string_view what) const;

 private:
  std::shared_ptr<const toml::table> m_table;
  std::shared_ptr<const std::string> m_file;
};

/// data/<path> (embedded), parsed; reported as "data/<path>". Throws DataError when the
/// file is not embedded or does not parse ("data/x.toml:12: <what toml++ says>").
TomlDocument toml_document(std::string_view path);

/// The text of data/<path>, a program tailor runs in an interpreter (`python -c TEXT`);
/// a missing one throws DataError (a programming error, as for a document).
std::string embedded_program(std::string_view path);

/// TOML text from elsewhere (a test, a user's file), reported under `source`.
TomlDocument parse_toml(std::string_view text, std::string source);

/// Runs `read` (which reads documents and may throw DataError) and hands back its result,
/// or the DataError's message as an Error: the boundary of a parse function that returns
/// Expected.
template <typename F>
auto expected_from(F&& read) -> Expected<decltype(read())> {
  try {
    if constexpr (std::is_void_v<decltype(read())>) {
      read();
      return {};
    } else {
      return read();
    }
  } catch (const DataError& e) {
    return make_error(e.what());
  }
}

}  // namespace tailor::data
