// The index pages of one target set of a wheelhouse, rendered from its wheels (no files
// touched): PEP 503 HTML with PEP 658/714 metadata attributes and a sha256 in every link,
// and the PEP 691 JSON form (api-version 1.1) beside each page, with relative links only so
// the folder can be moved or served over http.
#pragma once
#include <string>
#include <vector>

#include "wheelhouse/wheelhouse_entry.h"

namespace tailor::wheelhouse {

/// Where a wheel's bytes live, relative to the wheelhouse root: files/<target set>/<file>
/// (one copy; its METADATA beside it as <file>.metadata).
std::string wheel_file_path(const WheelEntry& entry);

struct IndexFile {
  std::string path;  ///< relative to the wheelhouse root: "sm90/simple/fused-ops/index.html"
  std::string text;
};

/// Every page of `target_set`'s index from its wheels: simple/index.html and index.json, and
/// per project simple/<project>/index.html and index.json, with the PEP 825 variant files
/// beside them (variant_metadata.h). Wheels of other sets are ignored.
std::vector<IndexFile> render_index(const std::string& target_set,
                                    const std::vector<WheelEntry>& wheels);

}  // namespace tailor::wheelhouse
