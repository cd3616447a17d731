// The target platform (and CPU) that a variant's GPU names imply. The rule and its facts
// live in cuda/gpu_platform.h (GPU catalog data, so inspect and build below plan use the
// same function); plan's callers reach them by these names.
#pragma once
#include "cuda/gpu_platform.h"

namespace tailor::plan {

using cuda::implied_platform;
using cuda::ImpliedPlatform;
using cuda::normalize_platform;
using cuda::variant_platform;

}  // namespace tailor::plan
