// tailor's e2e test fixture: one kernel behind a host function.
#include <cuda_runtime.h>

namespace {
__global__ void add_one(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] += 1.0f;
}
}  // namespace

extern "C" int cmake_archs_kernels() { return reinterpret_cast<void*>(&add_one) != nullptr ? 1 : 0; }
