// torch 1.x style: AT_CHECK, c10's CHECK_GE and x.type() in AT_DISPATCH (tailor's e2e test
// fixture). The package's header comes first, before torch's brings what it forgot to include.
// clang-format off
#include "old_util.h"
#include <torch/extension.h>
// clang-format on

extern "C" int old_apis_ceil_div(int a, int b);
extern "C" float old_apis_sum(float a, float b);
void scale_cuda(at::Tensor x, float s);

at::Tensor scale(at::Tensor x, double s) {
  AT_CHECK(x.dim() == 1, "scale: a 1-d tensor please");
  CHECK_GE(x.numel(), 0);
  check_size(x.numel());
  auto y = x.contiguous().clone();
  if (y.is_cuda()) {
    scale_cuda(y, static_cast<float>(s));
    return y;
  }
  AT_DISPATCH_FLOATING_TYPES(y.type(), "scale", [&] {
    auto* p = y.data_ptr<scalar_t>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = static_cast<scalar_t>(p[i] * s);
  });
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale", &scale, "x * s (the CPU path dispatches on x.type())");
  m.def("ceil_div", &old_apis_ceil_div, "THCCeilDiv(a, b)");
  m.def("sum_of", &old_apis_sum, "cub::Sum()(a, b)");
}
