// One wheel of a wheelhouse: what `tailor publish` reads from a wheel before it adds it
// (names, hashes, the METADATA resolvers read instead of the wheel, the GPU target set from
// the provenance or from the device code), and its record in the wheelhouse's state file.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/expected.h"

namespace tailor::wheelhouse {

struct WheelEntry {
  std::string file;     ///< the wheel's file name: "fused_ops-0.1.0-cp312-cp312-linux_x86_64.whl"
  std::string project;  ///< PEP 503 normalized: "fused-ops"
  std::string version;  ///< from the file name
  std::string target_set;            ///< "sm90", "sm80-sm90"; "cpu" for a wheel without device code
  std::vector<std::string> targets;  ///< "sm_90", as the provenance or inspect names them
  std::string sha256;                ///< of the wheel, lowercase hex
  uint64_t size = 0;
  std::string metadata_sha256;  ///< of its METADATA, written beside it as <file>.metadata
  std::string requires_python;  ///< METADATA's Requires-Python, "" when none
  bool foreign = false;         ///< not built by tailor (--allow-foreign): no provenance
  nlohmann::json provenance;    ///< the wheel's tailor-provenance.json; null when foreign
};

/// A wheel read and checked for publishing, with the bytes written beside it.
struct WheelCandidate {
  WheelEntry entry;
  std::string path;      ///< as given
  std::string metadata;  ///< METADATA's bytes
};

enum class ForeignWheels { refused, allowed };

/// Reads `path`: a regular file whose name is a wheel name with a PEP 508 project name, a
/// zip whose dist-info holds METADATA naming the same project, and tailor's provenance (or,
/// with ForeignWheels::allowed, device code that `inspect` reads the targets from). One
/// error line naming the file otherwise.
Expected<WheelCandidate> read_candidate(const std::string& path, ForeignWheels foreign);

/// "sm90", "sm80-sm90": the targets' names without '_', in order of their numbers, joined by
/// '-'; "cpu" for none. An error for a name that is not letters, '_' and digits ("sm_90a").
Expected<std::string> target_set_name(const std::vector<std::string>& targets);

/// A name PEP 508 allows for a project: letters and digits, with . _ - inside.
bool valid_project_name(std::string_view name);

nlohmann::json to_json(const WheelEntry& entry);
/// The entry of the state file; `where` names it in errors. Names and hashes are checked
/// again, so a hand-edited state file cannot point a page outside the wheelhouse.
Expected<WheelEntry> entry_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace tailor::wheelhouse
