// Launchers implemented in the .cu files. They take already-validated, contiguous CUDA
// tensors and write into a preallocated output, so the .cu files include only the light
// ATen headers (torch/extension.h in a .cu file triples its compile time).
#pragma once
#include <ATen/core/Tensor.h>

namespace fused_ops {

// out = gelu(x + bias), bias broadcast over the last dimension; exact (erf) GELU.
void bias_gelu_cuda(const at::Tensor& x, const at::Tensor& bias, at::Tensor& out);
// out = x * scale + residual.
void scale_residual_cuda(const at::Tensor& x, const at::Tensor& residual, double scale,
                         at::Tensor& out);
// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight, one block per row.
void rms_norm_cuda(const at::Tensor& x, const at::Tensor& weight, double eps, at::Tensor& out);
// out[r] = sum(x[r, :]), accumulated in float (double for double inputs).
void row_sum_cuda(const at::Tensor& x, at::Tensor& out);

}  // namespace fused_ops
