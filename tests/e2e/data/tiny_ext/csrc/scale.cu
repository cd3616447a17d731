// tailor's e2e test fixture: one kernel and a C launcher, no torch or ATen header.
#include <cuda_runtime.h>

// In an anonymous namespace, as real packages keep their kernels: nvcc names such a
// symbol after a hash of the source's absolute path (_GLOBAL__N__<id>_...), which is what
// tests/e2e/build_reproducible.sh checks tailor keeps out of the wheel.
namespace {
__global__ void tiny_ext_scale_kernel(float* x, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}
}  // namespace

// Scales n floats of host memory in place on the current GPU; 0 or a cudaError_t.
extern "C" int tiny_ext_scale(float* values, float factor, int n) {
  if (n <= 0) return 0;
  float* d = nullptr;
  cudaError_t e = cudaMalloc(&d, sizeof(float) * n);
  if (e == cudaSuccess) e = cudaMemcpy(d, values, sizeof(float) * n, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    tiny_ext_scale_kernel<<<(n + 255) / 256, 256>>>(d, factor, n);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(values, d, sizeof(float) * n, cudaMemcpyDeviceToHost);
  if (d) cudaFree(d);
  return static_cast<int>(e);
}

extern "C" const char* tiny_ext_error_string(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
