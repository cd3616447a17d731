// Row-wise reductions: one block per row, a shared-memory tree reduction in the
// accumulation type (float for half/bfloat16, double for double).
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include "fused_ops.h"

namespace fused_ops {
namespace {

constexpr int k_threads = 256;

template <typename acc_t>
__device__ acc_t block_sum(acc_t v, acc_t* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  acc_t total = shared[0];
  __syncthreads();
  return total;
}

template <typename scalar_t>
__global__ void rms_norm_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w,
                                scalar_t* __restrict__ out, int64_t cols, double eps) {
  using acc_t = at::opmath_type<scalar_t>;
  __shared__ acc_t shared[k_threads];
  const scalar_t* row = x + blockIdx.x * cols;
  acc_t sq = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    acc_t v = static_cast<acc_t>(row[c]);
    sq += v * v;
  }
  acc_t mean = block_sum(sq, shared) / static_cast<acc_t>(cols);
  acc_t inv = acc_t(1) / sqrt(mean + static_cast<acc_t>(eps));
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    out[blockIdx.x * cols + c] =
        static_cast<scalar_t>(static_cast<acc_t>(row[c]) * inv * static_cast<acc_t>(w[c]));
}

template <typename scalar_t>
__global__ void row_sum_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out,
                               int64_t cols) {
  using acc_t = at::opmath_type<scalar_t>;
  __shared__ acc_t shared[k_threads];
  acc_t s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += static_cast<acc_t>(x[blockIdx.x * cols + c]);
  acc_t total = block_sum(s, shared);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<scalar_t>(total);
}

}  // namespace

void rms_norm_cuda(const at::Tensor& x, const at::Tensor& weight, double eps, at::Tensor& out) {
  const int64_t cols = x.size(-1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0) return;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rms_norm_cuda", [&] {
    rms_norm_kernel<scalar_t><<<static_cast<unsigned>(rows), k_threads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), weight.const_data_ptr<scalar_t>(),
        out.mutable_data_ptr<scalar_t>(), cols, eps);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void row_sum_cuda(const at::Tensor& x, at::Tensor& out) {
  const int64_t cols = x.size(-1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0) return;
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "row_sum_cuda", [&] {
    row_sum_kernel<scalar_t><<<static_cast<unsigned>(rows), k_threads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), cols);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace fused_ops
