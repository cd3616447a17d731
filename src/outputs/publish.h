// Atomic publication of build outputs. Files are written into a staging folder beside the
// output folder (same file system), then renamed into place one by one, the wheel last,
// so a reader sees either no wheel or a complete one with its report. If anything fails
// before commit(), the staging folder is removed and the output folder is as it was (not
// even created when it did not exist).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "outputs/build_report.h"
#include "util/expected.h"

namespace tailor::outputs {

class PublishStaging {
 public:
  /// Creates `<parent of out_dir>/.<name of out_dir>.tailor-staging-XXXXXX`.
  static Expected<PublishStaging> create(const std::string& out_dir);
  PublishStaging(PublishStaging&& other) noexcept;
  PublishStaging& operator=(PublishStaging&&) = delete;
  PublishStaging(const PublishStaging&) = delete;
  ~PublishStaging();  ///< removes the staging folder unless committed

  /// The folder to write outputs into.
  const std::string& dir() const { return m_dir; }
  const std::string& out_dir() const { return m_out_dir; }
  /// Copies `source` into the staging folder under `name` (a plain file name).
  Expected<std::string> add_copy(const std::string& source, const std::string& name);
  /// Writes `text` into the staging folder under `name`.
  Expected<std::string> add_text(const std::string& name, const std::string& text);
  /// Creates out_dir if needed and renames every staged file into it, files named in
  /// `last` after the others (in that order). Returns the published paths.
  Expected<std::vector<std::string>> commit(const std::vector<std::string>& last = {});

 private:
  PublishStaging(std::string out_dir, std::string dir);
  std::string m_out_dir;
  std::string m_dir;
  bool m_done = false;
};

/// The one publish, for torch and extension builds alike: into `out_dir`, together, the
/// build's log (`<wheel>.build.log`, the report's log path then names it), the report
/// (`<wheel>.report.json` and its page), `extra` files beside them (name, text), and the
/// wheel `wheel_file` last under the report's wheel name; the report is marked ok and its
/// wheel path set. Refused once a signal came: an interrupted run publishes nothing.
/// Returns the published paths.
Expected<std::vector<std::string>> publish_build(
    const std::string& out_dir, BuildReport& report, const std::string& wheel_file,
    const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace tailor::outputs
