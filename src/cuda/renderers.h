// Rendering a TargetSet for each consumer, and reading each consumer's own spelling
// back. For every consumer, parse_for(c, render(c, set)) == set whenever
// render_losses(c, set) is empty; when it is not, the rendering is the documented
// nearest spelling and render_losses says, per entry, what changed.
//
// Nearest spellings:
//   torch: PTX without SASS (compute_86 alone) -> "8.6+PTX" (adds sm_86: torch cannot
//          say PTX only); family `f` targets -> the plain CC (torch has no `f`).
//   flash-attn, bitsandbytes: SASS CCs only; their own build adds PTX and a/f variants,
//          so PTX entries are dropped and sm_90a is spelled 90.
//   CMake, nvcc: every set is expressible.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "cuda/target_set.h"
#include "util/expected.h"

namespace tailor::cuda {

enum class Consumer { torch, cmake, nvcc, flash_attn, bitsandbytes };

std::string render_torch_arch_list(const TargetSet& set);      // "8.0;8.6+PTX"
std::string render_cmake_architectures(const TargetSet& set);  // "80-real;86"
std::vector<std::string> render_gencode_flags(
    const TargetSet& set);  // {"-gencode=arch=compute_80,code=sm_80", ...}
std::string render_flash_attn_archs(const TargetSet& set);        // "80;90"
std::string render_bnb_compute_capability(const TargetSet& set);  // "75;80;90"

/// The consumer's spelling as one string (gencode flags joined by spaces).
std::string render_for(Consumer consumer, const TargetSet& set);
/// What the consumer's spelling cannot say about `set`, one line per entry; empty when
/// the rendering is exact.
std::vector<std::string> render_losses(Consumer consumer, const TargetSet& set);
/// Reads the consumer's own spelling with the consumer's meaning (for flash-attn and
/// bitsandbytes "80" is sm_80 only, where the generic CMake reading is sm_80+compute_80).
Expected<TargetSet> parse_for(Consumer consumer, std::string_view text);
/// "TORCH_CUDA_ARCH_LIST", "CMAKE_CUDA_ARCHITECTURES", ...
std::string_view consumer_variable(Consumer consumer);

}  // namespace tailor::cuda
