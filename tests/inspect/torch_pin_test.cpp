#include "inspect/torch_pin.h"

#include <gtest/gtest.h>

namespace tailor::inspect {

TEST(TorchPin, ReadsTheBuildsToolchainText) {
  auto t = parse_torch_build("2.11.0+cu130 (CUDA 13.0)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->version, "2.11.0+cu130");
  EXPECT_EQ(t->cuda, "13.0");
  EXPECT_EQ(torch_local_label(*t), "cu130torch2.11");
  EXPECT_EQ(torch_requirement(*t), "torch==2.11.0");
  auto cpu = parse_torch_build("2.9.1+cpu");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->cuda, "");
  EXPECT_EQ(torch_local_label(*cpu), "cputorch2.9");
  EXPECT_FALSE(parse_torch_build(""));
  EXPECT_FALSE(parse_torch_build("none"));
}

TEST(TorchPin, LabelsTheVersion) {
  EXPECT_EQ(version_with_label("1.2.3", "cu130torch2.11"), "1.2.3+cu130torch2.11");
  EXPECT_EQ(version_with_label("1.2.3+g1a2b", "cu130torch2.11"), "1.2.3+g1a2b.cu130torch2.11");
  EXPECT_EQ(version_with_label("1.2.3+cu130torch2.11", "cu130torch2.11"), "1.2.3+cu130torch2.11");
  // autoawq-kernels tags itself "+cu130": the label takes that segment's place.
  EXPECT_EQ(version_with_label("0.0.9+cu130", "cu130torch2.11"), "0.0.9+cu130torch2.11");
  EXPECT_EQ(version_with_label("0.0.9+g1a2b.cu130", "cu130torch2.11"),
            "0.0.9+g1a2b.cu130torch2.11");
  EXPECT_EQ(version_with_label("0.0.9+cu128", "cu130torch2.11"), "0.0.9+cu128.cu130torch2.11");
  EXPECT_EQ(version_with_label("0.0.9+cpu",
                               "cpu"
                               "torch2.11"),
            "0.0.9+cputorch2.11");
}

TEST(TorchPin, FindsThePin) {
  EXPECT_EQ(requirement_name("Torch (>=2.0) ; python_version>'3'"), "torch");
  EXPECT_EQ(requirement_name("torch_scatter>=2"), "torch-scatter");
  EXPECT_EQ(pinned_torch({"numpy", "torch==2.11.0"}), "2.11.0");
  EXPECT_EQ(pinned_torch({"torch (==2.11.*)"}), "2.11.*");
  EXPECT_EQ(pinned_torch({"torch===2.11.0+cu130"}), "2.11.0+cu130");
  EXPECT_EQ(pinned_torch({"torch>=2.0.0"}), std::nullopt);
  EXPECT_EQ(pinned_torch({"torch"}), std::nullopt);
  EXPECT_EQ(pinned_torch({"torch==2.11.0,>=2"}), std::nullopt);
  EXPECT_EQ(pinned_torch({"torchvision==0.26.0"}), std::nullopt);
}

TEST(TorchPin, MatchesATorchAgainstThePin) {
  EXPECT_TRUE(torch_matches_pin("2.11.0+cu130", "2.11.0"));
  EXPECT_TRUE(torch_matches_pin("2.11.0", "2.11.0"));
  EXPECT_FALSE(torch_matches_pin("2.15.0", "2.11.0"));
  EXPECT_FALSE(torch_matches_pin("2.11.1+cu130", "2.11.0"));
  EXPECT_TRUE(torch_matches_pin("2.11.1+cu130", "2.11.*"));
  EXPECT_FALSE(torch_matches_pin("2.12.0", "2.11.*"));
  EXPECT_TRUE(torch_matches_pin("2.11.0+cu130", "2.11.0+cu130"));
  EXPECT_FALSE(torch_matches_pin("2.11.0+cu128", "2.11.0+cu130"));
}

TEST(TorchPin, RewritesMetadata) {
  const std::string in =
      "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy\n"
      "Requires-Dist: torch>=2.0.0\nRequires-Dist: torch<3; extra == \"cuda\"\n"
      "Provides-Extra: cuda\n\nA description.\nVersion: not a header\n";
  EXPECT_EQ(pin_torch_in_metadata(in, "1.0+cu130torch2.11", "torch==2.11.0"),
            "Metadata-Version: 2.1\nName: demo\nVersion: 1.0+cu130torch2.11\nRequires-Dist: "
            "numpy\nRequires-Dist: torch==2.11.0\nProvides-Extra: cuda\n\nA description.\n"
            "Version: not a header\n");
  // No torch requirement: the pin goes after the last requirement, or at the headers' end.
  EXPECT_EQ(pin_torch_in_metadata("Name: a\nVersion: 1\nRequires-Dist: x\nSummary: s\n", "1+l",
                                  "torch==2.11.0"),
            "Name: a\nVersion: 1+l\nRequires-Dist: x\nRequires-Dist: torch==2.11.0\nSummary: s\n");
  EXPECT_EQ(pin_torch_in_metadata("Name: a\nVersion: 1\n", "1+l", "torch==2.11.0"),
            "Name: a\nVersion: 1+l\nRequires-Dist: torch==2.11.0\n");
}

}  // namespace tailor::inspect
