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

/// One Arm core by its MIDR implementer and part number.
struct ArmCore {
  unsigned implementer = 0;  ///< 0x41 = Arm
  unsigned part = 0;         ///< 0xd0c
  std::string name;          ///< "Neoverse-N1"
  std::string neoverse;      ///< the Neoverse class it covers ("N1"), empty when none
  std::string seen_in;       ///< "AWS Graviton2 (c6g, m6g, g5g), Ampere Altra"
};

struct IsaLevelTable {
  std::vector<IsaLevelRule> x86_64;
  std::map<std::string, std::string> x86_64_cpuinfo_names;
  std::vector<IsaLevelRule> aarch64;
  /// extension -> levels that already imply it
  std::map<std::string, std::vector<std::string>> aarch64_extensions;
  std::vector<std::string> aarch64_hwcap;   ///< HWCAP bit n -> its cpuinfo name
  std::vector<std::string> aarch64_hwcap2;  ///< HWCAP2 bit n -> its cpuinfo name
  std::vector<ArmCore> aarch64_cores;
  /// Neoverse classes by features, newest first (IsaLevelRule::level holds the class).
  std::vector<IsaLevelRule> aarch64_neoverse_classes;

  const ArmCore* find_arm_core(unsigned implementer, unsigned part) const;
};

/// Parsed once; a malformed embedded file is a build defect and throws.
const IsaLevelTable& isa_level_table();

}  // namespace tailor::probe
