// Known API removals bridged in tailor's copy of a package's source (never the user's
// tree): each rewrite is exact (tokens matched outside comments and literals, replaced by
// what the removed API was defined as) and listed with the package's file and line, so
// the summary and the report say what changed. Lines keep their numbers: added #include
// lines are followed by `#line 1`, so compiler messages still point at the package's lines.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "compat/removals.h"
#include "util/expected.h"

namespace tailor::compat {

/// The build's stack: a removal applies when its library's version here is at or past its
/// `removed_in`. "" (unknown, e.g. no torch): that library's removals are not applied.
struct StackVersions {
  std::string torch;  ///< "2.11.0+cu130"
  std::string cuda;   ///< nvcc's release, "13.0"
};

/// One change in the copy.
struct SourceChange {
  std::string file;        ///< relative to the source folder
  size_t line = 0;         ///< 1-based, the package's own line
  std::string removal;     ///< the removal's id ("torch-at-check", "std-header-cstdint")
  std::string from, to;    ///< what the source had, what it has now
  std::string removed_in;  ///< "torch 1.5", "CUDA 13.0", "GCC 13", "newer libstdc++"
  std::string note;        ///< in place of "removed in X" when that says it badly
  /// "csrc/a.cu:12: AT_CHECK -> TORCH_CHECK (removed in torch 1.5)"
  std::string text() const;
};

/// A file of the package: its path relative to the source folder and its text.
struct SourceFile {
  std::string path;
  std::string text;
};

/// The package's own older -std flags the build driver raises (TAILOR_CXX_STANDARD): to
/// `standard`, each of `from` ("c++14", "gnu++11") it finds.
struct CxxRaise {
  std::string id;                 ///< "torch-cxx17"
  std::string standard;           ///< "17"
  std::vector<std::string> from;  ///< the -std= values raised
  std::string removed_in;         ///< "torch 2.1"
};

struct Bridged {
  std::vector<SourceChange> changes;
  /// The standard raise, unless the stack keeps the old standards or the source holds what
  /// it would change (left_alone says so).
  std::optional<CxxRaise> cxx_raise;
  /// The files tailor wrote beside the package's (its shims), for the build's fingerprint.
  std::vector<SourceFile> added;
  /// Removals the source uses that were left alone, and why (one line each).
  std::vector<std::string> left_alone;
};

/// The changes over files in memory: `files` are rewritten in place, files tailor adds
/// (shims) are appended to `added`. Pure.
Bridged bridge_files(std::vector<SourceFile>& files, std::vector<SourceFile>& added,
                     const StackVersions& stack, const Removals& table);

/// Over a source folder (tailor's copy): its C/C++/CUDA files (at most 20,000, each at most
/// 4 MiB; hidden, build and dist folders left out) read, the changed ones written back
/// with their modification times kept, the shims written beside them.
Expected<Bridged> bridge_source(const std::string& source_dir, const StackVersions& stack);

}  // namespace tailor::compat
