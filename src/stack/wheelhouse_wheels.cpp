// --wheelhouse: a package the stack would build from its sdist is prebuilt when a `tailor
// publish` wheelhouse holds the wheel of that build's inputs (wheelhouse::stack_input_mismatch,
// the rules `tailor build --wheelhouse` fetches by, less the compiler the stack cannot know).
#include <fmt/format.h>

#include <algorithm>

#include "stack/stack_context.h"
#include "wheelhouse/index_pages.h"
#include "wheelhouse/wheelhouse.h"
#include "wheelhouse/wheelhouse_fetch.h"
#include "wheelhouse/wheelhouse_store.h"

namespace tailor::stack {

std::vector<std::string> gpu_build_targets(const Target& target) {
  std::vector<std::string> out;
  for (const auto& cc : target.gpus) out.push_back(fmt::format("sm_{}", cc.number()));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Expected<void> take_wheelhouse(Context& c, std::vector<Row>& rows) {
  if (c.request.wheelhouse.empty()) return {};
  TAILOR_TRY(store, wheelhouse::open_store(c.request.wheelhouse));
  TAILOR_TRY(wheels, wheelhouse::read_wheelhouse(c.request.wheelhouse));
  for (auto& row : rows) {
    if (row.outcome != Outcome::build || row.kind == Kind::torch || row.sdist_sha256.empty())
      continue;
    // As the provenance writes it: "2.11.0+cu130 (CUDA 13.0)".
    const auto& torch = c.result.torch;
    wheelhouse::BuildInputs in{row.key,
                               row.sdist_sha256,
                               gpu_build_targets(c.target),
                               torch.version.empty() || !torch.cuda
                                   ? torch.version
                                   : torch.version + " (CUDA " + torch.cuda->to_string() + ")",
                               "",
                               c.target.python,
                               row.recipe,
                               ""};
    std::string closest;
    for (const auto& e : wheels) {
      std::string why = wheelhouse::stack_input_mismatch(e, in);
      if (!why.empty()) {
        if (e.project == row.key) closest = e.file + ": " + why;
        continue;
      }
      std::string url = store->origin(wheelhouse::wheel_file_path(e));
      if (url.starts_with("/")) url = "file://" + url;
      row.outcome = Outcome::prebuilt;
      row.wheel = true;
      row.covers = "yes";
      row.buildable = "-";
      row.wheel_url = url;
      row.wheel_sha256 = e.sha256;
      row.wheel_file = e.file;
      row.targets = e.targets;
      row.wheelhouse = store->describe();
      row.reason = fmt::format(
          "{} in the wheelhouse {}, built by tailor from {} for {}", e.file, store->describe(),
          row.sdist_file.empty() ? row.sdist_url
                                 : std::filesystem::path(row.sdist_file).filename().string(),
          e.target_set);
      closest.clear();
      break;
    }
    if (!closest.empty()) row.reason += "; the wheelhouse's " + closest;
  }
  return {};
}

}  // namespace tailor::stack
