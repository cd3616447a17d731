#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include "fused_ops.h"

namespace fused_ops {
namespace {

template <typename scalar_t>
__global__ void bias_gelu_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ bias,
                                 scalar_t* __restrict__ out, int64_t n, int64_t hidden) {
  using acc_t = at::opmath_type<scalar_t>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    acc_t v = static_cast<acc_t>(x[i]) + static_cast<acc_t>(bias[i % hidden]);
    out[i] = static_cast<scalar_t>(acc_t(0.5) * v * (acc_t(1) + erf(v * acc_t(M_SQRT1_2))));
  }
}

}  // namespace

void bias_gelu_cuda(const at::Tensor& x, const at::Tensor& bias, at::Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_cuda", [&] {
    bias_gelu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), bias.const_data_ptr<scalar_t>(),
        out.mutable_data_ptr<scalar_t>(), n, bias.numel());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace fused_ops
