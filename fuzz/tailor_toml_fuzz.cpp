// libFuzzer target for the TOML that tailor reads from users: a `tailor.toml` (defaults,
// variants, matrix expansion, variant names, the GitHub Actions rendering) and an
// extension recipe. Any bytes give a value or an Error, never a crash or a hang.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plan/extension_recipe.h"
#include "plan/matrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor::plan;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_recipe(text, "fuzz.toml");
  auto config = parse_tailor_config(text, "tailor.toml");
  if (!config) return 0;
  if (config->matrix) {
    // The product of the axes can be large: the fuzzer's input size bounds it only loosely.
    size_t product = 1;
    for (const auto& axis : config->matrix->axes)
      product *= std::max<size_t>(1, axis.values.size());
    if (product > 4096) return 0;
  }
  auto variants = config_variants(*config);
  if (!variants) return 0;
  if (variants->size() <= 256) (void)render_github_actions(*config, *variants);
  if (!variants->empty()) (void)find_config_variant(*config, variants->front().name);
  return 0;
}
