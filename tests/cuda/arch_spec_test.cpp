#include "cuda/arch_spec.h"

#include <gtest/gtest.h>

#include "util/strings.h"

using namespace tailor::cuda;

namespace {
std::string names_of(std::string_view spec, const ArchSpecContext& ctx = {}) {
  auto set = parse_arch_spec(spec, ctx);
  if (!set) return "error: " + set.error().message;
  return tailor::join(set->names(), " ");
}
}  // namespace

TEST(ArchSpec, EverySpelling) {
  struct Case {
    const char* spec;
    const char* names;
  };
  const Case cases[] = {
      // TORCH_CUDA_ARCH_LIST
      {"8.0;8.6+PTX", "sm_80 sm_86 compute_86"},
      {"8.0 8.6+PTX", "sm_80 sm_86 compute_86"},
      {"7.5", "sm_75"},
      {"9.0a", "sm_90a"},
      {"9.0a+PTX", "sm_90a compute_90a"},
      {"12.0f", "sm_120f"},
      {"8.6+ptx", "sm_86 compute_86"},
      {"Hopper", "sm_90 compute_90"},
      {"hopper", "sm_90 compute_90"},
      {"Ampere", "sm_80 sm_86 compute_86"},
      {"Ampere+Tegra", "sm_87"},
      {"Blackwell", "sm_100 sm_103 sm_120 sm_121 compute_121"},
      {"Blackwell+Tegra", "sm_110"},
      {"Kepler+Tesla;Maxwell", "sm_37 sm_50 sm_52 compute_52"},
      // CMake
      {"75", "sm_75 compute_75"},
      {"80-real", "sm_80"},
      {"90-virtual", "compute_90"},
      {"90a", "sm_90a compute_90a"},
      {"90a-real", "sm_90a"},
      {"75;80-real;90-virtual", "sm_75 compute_75 sm_80 compute_90"},
      {"80;90", "sm_80 compute_80 sm_90 compute_90"},
      {"100f-real", "sm_100f"},
      // nvcc
      {"sm_90", "sm_90"},
      {"compute_90", "compute_90"},
      {"-gencode arch=compute_90,code=sm_90", "sm_90"},
      {"-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_86,code=compute_86",
       "sm_80 compute_86"},
      {"-gencode arch=compute_90a,code=[sm_90a,compute_90a]", "sm_90a compute_90a"},
      {"--generate-code=arch=compute_75,code=sm_75", "sm_75"},
      {"arch=compute_80,code=sm_86", "sm_86"},
      {"-arch=sm_90", "sm_90 compute_90"},
      {"-arch sm_86", "sm_86 compute_86"},
      {"-arch=compute_80", "compute_80"},
      {"-arch=compute_80 -code=sm_80,sm_86", "sm_80 sm_86"},
      // bare words
      {"sm75", "sm_75"},
      {"SM_75", "sm_75"},
      {"compute90", "compute_90"},
      {"sm_100f", "sm_100f"},
      // GPUs and instances
      {"T4G", "sm_75"},
      {"t4g", "sm_75"},
      {"g5g.xlarge", "sm_75"},
      {"g5g.2xlarge", "sm_75"},
      {"T4", "sm_75"},
      {"V100", "sm_70"},
      {"A10G", "sm_86"},
      {"A100;H100", "sm_80 sm_90"},
      {"L4 L40S", "sm_89"},
      {"H200", "sm_90"},
      {"GH200", "sm_90"},
      {"B200", "sm_100"},
      {"GB200", "sm_100"},
      {"RTX 3090", "sm_86"},
      {"RTX 4090", "sm_89"},
      {"rtx 5090", "sm_120"},
      {"Jetson Orin", "sm_87"},
      {"Jetson Thor", "sm_110"},
      {"DGX Spark", "sm_121"},
      {"RTX 4090 8.0", "sm_80 sm_89"},
      {"g4dn.xlarge", "sm_75"},
      {"g5", "sm_86"},
      {"g6", "sm_89"},
      {"g6e", "sm_89"},
      {"p3", "sm_70"},
      {"p4d", "sm_80"},
      {"p5", "sm_90"},
      {"p5e", "sm_90"},
      {"p6-b200", "sm_100"},
      {"a3-highgpu-8g", "sm_90"},
      // variables and quotes as people paste them
      {"TORCH_CUDA_ARCH_LIST=\"8.0;8.6+PTX\"", "sm_80 sm_86 compute_86"},
      {"-DCMAKE_CUDA_ARCHITECTURES=80-real", "sm_80"},
      {"7.5,8.0", "sm_75 sm_80"},
      {" 8.0 ; ; 9.0 ", "sm_80 sm_90"},
  };
  for (const auto& c : cases) EXPECT_EQ(names_of(c.spec), c.names) << c.spec;
}

TEST(ArchSpec, UnknownTokenNamesItAndSuggests) {
  auto r = parse_arch_spec("hoper");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "unknown CUDA target 'hoper' (did you mean: Hopper, H100?)");
  // Only what is near: a letter O for a zero is one edit from 9.0, two from 3.5 and 3.7.
  auto typo = parse_arch_spec("9.O");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message, "unknown CUDA target '9.O' (did you mean: 9.0?)");
  // Letters O for zeros in a GPU name: the GPU they pass for.
  auto letters = parse_gpu_spec("H1OO");
  ASSERT_FALSE(letters);
  EXPECT_NE(letters.error().message.find("(did you mean: H100"), std::string::npos)
      << letters.error().message;
  struct Case {
    const char* spec;
    const char* token;
  };
  for (auto c :
       {Case{"8.0;8.9a", "8.9a"}, Case{"sm_89a", "sm_89a"}, Case{"7.9", "7.9"},
        Case{"sm_99", "sm_99"}, Case{"8.0,foo", "foo"}, Case{"H1000", "H1000"},
        Case{"-foo", "-foo"}, Case{"8.0+PTXX", "8.0+PTXX"}, Case{"90-reel", "90-reel"},
        Case{"8.", "8."}, Case{"arch=compute_90,code=sm_9x", "arch=compute_90,code=sm_9x"}}) {
    auto e = parse_arch_spec(c.spec);
    ASSERT_FALSE(e) << c.spec;
    EXPECT_NE(e.error().message.find("'" + std::string(c.token) + "'"), std::string::npos)
        << e.error().message;
  }
  EXPECT_FALSE(parse_arch_spec(""));
  EXPECT_FALSE(parse_arch_spec(" ; "));
  EXPECT_FALSE(parse_arch_spec("-gencode"));
}

TEST(ArchSpec, KeywordsNeedContext) {
  EXPECT_NE(names_of("all").find("--nvcc"), std::string::npos);
  EXPECT_NE(names_of("native").find("name the GPU"), std::string::npos);
  ArchSpecContext ctx;
  ctx.native_devices = {{8, 9}, {7, 5}};
  EXPECT_EQ(names_of("native", ctx), "sm_75 sm_89");
  ctx.nvcc = *nvcc_capabilities_from_table("13.0");
  // What nvcc 13.0.88 -arch=all / all-major embed (nvcc --dryrun).
  EXPECT_EQ(
      names_of("all", ctx),
      "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_103 sm_110 sm_120 compute_120 sm_121");
  EXPECT_EQ(names_of("all-major", ctx), "sm_75 sm_80 sm_90 sm_100 sm_110 sm_120 compute_120");
  EXPECT_EQ(names_of("-arch=all-major", ctx), names_of("all-major", ctx));
  ctx.nvcc = *nvcc_capabilities_from_table("11.8");
  EXPECT_EQ(names_of("all-major", ctx), "sm_35 sm_50 sm_60 sm_70 sm_80 sm_90 compute_90");
}

TEST(ArchSpec, SeveralArgumentsAreAUnion) {
  auto s = parse_arch_specs({"8.0", "sm_90a", "T4G"});
  ASSERT_TRUE(s);
  EXPECT_EQ(tailor::join(s->names(), " "), "sm_75 sm_80 sm_90a");
  EXPECT_FALSE(parse_arch_specs({}));
  EXPECT_FALSE(parse_arch_specs({"8.0", "nope"}));
}

TEST(GpuSpec, DeviceCapabilities) {
  struct Case {
    const char* spec;
    const char* ccs;
  };
  for (auto c :
       {Case{"T4G", "7.5"}, Case{"9.0", "9.0"}, Case{"sm_90a", "9.0"}, Case{"g5g.xlarge", "7.5"},
        Case{"A100;H100", "8.0 9.0"}, Case{"NVIDIA H100 80GB HBM3", "9.0"},
        Case{"Ampere", "8.0 8.6"}, Case{"compute_86", "8.6"}, Case{"H100 A100", "8.0 9.0"}}) {
    auto r = parse_gpu_spec(c.spec);
    ASSERT_TRUE(r) << c.spec << ": " << r.error().message;
    std::vector<std::string> s;
    for (auto cc : *r) s.push_back(cc.str());
    EXPECT_EQ(tailor::join(s, " "), c.ccs) << c.spec;
  }
  EXPECT_FALSE(parse_gpu_spec("hoper"));
}

// Found by fuzz/arch_spec_fuzz: separators alone parsed to an empty set (exit 0, no targets).
TEST(ArchSpecFuzzFindings, SeparatorsAloneAreNotATargetList) {
  for (const char* spec : {"',", ";;", " ", ",", "'"}) {
    auto set = tailor::cuda::parse_arch_spec(spec);
    ASSERT_FALSE(set) << "'" << spec << "' parsed to " << set->names().size() << " targets";
    EXPECT_NE(set.error().message.find("CUDA target"), std::string::npos) << set.error().message;
  }
  EXPECT_FALSE(tailor::cuda::parse_arch_specs({";", ","}));
  EXPECT_TRUE(tailor::cuda::parse_arch_spec("8.0;"));
}

// `tailor arch` says why a spelling gave what it did (issue 27): a named family list embeds
// PTX, a GPU name gives SASS only, and Blackwell leaves Jetson Thor (sm_110) to Blackwell+Tegra.
TEST(ArchSpecNotes, NamedListsGpuNamesAndTegraSiblings) {
  auto joined = [](const std::vector<std::string>& specs) {
    return tailor::join(arch_spec_notes(specs), "\n");
  };
  const std::string blackwell = joined({"Blackwell"});
  EXPECT_NE(blackwell.find("leaves out 11.0 (Jetson Thor, a Tegra part; CUDA 13.0 or newer)"),
            std::string::npos)
      << blackwell;
  EXPECT_NE(blackwell.find("`tailor arch Blackwell Blackwell+Tegra` gives both"), std::string::npos)
      << blackwell;
  EXPECT_EQ(names_of("Blackwell Blackwell+Tegra"),
            "sm_100 sm_103 sm_110 sm_120 sm_121 compute_121");
  EXPECT_EQ(joined({"Blackwell", "Blackwell+Tegra"}).find("leaves out"), std::string::npos);

  const std::string turing = joined({"Turing"});
  EXPECT_NE(turing.find("Turing is torch's named list 7.5+PTX"), std::string::npos) << turing;
  EXPECT_NE(turing.find("embeds PTX of its newest CC (compute_75)"), std::string::npos) << turing;
  const std::string t4g = joined({"T4G"});
  EXPECT_NE(t4g.find("T4G names one GPU: only its SASS (sm_75), no PTX, so the build runs on CC "
                     "7.5 only; add 7.5+PTX "
                     "(or name the family, Turing)"),
            std::string::npos)
      << t4g;
  EXPECT_NE(joined({"A100"}).find("runs on CC 8.0, 8.6, 8.8, 8.9 only"), std::string::npos)
      << joined({"A100"});
  EXPECT_TRUE(arch_spec_notes({"T4G", "7.5+PTX"}).empty());  // the PTX is there: nothing to explain
  EXPECT_TRUE(arch_spec_notes({"8.6"}).empty());
  EXPECT_TRUE(arch_spec_notes({"nonsense"}).empty());
}

TEST(GpuSpec, NamesPerCapability) {
  auto names = gpu_names_in_spec("H100;8.6;g5g.xlarge;A10G");
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[*parse_compute_capability("9.0")], (std::vector<std::string>{"H100"}));
  EXPECT_EQ(names[*parse_compute_capability("8.6")], (std::vector<std::string>{"A10G"}));
  EXPECT_EQ(names[*parse_compute_capability("7.5")], (std::vector<std::string>{"g5g.xlarge"}));
  EXPECT_TRUE(gpu_names_in_spec("8.6").empty());
}
