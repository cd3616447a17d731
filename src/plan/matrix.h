// tailor.toml: `[defaults]` for every variant, named `[variant.NAME]` tables, and a
// `[matrix]` whose axes (gpu, cpu, cuda, python, torch) expand as a cartesian product,
// minus `exclude` rows, plus `include` rows, into named variants such as
// `pytorch-sm90-avx512` (the names such matrices commonly use), and a GitHub Actions workflow with
// one job per variant (runners, timeouts and caches as `[ci.github]` and
// data/ci/github_actions.toml say).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_settings.h"
#include "plan/matrix_workflow.h"
#include "plan/torch_variant.h"
#include "util/expected.h"

namespace tailor::plan {

struct MatrixAxis {
  std::string name;  ///< gpu | cpu | cuda | python | torch
  std::vector<std::string> values;
};

using MatrixRow = std::map<std::string, std::string>;  ///< axis -> value

struct MatrixSpec {
  std::string prefix = "pytorch";  ///< first part of every variant name
  std::vector<MatrixAxis> axes;    ///< in file order
  std::vector<MatrixRow> include, exclude;
};

struct TailorConfig {
  std::string path;
  TorchVariant defaults;
  std::vector<TorchVariant> variants;  ///< named, file order
  std::optional<MatrixSpec> matrix;
  GithubCiConfig ci;           ///< `[ci.github]`; empty: the data's choices
  cache::CacheSettings cache;  ///< `[cache]`: the compiler cache builds use
};

Expected<TailorConfig> parse_tailor_config(std::string_view text, const std::string& path);
Expected<TailorConfig> load_tailor_config(const std::string& path);

/// The most variants a config may produce: each is a PyTorch build of hours.
inline constexpr size_t k_max_matrix_variants = 512;

/// How many rows the matrix expands to, counted without building them: the product of
/// the axes minus excluded rows plus include rows that add one (an upper bound: an
/// include that merges into rows counts as one). Saturates instead of overflowing;
/// `exact` is false when the product was too large to walk (then the product is returned).
struct MatrixCount {
  uint64_t rows = 0;
  bool exact = true;
};
MatrixCount count_rows(const MatrixSpec& spec);

/// The matrix rows after product, exclude and include, in a stable order. Callers check
/// count_rows() against k_max_matrix_variants first (config_variants does).
std::vector<MatrixRow> expand_rows(const MatrixSpec& spec);
/// `pytorch-sm90-avx512`: prefix, GPU label (sm90, sm80-sm90, sm90ptx, cpu), CPU label,
/// then -cuXYZ / -pyXY / -torchX.Y.Z for the axes that vary.
Expected<std::string> variant_name(const MatrixSpec& spec, const MatrixRow& row);
/// A variant name is 1-64 of [A-Za-z0-9._-]: it becomes a job name, a folder and a
/// command-line argument.
bool valid_variant_name(std::string_view name);

/// Every problem of the config's variants, all of them: names, matrix axis values against
/// tailor's data (torch releases, the Python versions they support, CUDA versions, GPU
/// specs, CPU targets), platforms that conflict with the GPUs named, and the size limit.
std::vector<std::string> check_config(const TailorConfig& config);

/// Every variant of the config: named ones, then the matrix's, each layered on defaults.
/// An error (listing every problem of check_config) when the config has problems.
Expected<std::vector<TorchVariant>> config_variants(const TailorConfig& config);
/// One variant by name (named or from the matrix), or an error listing the names.
Expected<TorchVariant> find_config_variant(const TailorConfig& config, std::string_view name);

/// A GitHub Actions workflow and what the user should know about it (printed to stderr).
struct GithubWorkflow {
  std::string text;
  std::vector<std::string> notes;  ///< "pytorch-cpu-avx2: the plan estimates ..."
};

/// A GitHub Actions workflow: one job per variant running `tailor build torch --config
/// ... --variant NAME --cache sccache` (CPU-only variants on GitHub-hosted runners, the
/// others on self-hosted GPU runners, each of the variant's platform), with tailor built on
/// the runner, sccache's backend from repository secrets, and the wheel, report and log
/// uploaded. A job's timeout is the user's, or the plan's estimate for the runner clamped
/// to the platform's job limit (a note when the estimate does not fit). Every path is under
/// ${{ github.workspace }}; every value is a single-quoted YAML scalar and every argument
/// shell-quoted; only tailor's own templates write `${{`. An error for a name, label,
/// path or value that cannot be emitted safely (control characters, `${{`).
Expected<GithubWorkflow> render_github_actions(
    const TailorConfig& config, const std::vector<TorchVariant>& variants,
    const GithubActionsFacts& facts = github_actions_facts());

}  // namespace tailor::plan
