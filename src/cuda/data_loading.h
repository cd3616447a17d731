// Shared by the loaders of data/cuda/*.toml (internal to the cuda module): the embedded
// files are part of the program, so a malformed one is a bug caught by the loader tests;
// it throws a std::logic_error naming the file and field.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "data/data_files.h"

namespace tailor::cuda::detail {

inline toml::table load_table(std::string_view path) {
  auto text = data::file(path);
  if (!text) throw std::logic_error(text.error().message);
  try {
    return toml::parse(*text, path);
  } catch (const toml::parse_error& e) {
    throw std::logic_error("data/" + std::string(path) + ": " + std::string(e.description()));
  }
}

[[noreturn]] inline void bad_field(std::string_view path, std::string_view what) {
  throw std::logic_error("data/" + std::string(path) + ": " + std::string(what));
}

template <typename T>
T require(const toml::node_view<const toml::node>& node, std::string_view path, std::string_view field) {
  auto v = node.value<T>();
  if (!v) bad_field(path, "missing or mistyped field '" + std::string(field) + "'");
  return *v;
}

}  // namespace tailor::cuda::detail
