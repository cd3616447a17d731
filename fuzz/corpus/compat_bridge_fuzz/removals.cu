#include <THC/THC.h>
#include <torch/extension.h>
void f(at::Tensor x) {
  AT_CHECK(x.is_cuda(), "x");
  AT_DISPATCH_FLOATING_TYPES(x.type(), "f", ([&] { THCudaCheck(cudaGetLastError()); }));
  std::unique_ptr<int> p; uint32_t n = 0;
  cub::DeviceScan::ExclusiveSum(a, b, c, d, n, stream, false);
  auto op = cub::Sum();
}
