// tailor.toml: `[defaults]` for every variant, named `[variant.NAME]` tables, and a
// `[matrix]` whose axes (gpu, cpu, cuda, python, torch) expand as a cartesian product,
// minus `exclude` rows, plus `include` rows, into named variants such as
// `pytorch-sm90-avx512` (seed 004's names), and a GitHub Actions workflow with one job
// per variant.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plan/torch_variant.h"
#include "util/expected.h"

namespace tailor::plan {

struct MatrixAxis {
  std::string name;                 ///< gpu | cpu | cuda | python | torch
  std::vector<std::string> values;
};

using MatrixRow = std::map<std::string, std::string>;  ///< axis -> value

struct MatrixSpec {
  std::string prefix = "pytorch";   ///< first part of every variant name
  std::vector<MatrixAxis> axes;     ///< in file order
  std::vector<MatrixRow> include, exclude;
};

struct TailorConfig {
  std::string path;
  TorchVariant defaults;
  std::vector<TorchVariant> variants;  ///< named, file order
  std::optional<MatrixSpec> matrix;
};

Expected<TailorConfig> parse_tailor_config(std::string_view text, const std::string& path);
Expected<TailorConfig> load_tailor_config(const std::string& path);

/// The matrix rows after product, exclude and include, in a stable order.
std::vector<MatrixRow> expand_rows(const MatrixSpec& spec);
/// `pytorch-sm90-avx512`: prefix, GPU label (sm90, sm80-sm90, sm90ptx, cpu), CPU label,
/// then -cuXYZ / -pyXY / -torchX.Y.Z for the axes that vary.
Expected<std::string> variant_name(const MatrixSpec& spec, const MatrixRow& row);
/// Every variant of the config: named ones, then the matrix's, each layered on defaults.
Expected<std::vector<TorchVariant>> config_variants(const TailorConfig& config);
/// One variant by name (named or from the matrix), or an error listing the names.
Expected<TorchVariant> find_config_variant(const TailorConfig& config, std::string_view name);

/// A GitHub Actions workflow: one job per variant running `tailor build torch --config
/// ... --variant NAME` on a runner of the variant's platform, uploading the wheel.
std::string render_github_actions(const TailorConfig& config, const std::vector<TorchVariant>& variants);

}  // namespace tailor::plan
