#include <cstdint>
__device__ inline void s(void* p, const void* g) {
  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile(
    "{\n"
    "   .reg .b64 p;\n"
    "   createpolicy.fractional.L2::evict_first.b64 p, 1.0;"
    "   cp.async.cg.shared.global.L2::cache_hint [%0], [%1], %2, p;\n"
    "}\n" :: "r"(smem), "l"(g), "n"(16));
}
