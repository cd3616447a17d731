// GPU verdicts name every target that covers the device, with its entries, plain first.
#include "inspect/verdicts.h"

#include <gtest/gtest.h>

#include "inspect/render.h"
#include "target_codes.h"

using namespace tailor::inspect;

namespace {
InspectReport report_with(std::vector<TargetStats> targets) {
  InspectedLibrary lib;
  lib.path = "torch/lib/libtorch_cuda.so";
  lib.machine = "x86_64";
  lib.has_device_code = true;
  lib.targets = with_codes(std::move(targets));
  InspectReport r;
  r.libraries.push_back(std::move(lib));
  return r;
}
Verdicts gpu(const InspectReport& r, const std::string& spec) {
  VerdictSpecs s;
  s.gpu = {spec};
  auto v = evaluate(r, s);
  EXPECT_TRUE(v) << v.error().message;
  return v ? *v : Verdicts{};
}
}  // namespace

TEST(GpuVerdict, NamesEveryCoveringTargetPlainFirst) {
  auto r = report_with({{"sm_80", 500, 1, 1, {"none"}},
                        {"sm_90", 444, 1, 1, {"none"}},
                        {"sm_90a", 4, 1, 1, {"none"}},
                        {"compute_90", 1, 1, 1, {"zstd"}}});
  auto v = gpu(r, "9.0");
  ASSERT_EQ(v.items.size(), 1u);
  EXPECT_EQ(v.items[0].mode, "native");
  EXPECT_EQ(v.items[0].via, "sm_90");
  ASSERT_EQ(v.items[0].covering.size(), 2u);
  EXPECT_EQ(v.items[0].covering[0].target, "sm_90");
  EXPECT_EQ(v.items[0].covering[0].entries, 444u);
  EXPECT_EQ(v.items[0].covering[1].target, "sm_90a");
  auto text = render_text(r, &v);
  EXPECT_NE(text.find("verdict PASS: gpu 9.0: torch/lib/libtorch_cuda.so runs through native SASS "
                      "sm_90 (444 entries) "
                      "and sm_90a (4 entries)\n"),
            std::string::npos)
      << text;
  auto j = to_json(r, &v);
  EXPECT_EQ(j["verdicts"]["items"][0]["covering"][1]["target"], "sm_90a");
  EXPECT_EQ(j["verdicts"]["items"][0]["covering"][0]["entries"], 444);
}

TEST(GpuVerdict, CompatibleSassAndPtxListTheirTargetsToo) {
  auto r = report_with({{"sm_80", 3, 1, 1, {"none"}},
                        {"sm_86", 1, 1, 1, {"none"}},
                        {"compute_80", 1, 1, 1, {"zstd"}}});
  auto ada = gpu(r, "8.9");
  EXPECT_EQ(ada.items[0].mode, "compatible_sass");
  EXPECT_EQ(ada.items[0].via, "sm_86");
  auto text = render_text(r, &ada);
  EXPECT_NE(text.find("runs through compatible SASS sm_86 (1 entry) and sm_80 (3 entries)\n"),
            std::string::npos)
      << text;
  auto hopper = gpu(r, "9.0");
  EXPECT_EQ(hopper.items[0].mode, "ptx_jit");
  EXPECT_NE(render_text(r, &hopper).find("runs through PTX JIT compute_80 (1 entry)\n"),
            std::string::npos);
  auto volta = gpu(r, "7.0");
  EXPECT_FALSE(volta.pass());
  EXPECT_TRUE(volta.items[0].covering.empty());
}

// One platform rule (cuda::platform_mismatch): a GPU that exists only on aarch64 never runs
// an x86_64 library, whatever SASS it carries; the verdict fails and says why.
TEST(GpuVerdict, AGpuOfAnotherPlatformFailsWhateverTheDeviceCode) {
  auto r = report_with({{"sm_75", 2, 1, 1, {"none"}}});  // an x86_64 library
  for (const std::string spec : {"T4G", "g5g.xlarge"}) {
    auto v = gpu(r, spec);
    ASSERT_EQ(v.items.size(), 1u) << spec;
    EXPECT_FALSE(v.pass()) << spec;
    EXPECT_EQ(v.items[0].mode, "native") << spec;  // the device code itself would do
    EXPECT_NE(v.items[0].reason.find("exists only on aarch64; this library is x86_64"),
              std::string::npos)
        << v.items[0].reason;
  }
  auto t4g = gpu(r, "T4G");
  EXPECT_EQ(t4g.items[0].reason, "T4G (g5g) exists only on aarch64; this library is x86_64");
  EXPECT_NE(render_text(r, &t4g).find("verdict FAIL: gpu T4G (7.5): torch/lib/libtorch_cuda.so: "
                                      "T4G (g5g) exists only on aarch64; "
                                      "this library is x86_64\n"),
            std::string::npos)
      << render_text(r, &t4g);
  EXPECT_EQ(to_json(r, &t4g)["verdicts"]["items"][0]["reason"],
            "T4G (g5g) exists only on aarch64; this library is x86_64");
  // The same GPU model without a platform of its own passes.
  auto t4 = gpu(r, "T4");
  EXPECT_TRUE(t4.pass());
  EXPECT_TRUE(t4.items[0].reason.empty());
  EXPECT_FALSE(to_json(r, &t4)["verdicts"]["items"][0].contains("reason"));
}

TEST(GpuVerdict, ALibraryOfTheImpliedPlatformPassesAndOnlyThatGpuIsJudgedSo) {
  auto r = report_with({{"sm_75", 2, 1, 1, {"none"}}, {"sm_90", 2, 1, 1, {"none"}}});
  r.libraries[0].machine = "aarch64";
  EXPECT_TRUE(gpu(r, "T4G").pass());
  auto x86_only = gpu(r, "g4dn.xlarge");  // an x86_64 instance
  EXPECT_FALSE(x86_only.pass());
  EXPECT_EQ(x86_only.items[0].reason,
            "g4dn.xlarge (T4) exists only on x86_64; this library is aarch64");
  // T4G and H100: the T4G's verdict fails on an x86_64 library, the H100's stands alone.
  r.libraries[0].machine = "x86_64";
  auto both = gpu(r, "T4G,H100");
  ASSERT_EQ(both.items.size(), 2u);
  ASSERT_EQ(both.items[0].device.str(), "7.5");
  EXPECT_FALSE(both.items[0].pass);
  ASSERT_EQ(both.items[1].device.str(), "9.0");
  EXPECT_TRUE(both.items[1].pass) << both.items[1].reason;
}

// A verdict names the GPU the user typed and its CC both; a bare CC stays a CC (issue 27).
TEST(GpuVerdict, SaysTheTypedGpuNameAndItsCc) {
  auto r = report_with({{"sm_90", 2, 1, 1, {"none"}}});
  auto named = gpu(r, "H100;8.6");
  ASSERT_EQ(named.items.size(), 2u);
  EXPECT_EQ(named.items[0].device_label(), "8.6");
  EXPECT_EQ(named.items[1].device_label(), "H100 (9.0)");
  const std::string text = render_text(r, &named);
  EXPECT_NE(text.find("verdict PASS: gpu H100 (9.0): torch/lib/libtorch_cuda.so runs through "
                      "native SASS sm_90"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("verdict FAIL: gpu 8.6: "), std::string::npos) << text;
  EXPECT_EQ(to_json(r, &named)["verdicts"]["items"][1]["gpu_names"],
            nlohmann::json::array({"H100"}));
  auto two = gpu(r, "H100,H200");  // one CC, two names
  ASSERT_EQ(two.items.size(), 1u);
  EXPECT_EQ(two.items[0].device_label(), "H100, H200 (9.0)");
}

TEST(GpuVerdict, GpusOfTwoPlatformsAreBadInput) {
  VerdictSpecs s;
  s.gpu = {"T4G,g4dn.xlarge"};
  auto v = evaluate(report_with({{"sm_75", 2, 1, 1, {"none"}}}), s);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("--gpu: T4G (GPU T4G) exists only on aarch64, g4dn.xlarge "
                                   "(instance g4dn) only on x86_64"),
            std::string::npos)
      << v.error().message;
}

// The verdict flags are read by the resolution every command uses (cuda/target_request.h):
// each flag may repeat, its specs are one union, and a bad spec is one line naming its flag.
TEST(VerdictSpecs, RepeatedFlagsAreOneUnionAsOnEveryCommand) {
  auto r = report_with({{"sm_75", 2, 1, 1, {"none"}}, {"sm_90", 2, 1, 1, {"none"}}});
  VerdictSpecs s;
  s.gpu = {"T4", "H100", "9.0"};
  s.require = {"7.5", "9.0"};
  s.exact = {"sm_75", "sm_90"};
  auto targets = resolve_verdict_specs(s);
  ASSERT_TRUE(targets) << targets.error().message;
  EXPECT_EQ(targets->devices, (std::vector<tailor::cuda::ComputeCapability>{{7, 5}, {9, 0}}));
  EXPECT_EQ(targets->gpu_names.at({9, 0}), std::vector<std::string>{"H100"});
  EXPECT_EQ(targets->require->size(), 2u);
  auto v = evaluate(r, *targets);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 4u);  // two GPUs, --require, --exact
  EXPECT_TRUE(v->pass());
  EXPECT_EQ(v->items[0].device_label(), "T4 (7.5)");
  EXPECT_EQ(v->items[1].device_label(), "H100 (9.0)");
  // The same union as one spec per flag.
  VerdictSpecs joined;
  joined.require = {"7.5;9.0"};
  EXPECT_EQ(*resolve_verdict_specs(joined)->require, *targets->require);
  // A second --exact spec that the library lacks fails the verdict.
  s.exact.push_back("sm_80");
  auto more = evaluate(r, s);
  ASSERT_TRUE(more) << more.error().message;
  EXPECT_FALSE(more->pass());
  EXPECT_EQ(more->items.back().missing, std::vector<std::string>{"sm_80"});
}

TEST(VerdictSpecs, ABadSpecIsOneLineNamingItsFlag) {
  const std::pair<VerdictSpecs, std::string> cases[] = {
      {{.gpu = {"H100", "hoper"}}, "--gpu: "},
      {{.require = {"8.0", "sm_8x"}}, "--require: "},
      {{.exact = {"bogus"}}, "--exact: "},
      // GPUs of two platforms, each in its own flag.
      {{.gpu = {"T4G", "g4dn.xlarge"}},
       "--gpu: T4G (GPU T4G) exists only on aarch64, g4dn.xlarge (instance g4dn) only on x86_64"},
  };
  for (const auto& [specs, start] : cases) {
    auto v = resolve_verdict_specs(specs);
    ASSERT_FALSE(v) << start;
    EXPECT_EQ(v.error().message.rfind(start, 0), 0u) << v.error().message;
    EXPECT_EQ(v.error().message.find('\n'), std::string::npos) << v.error().message;
  }
  // --gpu beside --require or --exact is no conflict: each flag asks its own question.
  EXPECT_TRUE(resolve_verdict_specs({.gpu = {"H100"}, .require = {"9.0"}, .exact = {"9.0"}}));
}
