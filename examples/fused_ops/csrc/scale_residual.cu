#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include "fused_ops.h"

namespace fused_ops {
namespace {

template <typename scalar_t, typename acc_t>
__global__ void scale_residual_kernel(const scalar_t* __restrict__ x,
                                      const scalar_t* __restrict__ residual, acc_t scale,
                                      scalar_t* __restrict__ out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<scalar_t>(static_cast<acc_t>(x[i]) * scale +
                                   static_cast<acc_t>(residual[i]));
  }
}

}  // namespace

void scale_residual_cuda(const at::Tensor& x, const at::Tensor& residual, double scale,
                         at::Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "scale_residual_cuda", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    scale_residual_kernel<scalar_t, acc_t><<<blocks, threads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), residual.const_data_ptr<scalar_t>(),
        static_cast<acc_t>(scale), out.mutable_data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace fused_ops
