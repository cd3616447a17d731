#include "cuda/compatibility.h"

#include <gtest/gtest.h>

#include "cuda/arch_spec.h"

using namespace tailor::cuda;

namespace {
ComputeCapability cc(const char* s) { return *parse_compute_capability(s); }

// "mode via" for a device, e.g. "native sm_80", "ptx compute_86", "none".
std::string how(const char* spec, const char* device) {
  auto set = parse_arch_spec(spec);
  if (!set) return "error";
  Coverage c = coverage_on(*set, cc(device));
  std::string m{run_mode_key(c.mode)};
  return c.via ? m + " " + c.via->name() : m;
}
}  // namespace

TEST(Compatibility, TruthTable) {
  struct Case {
    const char* spec;
    const char* device;
    const char* expected;
  };
  const Case cases[] = {
      // SASS: same major, equal or higher minor
      {"sm_80", "8.0", "native sm_80"},
      {"sm_80", "8.6", "compatible_sass sm_80"},
      {"sm_80", "8.9", "compatible_sass sm_80"},
      {"sm_86", "8.0", "none"},
      {"sm_80", "9.0", "none"},
      {"sm_75", "8.0", "none"},
      {"sm_80;sm_86", "8.9", "compatible_sass sm_86"},
      // Tegra parts are outside the same-major rule, both ways
      {"sm_80", "8.7", "none"},
      {"sm_87", "8.9", "none"},
      {"sm_70", "7.2", "none"},
      {"sm_87", "8.7", "native sm_87"},
      {"8.0+PTX", "8.7", "ptx_jit compute_80"},
      // PTX JITs forward across majors
      {"compute_86", "8.6", "ptx_jit compute_86"},
      {"compute_86", "9.0", "ptx_jit compute_86"},
      {"compute_86", "12.1", "ptx_jit compute_86"},
      {"compute_86", "8.0", "none"},
      {"8.0;8.6+PTX", "9.0", "ptx_jit compute_86"},
      {"8.0;8.6+PTX", "8.6", "native sm_86"},
      {"7.5;8.0+PTX", "8.6", "compatible_sass sm_80"},
      // arch-specific: exact CC only, PTX included
      {"sm_90a", "9.0", "native sm_90a"},
      {"sm_90a", "10.0", "none"},
      {"90a", "10.0", "none"},
      {"90a", "9.0", "native sm_90a"},
      {"compute_90a", "9.0", "ptx_jit compute_90a"},
      {"sm_100a", "10.3", "none"},
      // family: same major at or above
      {"sm_100f", "10.0", "native sm_100f"},
      {"sm_100f", "10.3", "compatible_sass sm_100f"},
      {"sm_103f", "10.0", "none"},
      {"sm_100f", "12.0", "none"},
      {"sm_120f", "12.1", "compatible_sass sm_120f"},
      {"compute_100f", "10.3", "ptx_jit compute_100f"},
      {"compute_100f", "12.0", "none"},
      // official cu130 x86_64 wheel
      {"7.5;8.0;8.6;9.0;10.0;12.0+PTX", "7.0", "none"},
      {"7.5;8.0;8.6;9.0;10.0;12.0+PTX", "8.9", "compatible_sass sm_86"},
      {"7.5;8.0;8.6;9.0;10.0;12.0+PTX", "10.3", "compatible_sass sm_100"},
      {"7.5;8.0;8.6;9.0;10.0;12.0+PTX", "12.1", "compatible_sass sm_120"},
      {"7.5;8.0;8.6;9.0;10.0;12.0+PTX", "11.0", "none"},
      {"7.5;8.0;8.6;9.0;10.0;12.0+PTX", "8.7", "none"},
      // official cu130 aarch64 wheel on a T4G
      {"8.0;9.0;10.0;11.0;12.0+PTX", "7.5", "none"},
      {"8.0;9.0;10.0;11.0;12.0+PTX", "11.0", "native sm_110"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(how(c.spec, c.device), c.expected) << c.spec << " on " << c.device;
}

TEST(Compatibility, Labels) {
  EXPECT_EQ(run_mode_label(RunMode::native), "native SASS");
  EXPECT_EQ(run_mode_label(RunMode::compatible_sass), "compatible SASS");
  EXPECT_EQ(run_mode_label(RunMode::ptx_jit), "PTX JIT");
  EXPECT_EQ(run_mode_key(RunMode::none), "none");
}
