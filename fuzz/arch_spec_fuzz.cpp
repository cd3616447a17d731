// libFuzzer target for the CUDA target spellings: any text must give a TargetSet or an
// Error, never a crash; a set that parses renders for every consumer, and the lossless
// renderings read back to the same set.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cuda/arch_spec.h"
#include "cuda/compatibility.h"
#include "cuda/gpu_catalog.h"
#include "cuda/renderers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor::cuda;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_gpu_spec(text);
  (void)find_gpu(text);
  (void)parse_target_name(text);
  auto set = parse_arch_spec(text);
  if (!set) return 0;
  for (Consumer c : {Consumer::torch, Consumer::cmake, Consumer::nvcc, Consumer::flash_attn,
                     Consumer::bitsandbytes}) {
    auto back = parse_for(c, render_for(c, *set));
    if (render_losses(c, *set).empty() && (!back || !(*back == *set))) std::abort();
  }
  for (const auto& cap : known_capabilities()) (void)coverage_on(*set, cap.cc);
  return 0;
}
