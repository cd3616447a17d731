// The recipe files load, name what they were checked against, and the gencode patch does
// what causal-conv1d and mamba-ssm need on text shaped like their setup.py.
#include "plan/extension_recipe.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "plan/extension_plan.h"

namespace tailor::plan {
namespace {

TEST(ExtensionRecipe, EveryPackageOfTheBriefHasARecipe) {
  for (const char* name :
       {"generic", "torchvision", "torchaudio", "flash-attn", "xformers", "causal-conv1d",
        "mamba-ssm", "bitsandbytes", "deepspeed", "apex", "torch-scatter", "torch-sparse",
        "torch-cluster", "torch-spline-conv", "vllm"}) {
    EXPECT_EQ(recipe_for(name).name, name);
    EXPECT_FALSE(recipe_for(name).checked.empty()) << name;
  }
  std::set<std::string> names;
  for (const auto& r : all_recipes()) EXPECT_TRUE(names.insert(r.name).second) << r.name;
}

TEST(ExtensionRecipe, LookupNormalisesDistNamesAndFallsBackToGeneric) {
  EXPECT_EQ(normalise_dist_name("Flash_Attn"), "flash-attn");
  EXPECT_EQ(normalise_dist_name("torch.scatter"), "torch-scatter");
  EXPECT_EQ(normalise_dist_name("a__b--c"), "a-b-c");
  EXPECT_EQ(recipe_for("FLASH_ATTN").name, "flash-attn");
  EXPECT_EQ(recipe_for("flash-attention").name, "flash-attn");  // alias
  EXPECT_EQ(recipe_for("my-own-kernels").name, "generic");
}

TEST(ExtensionRecipe, ParserNamesTheFileAndField) {
  auto r = parse_recipe("name = \"x\"\nchecked = \"v1\"\n[arch]\nvia = \"env\"\n",
                        "data/recipes/x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("data/recipes/x.toml: 'arch.variable'"), std::string::npos)
      << r.error().message;

  r = parse_recipe(
      "name = \"x\"\nchecked = \"v1\"\n[arch]\nvariable = \"V\"\nspelling = \"klingon\"\n",
      "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("x.toml: arch.spelling: must be one of"), std::string::npos)
      << r.error().message;

  r = parse_recipe("name = \"X_Y\"\nchecked = \"v\"\n[arch]\nvariable = \"V\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("normalised"), std::string::npos);

  r = parse_recipe("name = \"x\"\nchecked = \"v\"\n[arch]\nvia = \"patch\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("[[patch]]"), std::string::npos);
}

TEST(ExtensionRecipe, UndeclaredRequiresAreModuleNames) {
  EXPECT_EQ(recipe_for("torch-sparse").undeclared_requires,
            std::vector<std::string>{"torch_scatter"});
  EXPECT_TRUE(recipe_for("torch-scatter").undeclared_requires.empty());
  const std::string head = "name = \"x\"\nchecked = \"v\"\n[arch]\nvariable = \"V\"\n";
  auto r = parse_recipe("undeclared_requires = [\"torch_scatter\", \"a.b\"]\n" + head, "x.toml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->undeclared_requires.size(), 2u);
  r = parse_recipe("undeclared_requires = [\"rm -rf /\"]\n" + head, "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a Python module name"), std::string::npos)
      << r.error().message;
}

TEST(ExtensionRecipe, VerifyParallelAndProfileSectionsAreChecked) {
  const std::string head = "name = \"x\"\nchecked = \"v1\"\n[arch]\nvariable = \"V\"\n";
  auto r =
      parse_recipe(head + "[verify]\nadds = \"ptx-of-highest\"\nwhy = \"its CMake\"\n", "x.toml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->verify.ptx_of_highest);
  EXPECT_FALSE(r->verify.ptx_of_each);

  r = parse_recipe(
      head + "[verify]\nadds = [\"ptx_of_each\"]\nextra_targets = [\"sm_80\"]\nwhy = \"w\"\n",
      "x.toml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->verify.ptx_of_each);
  EXPECT_EQ(r->verify.extra_targets, std::vector<std::string>{"sm_80"});

  r = parse_recipe(head + "[verify]\nadds = \"sass_of_everything\"\nwhy = \"w\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("x.toml: verify.adds: holds 'sass_of_everything'"),
            std::string::npos)
      << r.error().message;
  r = parse_recipe(head + "[verify]\nextra_targets = [\"sm_9x\"]\nwhy = \"w\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("verify.extra_targets: holds 'sm_9x'"), std::string::npos)
      << r.error().message;
  r = parse_recipe(head + "[verify]\nadds = \"ptx_of_highest\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("'verify.why'"), std::string::npos);

  // [parallel] only for serial packages, and with a patch.
  r = parse_recipe(head + "[parallel]\nsummary = \"s\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("only for packages with jobs.serial = true"), std::string::npos);
  r = parse_recipe(head + "[jobs]\nserial = true\n[parallel]\nsummary = \"s\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("[[parallel.patch]]"), std::string::npos);
  r = parse_recipe(head +
                       "[jobs]\nserial = true\n[parallel]\nsummary = "
                       "\"s\"\n[[parallel.patch]]\nfile = \"setup.py\"\n"
                       "start = \"(\"\nend = \"x\"\nreplace = \"y # m\"\nmarker = \"# m\"\n",
                   "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("x.toml: parallel.patch[0].start: not a valid regex"),
            std::string::npos)
      << r.error().message;

  r = parse_recipe(head + "[profile.small]\ndescription = \"d\"\n", "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("profile.small.env: missing"), std::string::npos)
      << r.error().message;
  r = parse_recipe(head + "[profile.small]\ndescription = \"d\"\n[profile.small.env]\nA = 1\n",
                   "x.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("profile.small.env.A: expected a string"), std::string::npos)
      << r.error().message;
}

TEST(ExtensionRecipe, BuiltInRecipesDeclareWhatTheirPackagesAdd) {
  EXPECT_TRUE(recipe_for("bitsandbytes").verify.ptx_of_highest);
  EXPECT_TRUE(recipe_for("flash-attn").verify.ptx_of_highest);
  EXPECT_FALSE(recipe_for("xformers").verify.any());
  EXPECT_TRUE(recipe_for("torch-scatter").parallel_fix.has_value());
  EXPECT_FALSE(recipe_for("torch-sparse").serial);  // ninja on since 2023
  // Every `checked` names a commit or a version, not a secondary table.
  for (const auto& r : all_recipes())
    EXPECT_EQ(r.checked.find("extension-recipes.md"), std::string::npos) << r.name;
}

// The shape of causal-conv1d's setup.py (typed for the test, not copied): the list sits
// in an else branch, grows under CUDA version checks, and has a comment block inside.
const char* k_setup_excerpt = R"(    else:
        check_if_cuda_home_none(PACKAGE_NAME)
        cc_flag.append("-gencode")
        cc_flag.append("arch=compute_75,code=sm_75")
        cc_flag.append("-gencode")
        cc_flag.append("arch=compute_80,code=sm_80")
        if bare_metal_version >= Version("11.8"):
            cc_flag.append("-gencode")
            cc_flag.append("arch=compute_90,code=sm_90")
        if bare_metal_version >= Version("13.0"):
            # a comment about a broken arch
            cc_flag.append("-gencode")
            cc_flag.append("arch=compute_110,code=sm_110")

    if FORCE_CXX11_ABI:
        torch._C._GLIBCXX_USE_CXX11_ABI = True
)";

SourcePatch causal_conv1d_patch(std::initializer_list<int> ccs) {
  cuda::TargetSet set;
  for (int cc : ccs) set.add(cuda::sass(cuda::ComputeCapability{cc / 10, cc % 10}));
  ExtensionBuildRequest r;
  r.package_name = "causal-conv1d";
  r.targets = set;
  auto plan = resolve_extension_build(r, probe::HostReport{});
  EXPECT_TRUE(plan);
  EXPECT_EQ(plan->patches.size(), 1u);
  return plan->patches.at(0);
}

TEST(GencodePatch, ReplacesTheWholeHardCodedList) {
  auto patch = causal_conv1d_patch({80, 90});
  auto out = apply_patch_to_text(patch, k_setup_excerpt);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out,
            "    else:\n"
            "        check_if_cuda_home_none(PACKAGE_NAME)\n"
            "        cc_flag += ['-gencode=arch=compute_80,code=sm_80', "
            "'-gencode=arch=compute_90,code=sm_90']  # tailor: gencode for sm_80 sm_90\n"
            "\n"
            "    if FORCE_CXX11_ABI:\n"
            "        torch._C._GLIBCXX_USE_CXX11_ABI = True\n");
}

TEST(GencodePatch, IsIdempotentAndRetargetable) {
  auto patch = causal_conv1d_patch({80, 90});
  auto once = apply_patch_to_text(patch, k_setup_excerpt);
  ASSERT_TRUE(once);
  auto twice = apply_patch_to_text(patch, *once);
  ASSERT_TRUE(twice);
  EXPECT_EQ(*twice, *once);

  auto other = apply_patch_to_text(causal_conv1d_patch({75}), *once);
  ASSERT_TRUE(other);
  EXPECT_NE(
      other->find(
          "cc_flag += ['-gencode=arch=compute_75,code=sm_75']  # tailor: gencode for sm_75\n"),
      std::string::npos)
      << *other;
  EXPECT_EQ(other->find("compute_80"), std::string::npos);
}

TEST(GencodePatch, MissingPatternIsAnErrorNamingTheFile) {
  auto out = apply_patch_to_text(causal_conv1d_patch({80}), "print('no list here')\n");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message.rfind("setup.py: patch", 0), 0u) << out.error().message;
}

TEST(GencodePatch, AppliesToAFileOnDiskAndReportsAMissingFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TAILOR_BINARY_DIR) / "tests" / "extension_patch_tmp";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ExtensionBuildPlan plan;
  plan.patches.push_back(causal_conv1d_patch({87}));

  auto missing = apply_patches(plan, dir.string());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("setup.py"), std::string::npos);

  { std::ofstream(dir / "setup.py") << k_setup_excerpt; }
  ASSERT_TRUE(apply_patches(plan, dir.string()));
  ASSERT_TRUE(apply_patches(plan, dir.string()));  // idempotent on disk too
  std::stringstream text;
  text << std::ifstream(dir / "setup.py").rdbuf();
  EXPECT_NE(text.str().find("'-gencode=arch=compute_87,code=sm_87'"), std::string::npos)
      << text.str();
  EXPECT_EQ(text.str().find("compute_75"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "setup.py.tailor-tmp"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tailor::plan
