// tailor's e2e test fixture: one kernel, in an anonymous namespace (its symbol name then
// carries nvcc's path-derived id), behind an extern "C" launcher.
#include <cuda_runtime.h>

namespace {
__global__ void scale_kernel(float* v, float f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= f;
}
}  // namespace

extern "C" int multi_ext_scale(float* values, float factor, int n) {
  float* d = nullptr;
  cudaError_t e = cudaMalloc(&d, sizeof(float) * n);
  if (e == cudaSuccess) e = cudaMemcpy(d, values, sizeof(float) * n, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) scale_kernel<<<(n + 255) / 256, 256>>>(d, factor, n);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaMemcpy(values, d, sizeof(float) * n, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return static_cast<int>(e);
}
