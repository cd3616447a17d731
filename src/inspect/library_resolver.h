// Needed-library resolution as the dynamic loader does it (glibc ld.so, and auditwheel's
// lddtree after it): an object with DT_RUNPATH searches only its RUNPATH for its direct
// needs; an object without one searches its DT_RPATH and then the DT_RPATH of the objects
// that loaded it (an object with RUNPATH has no RPATH at all). `$ORIGIN`/`${ORIGIN}` is the
// directory of the needing object (inside the wheel: its install path; on disk: its
// folder); `$LIB`/`$PLATFORM` depend on the loading system and are reported, not guessed.
// Then the system. A file of the needed name elsewhere in the wheel that no search path
// reaches is "not found", as the loader would say. Search paths are deduplicated and capped
// (data/manylinux/loader.toml), and files are looked up by path in a hash index, so a
// hostile RUNPATH costs O(cap) per need.
#pragma once
#include <string>
#include <vector>

#include "inspect/inspect_report.h"

namespace tailor::inspect {

/// The facts of data/manylinux/loader.toml.
struct LoaderRules {
  size_t max_search_entries = 256;  // distinct RUNPATH/RPATH entries searched per object
  std::vector<std::string> build_machine_prefixes;  // "/project/", "/root/", ...
  static const LoaderRules& get();
  /// The prefix an absolute entry starts with when it names a build-machine folder, or "".
  std::string build_machine_prefix(const std::string& entry) const;
};

/// Resolves and classifies the libraries of one wheel. `member_names` are every member
/// of the archive (paths as stored); library paths are member names too.
std::vector<InspectedLibrary> resolve_wheel_libraries(std::vector<LibraryReport> libraries,
                                                      const std::vector<std::string>& member_names);

/// Resolves and classifies libraries on disk (given files, or found under directories):
/// search paths are looked up in the file system; a need found at one of the inputs is
/// bundled, one found elsewhere is called by where it resolves.
std::vector<InspectedLibrary> resolve_installed_libraries(std::vector<LibraryReport> libraries);

}  // namespace tailor::inspect
