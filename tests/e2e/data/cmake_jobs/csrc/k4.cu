// tailor's e2e test fixture: one kernel behind a host function.
#include <cuda_runtime.h>

namespace {
__global__ void scale_by_4(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= 4.0f;
}
}  // namespace

extern "C" int cmake_jobs_k4() { return reinterpret_cast<void*>(&scale_by_4) != nullptr ? 1 : 0; }
