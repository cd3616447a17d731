// The facts tailor knows (targets, GPUs, recipes, failure patterns, policies) are the
// files under data/, compiled into the binary. Each file has exactly one loader, in
// the module that owns the concept; this module only hands out the text.
#pragma once
#include <span>
#include <string_view>

#include "util/expected.h"

namespace tailor::data {

struct DataFile {
  std::string_view path;  ///< relative to data/, e.g. "cuda/gpus.toml"
  std::string_view text;
};

std::span<const DataFile> all_files();

/// The text of data/<path>, or an error naming the missing file.
Expected<std::string_view> file(std::string_view path);

}  // namespace tailor::data
