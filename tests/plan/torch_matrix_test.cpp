// tailor.toml parsing and matrix expansion: seed 004's names from examples/tailor.toml.
#include <gtest/gtest.h>

#include "plan/matrix.h"
#include "plan/torch_plan.h"
#include "torch_test_hosts.h"

namespace tailor::plan {
namespace {

std::vector<std::string> names(const std::vector<TorchVariant>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.name);
  return out;
}

TEST(TorchMatrix, ExampleReproducesSeed004) {
  auto config = load_tailor_config(std::string(TAILOR_SOURCE_DIR) + "/examples/tailor.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  EXPECT_EQ(names(*vs), (std::vector<std::string>{"pytorch-sm90-avx512", "pytorch-sm86-avx2", "pytorch-cpu-avx2"}));
  for (const auto& v : *vs) {
    BuildPlan p = resolve_torch_plan(v, testing::seed004_host());
    EXPECT_FALSE(p.has_errors()) << v.name;
    EXPECT_EQ(p.python_version, "3.13");
  }
  auto cpu = find_config_variant(*config, "pytorch-cpu-avx2");
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(cpu->cpu_only.value_or(false));
  EXPECT_FALSE(find_config_variant(*config, "pytorch-sm75-avx2"));
}

TEST(TorchMatrix, ProductExcludeIncludeAndVaryingAxes) {
  auto config = parse_tailor_config(R"(
[defaults]
torch = "2.9.1"
[matrix]
gpu = ["8.0", "H100"]
cpu = ["avx2"]
cuda = ["12.6", "12.8"]
exclude = [{ gpu = "8.0", cuda = "12.8" }]
include = [{ gpu = "8.0+PTX", cpu = "avx512", cuda = "12.8" }]
)", "t.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  EXPECT_EQ(names(*vs), (std::vector<std::string>{"pytorch-sm80-avx2-cu126", "pytorch-sm90-avx2-cu126",
                                                  "pytorch-sm90-avx2-cu128", "pytorch-sm80ptx-avx512-cu128"}));
  EXPECT_EQ((*vs)[0].torch.value_or(""), "2.9.1");
  EXPECT_EQ((*vs)[3].cuda.value_or(""), "12.8");
}

TEST(TorchMatrix, NamedVariantsAndErrors) {
  auto config = parse_tailor_config(R"(
[variant.t4g]
torch = "2.9.1"
cuda = "cu126"
python = "3.10"
arch = "T4G"
platform = "aarch64"
)", "t.toml");
  ASSERT_TRUE(config);
  auto v = find_config_variant(*config, "t4g");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->cuda.value_or(""), "12.6");
  EXPECT_FALSE(parse_tailor_config("[variant.x]\npython = 3.10\n", "t.toml"));
  auto typo = parse_tailor_config("[variant.x]\ncuda_version = \"12.6\"\n", "t.toml");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("unknown key 'cuda_version'"), std::string::npos);
  EXPECT_FALSE(parse_tailor_config("[matrix]\ngpus = [\"9.0\"]\n", "t.toml"));
  auto bad = parse_tailor_config("[matrix]\ngpu = [\"hoper\"]\n", "t.toml");
  ASSERT_TRUE(bad);
  EXPECT_FALSE(config_variants(*bad));
}

TEST(TorchMatrix, GithubActionsOneJobPerVariant) {
  auto config = load_tailor_config(std::string(TAILOR_SOURCE_DIR) + "/examples/tailor.toml");
  ASSERT_TRUE(config);
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs);
  std::string wf = render_github_actions(*config, *vs);
  for (const auto& n : names(*vs)) {
    EXPECT_NE(wf.find("  " + n + ":\n"), std::string::npos) << n;
    EXPECT_NE(wf.find("--variant " + n + " --out"), std::string::npos) << n;
  }
  EXPECT_NE(wf.find("jobs:"), std::string::npos);
}

}  // namespace
}  // namespace tailor::plan
