#include "plan/torch_estimate.h"

#include <gtest/gtest.h>

namespace tailor::plan {
namespace {

MeasuredUnit unit(std::string out, std::string kind, std::string target, double s, double end,
                  std::optional<uint64_t> peak = std::nullopt) {
  return {{std::move(out), std::move(kind), std::move(target)}, s, end, peak};
}

TEST(BuildPrediction, UnitsTakeTheirGroupsMeanElseTheirKindsElseEveryUnits) {
  std::vector<BuildUnit> units = {{"a.o", "cpp", "c10"},       {"b.o", "cpp", "c10"},
                                  {"c.o", "cpp", "c10"},       {"d.o", "cpp", "torch_cpu"},
                                  {"e.o", "cpp", "torch_cpu"}, {"k.o", "cu", "torch_cuda"},
                                  {"l.so", "link", ""}};
  std::vector<MeasuredUnit> measured = {
      unit("a.o", "cpp", "c10", 10, 10, 500), unit("b.o", "cpp", "c10", 20, 30, 700),
      unit("d.o", "cpp", "torch_cpu", 60, 90, 1500),
      unit("elsewhere.o", "cpp", "x", 1000, 95)};  // not a unit of this build: left out
  EstimateCoefficients k;
  k.reserve_gib = 4;
  BuildPrediction p = predict_build(measured, units, 8, 10, k);
  EXPECT_EQ(p.units_total, 7u);
  EXPECT_EQ(p.units_measured, 3u);
  EXPECT_EQ(p.units_with_peak, 3u);
  EXPECT_DOUBLE_EQ(p.measured_cpu_s, 90);
  // c.o: c10's mean 15; e.o: torch_cpu's 60; k.o and l.so: no kind measured, every unit's 30.
  EXPECT_DOUBLE_EQ(p.remaining_cpu_s, 15 + 60 + 30 + 30);
  EXPECT_EQ(p.kinds_not_measured, (std::vector<std::string>{"cu", "link"}));
  // The heaviest peak 1500 MiB: floor((10 - 4) GiB / 1500 MiB) = 4 jobs, under 8 cores.
  EXPECT_EQ(p.peak_per_job_mib, 1500u);
  EXPECT_EQ(p.jobs, 4);
  EXPECT_NEAR(p.whole_wall_h, (90.0 + 135) / 4 / 3600, 1e-9);
  EXPECT_NE(render_prediction(p).find("kinds not measured (every unit's mean used): cu, link"),
            std::string::npos);
  const std::string text = render_prediction(p);
  EXPECT_NE(text.find("  cu         1 units,     0 measured, mean -, peak -,"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  cpp        5 units,     3 measured, mean 30.0 s, peak 1500 MiB,"),
            std::string::npos)
      << text;
  // Few cores bound the jobs; no memory for even one job still runs one.
  EXPECT_EQ(predict_build(measured, units, 2, 64, k).jobs, 2);
  EXPECT_EQ(predict_build(measured, units, 8, 3, k).jobs, 1);
}

TEST(BuildPrediction, ChecksPredictHeldOutUnitsFromTheRest) {
  std::vector<MeasuredUnit> m;
  // First half: C++ units of 10 s; second half: C++ of 10 s and a CUDA unit of 100 s,
  // a kind the first half never measured.
  for (int i = 0; i < 4; ++i)
    m.push_back(unit("a" + std::to_string(i), "cpp", "t", 10, 10.0 * (i + 1)));
  m.push_back(unit("b0", "cpp", "t", 10, 50));
  m.push_back(unit("k0", "cu", "t", 30, 80));
  auto checks = check_prediction(m);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].name, "interleaved");
  EXPECT_EQ(checks[0].fit_units, 3u);   // a0 a2 b0 by end time
  EXPECT_EQ(checks[0].test_units, 3u);  // a1 a3 k0
  EXPECT_DOUBLE_EQ(checks[0].measured_s, 50);
  EXPECT_DOUBLE_EQ(checks[0].predicted_s, 30);  // k0: no cu in the fit, every unit's 10 s
  EXPECT_EQ(checks[0].kinds_not_fitted, (std::vector<std::string>{"cu"}));
  EXPECT_NEAR(checks[0].error(), -0.4, 1e-12);
  EXPECT_EQ(checks[1].name, "halves");  // span 0..80, mid 40: a0-a3 fit
  EXPECT_EQ(checks[1].fit_units, 4u);
  EXPECT_EQ(checks[1].test_units, 2u);
  EXPECT_DOUBLE_EQ(checks[1].predicted_s, 20);
  EXPECT_DOUBLE_EQ(checks[1].measured_s, 40);
  EXPECT_NE(render_check(checks[1]).find("-50.0%"), std::string::npos);
  EXPECT_TRUE(check_prediction({}).empty());
}

TEST(BuildPrediction, CMakeTargetFromTheOutputPath) {
  EXPECT_EQ(cmake_target_of("caffe2/CMakeFiles/torch_cuda.dir/__/aten/x.cu.o"), "torch_cuda");
  EXPECT_EQ(cmake_target_of("c10/CMakeFiles/c10.dir/core/A.cpp.o"), "c10");
  EXPECT_EQ(cmake_target_of("lib/libc10.so"), "");
  EXPECT_EQ(cmake_target_of("CMakeFiles/nodir"), "");
}

}  // namespace
}  // namespace tailor::plan
