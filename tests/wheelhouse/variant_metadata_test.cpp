// The PEP 825 (draft) variant files beside a target set's index: the NVIDIA provider's
// properties from a wheel's targets and CUDA, one file per project version, nothing for what
// the provider cannot spell.
#include "wheelhouse/variant_metadata.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tailor::wheelhouse {
namespace {

WheelEntry wheel(const std::string& file, std::vector<std::string> targets, const char* torch) {
  WheelEntry e;
  e.file = file;
  e.project = "fused-ops";
  e.targets = std::move(targets);
  e.target_set = *target_set_name(e.targets);
  e.provenance = {{"package", "fused_ops"}, {"toolchain", {{"torch", torch}, {"nvcc", "13.0.88"}}}};
  return e;
}

TEST(VariantMetadata, TargetsAndCudaAsTheProvidersProperties) {
  auto v = wheel_variant(wheel("fused_ops-0.1.0-cp312-cp312-linux_x86_64.whl",
                               {"sm_90", "sm_86", "compute_90"}, "2.11.0+cu130 (CUDA 13.0)"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->label, "sm86_compute90_sm90_cu130");  // the target set's order
  const auto& nvidia = v->properties.at("nvidia");
  EXPECT_EQ(nvidia.at("sm_arch"), (std::vector<std::string>{"86_real", "90_real", "90_virtual"}));
  EXPECT_EQ(nvidia.at("cuda_version_lower_bound"), (std::vector<std::string>{"13.0"}));
  EXPECT_EQ(nvidia.at("cuda_version_upper_bound"), (std::vector<std::string>{"14"}));
  // torch's label when the provenance names no CUDA in words; nvcc's last.
  auto label = wheel_variant(wheel("a-1-py3-none-any.whl", {"sm_120"}, "2.9.1+cu128"));
  ASSERT_TRUE(label);
  EXPECT_EQ(label->label, "sm120_cu128");
  auto nvcc = wheel_variant(wheel("a-1-py3-none-any.whl", {"sm_75"}, "2.9.1"));
  ASSERT_TRUE(nvcc);
  EXPECT_EQ(nvcc->label, "sm75_cu130");
}

TEST(VariantMetadata, NothingForWhatTheProviderCannotSpell) {
  EXPECT_FALSE(wheel_variant(wheel("a-1-py3-none-any.whl", {"sm_90a"}, "2.11.0+cu130")));
  auto cpu = wheel("a-1-py3-none-any.whl", {}, "2.11.0+cu130");
  EXPECT_FALSE(wheel_variant(cpu));
  auto foreign = wheel("a-1-py3-none-any.whl", {"sm_90"}, "2.11.0+cu130");
  foreign.foreign = true;
  EXPECT_FALSE(wheel_variant(foreign));
}

TEST(VariantMetadata, OneFilePerProjectVersionWithEveryLabel) {
  std::vector<WheelEntry> wheels = {
      wheel("fused_ops-0.1.0-cp312-cp312-linux_x86_64.whl", {"sm_90"}, "2.11.0+cu130 (CUDA 13.0)"),
      wheel("fused_ops-0.1.0-cp311-cp311-linux_x86_64.whl", {"sm_90"}, "2.9.1+cu128 (CUDA 12.8)"),
      wheel("fused_ops-0.2.0-cp312-cp312-linux_x86_64.whl", {"sm_90"}, "2.11.0+cu130 (CUDA 13.0)"),
      wheel("fused_ops-0.2.0-cp312-cp312-linux_x86_64.whl", {"sm_80"}, "2.11.0+cu130 (CUDA 13.0)")};
  auto files = render_variant_files("sm90", wheels);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "sm90/simple/fused-ops/fused_ops-0.1.0-variants.json");
  auto j = nlohmann::json::parse(files[0].text);
  EXPECT_EQ(j["$schema"], "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json");
  EXPECT_EQ(j["default-priorities"]["namespace"], nlohmann::json::array({"nvidia"}));
  EXPECT_EQ(j["variants"].size(), 2u);
  EXPECT_TRUE(j["variants"].contains("sm90_cu128"));
  EXPECT_TRUE(j["variants"].contains("sm90_cu130"));
  EXPECT_EQ(files[1].path, "sm90/simple/fused-ops/fused_ops-0.2.0-variants.json");
  EXPECT_EQ(nlohmann::json::parse(files[1].text)["variants"].size(), 1u);  // sm80's is elsewhere
}

}  // namespace
}  // namespace tailor::wheelhouse
