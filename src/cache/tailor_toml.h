// A user's tailor.toml, read by one loader for every command that takes one (`matrix`,
// `plan --config`, `build torch --config`, `build --config`, `cache status --config`): the
// bounded read, the TOML parse, the tables it may have, and its [cache], which builds of
// every kind use. plan (matrix.h) reads [defaults], [variant], [matrix] and [ci] from the
// same document.
#pragma once
#include <string>
#include <string_view>

#include "cache/cache_settings.h"
#include "data/toml_document.h"
#include "util/expected.h"

namespace tailor::cache {

struct TailorToml {
  data::TomlDocument document;  ///< the whole file, reported under its path
  CacheSettings cache;          ///< its [cache]; defaults when it has none
};

/// `text` as the tailor.toml at `path`: TOML ("PATH:LINE:COLUMN: what" when it is not),
/// with no table but defaults, variant, matrix, ci, cache and wheelhouse, and its [cache] read
/// (parse_cache_table).
Expected<TailorToml> parse_tailor_toml(std::string_view text, const std::string& path);

/// The file at `path`, read with a bound (a config is a few KiB: 1 MiB; a FIFO or a device
/// is an error, not a hang; a binary file is refused at its first NUL), then
/// parse_tailor_toml.
Expected<TailorToml> load_tailor_toml(const std::string& path);

}  // namespace tailor::cache
