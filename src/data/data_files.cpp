#include "data/data_files.h"

#include <string>

namespace tailor::data {

Expected<std::string_view> file(std::string_view path) {
  for (const auto& f : all_files())
    if (f.path == path) return f.text;
  return make_error("built-in data file data/" + std::string(path) + " is missing");
}

}  // namespace tailor::data
