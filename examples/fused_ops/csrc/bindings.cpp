// Python bindings and the CPU implementations. Every op checks its inputs once here, then
// runs the CUDA launcher for CUDA tensors or the plain loops below for CPU tensors, so the
// CPU tests exercise the same built library the GPU tests do.
#include <torch/extension.h>

#include <ATen/OpMathType.h>

#include <cmath>

#include "fused_ops.h"

namespace fused_ops {
namespace {

void check_same(const at::Tensor& a, const at::Tensor& b, const char* what) {
  TORCH_CHECK(a.device() == b.device(), what, ": tensors on different devices");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), what, ": dtypes differ (", a.scalar_type(),
              " vs ", b.scalar_type(), ")");
}

void check_last_dim(const at::Tensor& x, const at::Tensor& v, const char* what) {
  TORCH_CHECK(x.dim() >= 1, what, ": input must have at least one dimension");
  TORCH_CHECK(v.dim() == 1 && v.size(0) == x.size(-1), what,
              ": expected a 1-D tensor of size ", x.size(-1), ", got ", v.sizes());
}

at::Tensor bias_gelu(const at::Tensor& x_in, const at::Tensor& bias_in) {
  check_same(x_in, bias_in, "bias_gelu");
  check_last_dim(x_in, bias_in, "bias_gelu");
  auto x = x_in.contiguous();
  auto bias = bias_in.contiguous();
  auto out = at::empty_like(x);
  if (x.is_cuda()) {
    bias_gelu_cuda(x, bias, out);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* px = x.const_data_ptr<scalar_t>();
    const scalar_t* pb = bias.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    const int64_t n = x.numel(), hidden = bias.numel();
    for (int64_t i = 0; i < n; ++i) {
      acc_t v = static_cast<acc_t>(px[i]) + static_cast<acc_t>(pb[i % hidden]);
      po[i] = static_cast<scalar_t>(acc_t(0.5) * v * (acc_t(1) + std::erf(v * acc_t(M_SQRT1_2))));
    }
  });
  return out;
}

at::Tensor scale_residual(const at::Tensor& x_in, const at::Tensor& residual_in, double scale) {
  check_same(x_in, residual_in, "scale_residual");
  TORCH_CHECK(x_in.sizes() == residual_in.sizes(), "scale_residual: shapes differ (",
              x_in.sizes(), " vs ", residual_in.sizes(), ")");
  auto x = x_in.contiguous();
  auto residual = residual_in.contiguous();
  auto out = at::empty_like(x);
  if (x.is_cuda()) {
    scale_residual_cuda(x, residual, scale, out);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "scale_residual_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* px = x.const_data_ptr<scalar_t>();
    const scalar_t* pr = residual.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < x.numel(); ++i)
      po[i] = static_cast<scalar_t>(static_cast<acc_t>(px[i]) * static_cast<acc_t>(scale) +
                                    static_cast<acc_t>(pr[i]));
  });
  return out;
}

at::Tensor rms_norm(const at::Tensor& x_in, const at::Tensor& weight_in, double eps) {
  check_same(x_in, weight_in, "rms_norm");
  check_last_dim(x_in, weight_in, "rms_norm");
  auto x = x_in.contiguous();
  auto weight = weight_in.contiguous();
  auto out = at::empty_like(x);
  if (x.is_cuda()) {
    rms_norm_cuda(x, weight, eps, out);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rms_norm_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* px = x.const_data_ptr<scalar_t>();
    const scalar_t* pw = weight.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    const int64_t cols = x.size(-1);
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    for (int64_t r = 0; r < rows; ++r) {
      acc_t sq = 0;
      for (int64_t c = 0; c < cols; ++c) {
        acc_t v = static_cast<acc_t>(px[r * cols + c]);
        sq += v * v;
      }
      acc_t inv = acc_t(1) / std::sqrt(sq / static_cast<acc_t>(cols) + static_cast<acc_t>(eps));
      for (int64_t c = 0; c < cols; ++c)
        po[r * cols + c] = static_cast<scalar_t>(static_cast<acc_t>(px[r * cols + c]) * inv *
                                                 static_cast<acc_t>(pw[c]));
    }
  });
  return out;
}

at::Tensor row_sum(const at::Tensor& x_in) {
  TORCH_CHECK(x_in.dim() >= 1, "row_sum: input must have at least one dimension");
  auto x = x_in.contiguous();
  auto sizes = x.sizes().vec();
  sizes.pop_back();
  auto out = at::empty(sizes, x.options());
  if (x.is_cuda()) {
    row_sum_cuda(x, out);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "row_sum_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* px = x.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    const int64_t cols = x.size(-1);
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    for (int64_t r = 0; r < rows; ++r) {
      acc_t s = 0;
      for (int64_t c = 0; c < cols; ++c) s += static_cast<acc_t>(px[r * cols + c]);
      po[r] = static_cast<scalar_t>(s);
    }
  });
  return out;
}

}  // namespace
}  // namespace fused_ops

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Fused elementwise and reduction kernels (tailor's example extension)";
  m.def("bias_gelu", &fused_ops::bias_gelu, "gelu(x + bias), bias over the last dimension",
        py::arg("x"), py::arg("bias"));
  m.def("scale_residual", &fused_ops::scale_residual, "x * scale + residual", py::arg("x"),
        py::arg("residual"), py::arg("scale"));
  m.def("rms_norm", &fused_ops::rms_norm, "x / sqrt(mean(x^2, -1) + eps) * weight", py::arg("x"),
        py::arg("weight"), py::arg("eps") = 1e-6);
  m.def("row_sum", &fused_ops::row_sum, "sum over the last dimension", py::arg("x"));
}
