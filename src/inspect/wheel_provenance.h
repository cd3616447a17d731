// The provenance tailor writes into a wheel it built (`<name>.dist-info/tailor-provenance.json`,
// see outputs/build_report.h BuildProvenance), read back: by `tailor build
// --verify-reproducible` to rebuild the wheel, by the wheelhouse to file it under its targets
// and to match a build's inputs against it. One reader, bounded, over the wheel's bytes.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "formats/zip.h"
#include "util/expected.h"

namespace tailor::inspect {

inline constexpr const char* k_provenance_file = "tailor-provenance.json";

/// What the wheel's tailor-provenance.json says (the fields a rebuild or a match needs).
struct WheelProvenance {
  std::string tool_version;
  std::string package, recipe, profile;
  std::map<std::string, int> split_units;  ///< units split on their own, and how many ways
  std::vector<std::string> targets;        ///< "sm_90", as the build named them
  std::string source_kind, source_name, digest_kind, digest;
  std::map<std::string, std::string> toolchain;    ///< nvcc, python, torch, gcc, ninja, ...
  std::map<std::string, std::string> environment;  ///< the variables that decide the bytes
  std::string text;                                ///< the file as stored in the wheel
};

/// The provenance in `file` (a wheel's bytes, `archive` its parsed directory; `path` names it
/// in messages): an error when the wheel carries none (not built by tailor), or when the file
/// is over 1 MiB, damaged, or lacks the package, targets or source digest.
Expected<WheelProvenance> read_wheel_provenance(Bytes file, const formats::ZipArchive& archive,
                                                const std::string& path);

/// The same for a wheel on disk.
Expected<WheelProvenance> read_wheel_provenance(const std::string& wheel);

/// Parses the provenance file's text; `where` names it in messages.
Expected<WheelProvenance> parse_wheel_provenance(std::string_view text, const std::string& where);

/// The member `<something>.dist-info/<file>` of a wheel's top-level dist-info folder, or null.
const formats::ZipEntry* find_dist_info_member(const formats::ZipArchive& archive,
                                               std::string_view file);

}  // namespace tailor::inspect
