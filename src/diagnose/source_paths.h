// Where a compiler's message points in the user's own source. A tailor build compiles a
// copy of the package (the work folder's src/), inside a mount namespace where the work
// folder is /tmp/.tailor-build/<package>, and ninja's compilers print paths relative to
// ninja's build folder (../../csrc/rms_norm.cu). The log's own step header says how those
// places relate ("### cd HOST_DIR && ... --bind HOST FIXED ..."), and the failed compile
// command names the file by its absolute path; from these a printed path is mapped back.
// Pure functions over the log's lines.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tailor::diagnose {

/// What the log's step header before line `upto` (0-based) says about the build's folders.
struct BuildPaths {
  std::string step_dir;  ///< the package copy the step ran in, on the host ("### cd DIR &&"); ""
                         ///< when no header
  std::vector<std::pair<std::string, std::string>>
      binds;  ///< (path inside the namespace, host path), from --bind
};
BuildPaths read_build_paths(const std::vector<std::string>& lines, size_t upto);

struct SourcePath {
  std::string printed;     ///< as the compiler printed it
  std::string build_file;  ///< the file the build compiled, absolute, on the host; "" when unknown
  std::string relative;    ///< its path inside the package ("csrc/rms_norm.cu"); "" when outside it
                           ///< or unknown
  std::string user_file;   ///< source_dir/relative, when the user's source folder is known
  /// For a message: the user's file, else "RELATIVE in the package's source", else the build's
  /// file, else the path as printed.
  std::string shown() const;
};

/// Maps `printed`, from a compiler message on log line `line_index` (0-based; the lines above
/// it carry the compile command with the file's absolute path).
SourcePath map_source_path(std::string_view printed, const std::vector<std::string>& lines,
                           size_t line_index, const BuildPaths& paths, std::string_view source_dir);

}  // namespace tailor::diagnose
