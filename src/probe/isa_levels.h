// Loader of data/probe/isa_levels.toml: the feature rules behind x86_isa_level() and
// aarch64_isa_level(), and the Arm core names.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace tailor::probe {

struct IsaLevelRule {
  std::string level;
  std::vector<std::string> features;
};

struct IsaLevelTable {
  std::vector<IsaLevelRule> x86_64;
  std::map<std::string, std::string> x86_64_cpuinfo_names;
  std::vector<IsaLevelRule> aarch64;
  /// extension -> levels that already imply it
  std::map<std::string, std::vector<std::string>> aarch64_extensions;
  std::map<std::string, std::string> aarch64_parts;  ///< "0x41:0xd0c" -> "Neoverse-N1"
};

/// Parsed once; a malformed embedded file is a build defect and throws.
const IsaLevelTable& isa_level_table();

}  // namespace tailor::probe
