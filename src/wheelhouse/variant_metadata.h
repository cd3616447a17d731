// Wheel variant metadata (PEP 825, draft) for a wheelhouse's target sets: beside each target
// set's project index, one {name}-{version}-variants.json in the draft's index-level form,
// mapping a label per target set and CUDA ("sm90_cu130") to the NVIDIA provider's properties
// (nvidia :: sm_arch :: 90_real, nvidia :: cuda_version_lower_bound :: 13.0, ...). The facts
// (schema URL, property names, spellings) are data/wheelhouse/variants.toml's, read here once.
// tailor's wheels keep their non-variant names, so the files describe them for tools; no
// installer selects them by these files.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wheelhouse/index_pages.h"
#include "wheelhouse/wheelhouse_entry.h"

namespace tailor::wheelhouse {

struct WheelVariant {
  std::string label;  ///< "sm90_cu130"
  /// namespace -> feature -> values, as the draft's "variants" entries hold them
  std::map<std::string, std::map<std::string, std::vector<std::string>>> properties;
};

/// The variant of a published wheel: its targets as sm_arch values, its CUDA as the bounds.
/// nullopt when a target has no spelling in the provider's terms (arch-specific sm_90a, a
/// CPU wheel) or nothing in the provenance names its CUDA (a foreign wheel).
std::optional<WheelVariant> wheel_variant(const WheelEntry& entry);

/// The variant files of `target_set`'s projects, one per project version with at least one
/// wheel wheel_variant describes: "<set>/simple/<project>/<name>-<version>-variants.json".
std::vector<IndexFile> render_variant_files(const std::string& target_set,
                                            const std::vector<WheelEntry>& wheels);

}  // namespace tailor::wheelhouse
