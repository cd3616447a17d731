#include "cuda/arch_report.h"

namespace tailor::cuda {

ArchReport make_arch_report(const TargetSet& targets, std::optional<NvccCheck> nvcc) {
  ArchReport r;
  r.targets = targets;
  for (Consumer c : {Consumer::torch, Consumer::cmake, Consumer::nvcc, Consumer::flash_attn,
                     Consumer::bitsandbytes})
    r.spellings.push_back(
        {c, std::string(consumer_variable(c)), render_for(c, targets), render_losses(c, targets)});
  for (const auto& cap : known_capabilities()) {
    DeviceCoverage d{cap, coverage_on(targets, cap.cc), {}};
    for (const auto& g : gpus_with_capability(cap.cc)) d.gpu_examples.push_back(g.name);
    r.devices.push_back(std::move(d));
  }
  for (const auto& v : known_cuda_versions()) {
    auto caps = nvcc_capabilities_from_table(v);
    if (caps && unsupported_by(targets, *caps).empty()) r.cuda_versions_that_build.push_back(v);
  }
  if (nvcc) {
    nvcc->problems = unsupported_by(targets, nvcc->nvcc);
    r.nvcc_check = std::move(nvcc);
  }
  return r;
}

}  // namespace tailor::cuda
