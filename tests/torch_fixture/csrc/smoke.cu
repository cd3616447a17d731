// TEST FIXTURE: one tiny kernel standing in for libtorch_cuda.so's device code.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void tailor_fixture_axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Returns 0 when the kernel ran and gave the right answer (the GPU smoke test).
extern "C" int tailor_fixture_smoke() {
  const int n = 256;
  float host_x[n], host_y[n];
  for (int i = 0; i < n; ++i) host_x[i] = 1.0f, host_y[i] = 2.0f;
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) return 1;
  if (cudaMalloc(&y, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMemcpy(x, host_x, sizeof host_x, cudaMemcpyHostToDevice);
  cudaMemcpy(y, host_y, sizeof host_y, cudaMemcpyHostToDevice);
  tailor_fixture_axpy<<<1, n>>>(3.0f, x, y, n);
  cudaError_t err = cudaMemcpy(host_y, y, sizeof host_y, cudaMemcpyDeviceToHost);
  cudaFree(x);
  cudaFree(y);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "smoke: %s\n", cudaGetErrorString(err));
    return 2;
  }
  for (int i = 0; i < n; ++i)
    if (host_y[i] != 5.0f) return 3;
  return 0;
}
