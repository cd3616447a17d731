// GPU verdicts name every target that covers the device, with its entries, plain first.
#include <gtest/gtest.h>

#include "inspect/render.h"
#include "inspect/verdicts.h"

using namespace tailor::inspect;

namespace {
InspectReport report_with(std::vector<TargetStats> targets) {
  InspectedLibrary lib;
  lib.path = "torch/lib/libtorch_cuda.so";
  lib.machine = "x86_64";
  lib.has_device_code = true;
  lib.targets = std::move(targets);
  InspectReport r;
  r.libraries.push_back(std::move(lib));
  return r;
}
Verdicts gpu(const InspectReport& r, const std::string& spec) {
  VerdictSpecs s;
  s.gpu = spec;
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
  EXPECT_NE(text.find("verdict PASS: gpu 9.0: torch/lib/libtorch_cuda.so runs through native SASS sm_90 (444 entries) "
                      "and sm_90a (4 entries)\n"),
            std::string::npos)
      << text;
  auto j = to_json(r, &v);
  EXPECT_EQ(j["verdicts"]["items"][0]["covering"][1]["target"], "sm_90a");
  EXPECT_EQ(j["verdicts"]["items"][0]["covering"][0]["entries"], 444);
}

TEST(GpuVerdict, CompatibleSassAndPtxListTheirTargetsToo) {
  auto r = report_with({{"sm_80", 3, 1, 1, {"none"}}, {"sm_86", 1, 1, 1, {"none"}}, {"compute_80", 1, 1, 1, {"zstd"}}});
  auto ada = gpu(r, "8.9");
  EXPECT_EQ(ada.items[0].mode, "compatible_sass");
  EXPECT_EQ(ada.items[0].via, "sm_86");
  auto text = render_text(r, &ada);
  EXPECT_NE(text.find("runs through compatible SASS sm_86 (1 entry) and sm_80 (3 entries)\n"), std::string::npos) << text;
  auto hopper = gpu(r, "9.0");
  EXPECT_EQ(hopper.items[0].mode, "ptx_jit");
  EXPECT_NE(render_text(r, &hopper).find("runs through PTX JIT compute_80 (1 entry)\n"), std::string::npos);
  auto volta = gpu(r, "7.0");
  EXPECT_FALSE(volta.pass());
  EXPECT_TRUE(volta.items[0].covering.empty());
}
