#include "cuda/gpu_catalog.h"

#include <gtest/gtest.h>

#include "cuda/compatibility.h"
#include "cuda/named_arches.h"
#include "cuda/torch_wheels.h"

using namespace tailor::cuda;

TEST(GpuCatalog, LoadsEveryGpuWithAKnownCapability) {
  ASSERT_GT(gpu_catalog().size(), 35u);
  for (const auto& g : gpu_catalog()) {
    EXPECT_TRUE(find_capability(g.cc)) << g.name;
    EXPECT_FALSE(g.family.empty()) << g.name;
  }
  EXPECT_EQ(known_capabilities().front().cc.str(), "3.5");
  EXPECT_EQ(known_capabilities().back().cc.str(), "12.1");
}

TEST(GpuCatalog, FindsDetectedAndTypedNames) {
  struct Case {
    const char* text;
    const char* name;
    const char* cc;
  };
  for (auto c : {Case{"NVIDIA H100 80GB HBM3", "H100", "9.0"},
                 Case{"Tesla T4", "T4", "7.5"},
                 Case{"t4g", "T4G", "7.5"},
                 Case{"NVIDIA A10G", "A10G", "8.6"},
                 Case{"NVIDIA A10", "A10", "8.6"},
                 Case{"NVIDIA A100-SXM4-80GB", "A100", "8.0"},
                 Case{"NVIDIA GH200 480GB", "GH200", "9.0"},
                 Case{"NVIDIA H200", "H200", "9.0"},
                 Case{"NVIDIA L40S", "L40S", "8.9"},
                 Case{"NVIDIA L40", "L40", "8.9"},
                 Case{"NVIDIA GeForce RTX 4090", "RTX 4090", "8.9"},
                 Case{"rtx4090", "RTX 4090", "8.9"},
                 Case{"NVIDIA GeForce RTX 5090", "RTX 5090", "12.0"},
                 Case{"Quadro RTX 6000", "RTX 2080 Ti", "7.5"},
                 Case{"NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "8.9"},
                 Case{"B200", "B200", "10.0"},
                 Case{"NVIDIA GB200", "GB200", "10.0"},
                 Case{"jetson orin", "Jetson Orin", "8.7"},
                 Case{"Jetson Thor", "Jetson Thor", "11.0"},
                 Case{"DGX Spark", "DGX Spark", "12.1"},
                 Case{"NVIDIA GB10", "DGX Spark", "12.1"},
                 Case{"Tesla V100-SXM2-16GB", "V100", "7.0"}}) {
    auto g = find_gpu(c.text);
    ASSERT_TRUE(g) << c.text;
    EXPECT_EQ(g->name, c.name) << c.text;
    EXPECT_EQ(g->cc.str(), c.cc) << c.text;
  }
  for (const char* bad : {"", "NVIDIA", "H1000", "Radeon RX 7900", "RTX"})
    EXPECT_FALSE(find_gpu(bad)) << bad;
}

TEST(GpuCatalog, HostArchitecture) {
  EXPECT_EQ(find_gpu("T4G")->host_arch, "aarch64");
  EXPECT_EQ(find_gpu("GH200")->host_arch, "aarch64");
  EXPECT_EQ(find_gpu("T4")->host_arch, "any");
  EXPECT_TRUE(find_gpu("Jetson Orin")->tegra);
  EXPECT_FALSE(find_gpu("A100")->tegra);
}

TEST(GpuCatalog, CloudInstances) {
  struct Case {
    const char* type;
    const char* gpu;
  };
  for (auto c :
       {Case{"g5g.xlarge", "T4G"}, Case{"g5g.2xlarge", "T4G"}, Case{"g4dn.xlarge", "T4"},
        Case{"g5", "A10G"}, Case{"g5.48xlarge", "A10G"}, Case{"g6", "L4"},
        Case{"g6e.xlarge", "L40S"}, Case{"p3.2xlarge", "V100"}, Case{"p4d.24xlarge", "A100"},
        Case{"p5.48xlarge", "H100"}, Case{"p5e", "H200"}, Case{"P5EN.48XLARGE", "H200"},
        Case{"p6-b200.48xlarge", "B200"}, Case{"a2-highgpu-1g", "A100"},
        Case{"a3-highgpu-8g", "H100"}, Case{"a3-ultragpu-8g", "H200"}, Case{"g2-standard-4", "L4"},
        Case{"a4-highgpu-8g", "B200"}}) {
    auto i = find_instance(c.type);
    ASSERT_TRUE(i) << c.type;
    EXPECT_EQ(i->gpu, c.gpu) << c.type;
  }
  for (const char* bad : {"g5gx", "m5.xlarge", "c7g.large", "p", ""})
    EXPECT_FALSE(find_instance(bad)) << bad;
}

TEST(GpuCatalog, BareFamilyThatIsAGpuNameIsTheGpu) {
  // "A2" is NVIDIA's A2 (CC 8.6), not GCP's a2 machine family (A100s); with a size it is the
  // instance.
  EXPECT_FALSE(find_instance("A2"));
  EXPECT_FALSE(find_instance("a2"));
  ASSERT_TRUE(find_instance("a2-highgpu-1g"));
  EXPECT_EQ(find_instance("a2-highgpu-1g")->gpu, "A100");
  ASSERT_TRUE(find_gpu("A2"));
  EXPECT_EQ(find_gpu("A2")->cc.str(), "8.6");
}

TEST(GpuCatalog, TegraCapabilities) {
  for (const char* cc : {"5.3", "6.2", "7.2", "8.7", "11.0"})
    EXPECT_TRUE(is_tegra(*parse_compute_capability(cc))) << cc;
  for (const char* cc :
       {"5.2", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0", "12.1"})
    EXPECT_FALSE(is_tegra(*parse_compute_capability(cc))) << cc;
}

TEST(NamedArches, TorchMeanings) {
  EXPECT_EQ(named_arches().size(), 14u);
  EXPECT_EQ(find_named_arch("hopper")->arch_list, "9.0+PTX");
  EXPECT_EQ(find_named_arch("AMPERE+TEGRA")->arch_list, "8.7");
  EXPECT_EQ(find_named_arch("Blackwell")->arch_list, "10.0;10.3;12.0;12.1+PTX");
  EXPECT_FALSE(find_named_arch("Hoper"));
}

TEST(TorchWheels, OfficialListsLoad) {
  ASSERT_EQ(official_torch_arch_lists().size(), 10u);
  bool saw = false;
  for (const auto& w : official_torch_arch_lists())
    if (w.cuda == CudaVersion{13, 0} && w.platform == "x86_64") {
      saw = true;
      EXPECT_EQ(w.torch_cuda_arch_list, "7.5;8.0;8.6;9.0;10.0;12.0+PTX");
    }
  EXPECT_TRUE(saw);
}
