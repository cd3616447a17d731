#include "workflow/stack_build.h"

#include "util/strings.h"

namespace tailor::workflow {

ExtensionBuildOptions stack_row_build_options(const stack::StackResult& stack,
                                              const stack::Row& row,
                                              const StackBuildOptions& options) {
  ExtensionBuildOptions o;
  o.source = row.sdist_file;
  std::string gpu = stack.target.gpu_text;
  if (gpu.empty()) {
    std::vector<std::string> ccs;
    for (const auto& cc : stack.target.gpus) ccs.push_back(cc.str());
    gpu = join(ccs, ",");
  }
  if (!gpu.empty()) o.gpu = {gpu};
  o.python = stack.torch_python.empty() ? options.python : stack.torch_python;
  o.out_dir = options.out_dir;
  o.tests = ExtensionBuildOptions::Tests::never;
  o.display = options.display;
  o.status_out = options.status_out;
  return o;
}

std::vector<StackBuildOutcome> build_stack_packages(
    const stack::StackResult& stack, const StackBuildOptions& options,
    const std::function<ExtensionBuildResult(const ExtensionBuildOptions&)>& build) {
  std::vector<StackBuildOutcome> out;
  for (const auto& row : stack.rows) {
    if (row.outcome != stack::Outcome::build || row.kind == stack::Kind::torch) continue;
    out.push_back({row.name, build(stack_row_build_options(stack, row, options))});
    if (out.back().result.status != BuildStatus::ok) break;
  }
  return out;
}

}  // namespace tailor::workflow
