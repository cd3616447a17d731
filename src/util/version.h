// Version strings as tools print them: "13.0.88" (nvcc), "2.11.0+cu130" (torch, a local
// part after '+'), "3.12" (Python), "2.34" (glibc). One parser and one comparison for all.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor {

/// tailor's own version, CMake's project(VERSION): "0.1.0". The one constant that
/// --version, the reports, the slim marker and the wheels' provenance say.
std::string_view tailor_version();

struct Version {
  std::vector<int> parts;  ///< the dotted numbers: {13, 0, 88}
  std::string local;       ///< after '+': "cu130" (not compared)

  int major() const { return parts.empty() ? 0 : parts[0]; }
  int minor() const { return parts.size() > 1 ? parts[1] : 0; }
  int patch() const { return parts.size() > 2 ? parts[2] : 0; }
  /// "13.0"
  std::string major_minor() const;
};

/// Strict: dotted non-negative numbers, optionally "+local". "13.0.88", "2.11.0+cu130",
/// "3.12", "12" parse; "", "1..2", "v1", "1.x" are errors naming the text.
Expected<Version> parse_version(std::string_view text);

/// Dotted numeric comparison (-1, 0, 1): "2.9" < "2.10", "3.4.9" < "3.4.19"; missing parts
/// count as 0 ("13" == "13.0"); a part counts by its leading digits (none: 0); anything
/// from '+' on is ignored ("2.11.0+cu130" == "2.11.0").
int compare_versions(std::string_view a, std::string_view b);

/// The leading number of a version: "13.0.88" -> 13, "12" -> 12; nullopt when it does not
/// start with a digit.
std::optional<int> version_major(std::string_view text);

}  // namespace tailor
