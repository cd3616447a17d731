// torch 1.x style: THC, its global state and its helpers (tailor's e2e test fixture).
#include <THC/THC.h>
#include <cub/thread/thread_operators.cuh>
#include <ATen/core/Tensor.h>

extern THCState *state;

__global__ void scale_kernel(float* v, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = cub::Sum()(v[i] * s, 0.0f);
}

void scale_cuda(at::Tensor x, float s) {
  const int n = static_cast<int>(x.numel());
  scale_kernel<<<THCCeilDiv(n, 256), 256, 0, THCState_getCurrentStream(state)>>>(
      x.data_ptr<float>(), n, s);
  THCudaCheck(cudaGetLastError());
}

extern "C" int old_apis_ceil_div(int a, int b) { return THCCeilDiv(a, b); }
extern "C" float old_apis_sum(float a, float b) { return cub::Sum()(a, b); }
