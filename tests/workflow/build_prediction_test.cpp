#include "workflow/build_prediction.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"

namespace tailor::workflow {
namespace {

namespace fs = std::filesystem;

// A configured tree's build.ninja in small: two targets' C++ units, a CUDA unit, a code
// generator, a link, and what a default build never runs.
const char* k_build_ninja =
    "include CMakeFiles/rules.ninja\n"
    "build c10/CMakeFiles/c10.dir/A.cpp.o: CXX_COMPILER__c10_unscanned_Release /s/c10/A.cpp\n"
    "build c10/CMakeFiles/c10.dir/B.cpp.o: CXX_COMPILER__c10_unscanned_Release /s/c10/B.cpp\n"
    "build c10/cuda/CMakeFiles/c10_cuda.dir/C.cpp.o: CXX_COMPILER__c10_cuda_unscanned_Release "
    "/s/c10/cuda/C.cpp\n"
    "build caffe2/CMakeFiles/torch_cuda.dir/K.cu.o: CUDA_COMPILER__torch_cuda_unscanned_Release "
    "/s/K.cu\n"
    "build gen/Register.cpp gen/Other.cpp: CUSTOM_COMMAND /s/gen.py\n"
    "build lib/libc10.so: CXX_SHARED_LIBRARY_LINKER__c10_Release c10/CMakeFiles/c10.dir/A.cpp.o\n"
    "build c10: phony lib/libc10.so\n"
    "build CMakeFiles/install.util: CUSTOM_COMMAND all\n"
    "build build.ninja: RERUN_CMAKE | CMakeLists.txt\n";

// A partial run's report: two C++ units with peaks, the generator, a configure check's
// unit that is not one of the tree's, and a secondary output of the generator.
const char* k_report = R"({"run": {
  "job_timeline": [
    {"output": "gen/Register.cpp", "start_ms": 0, "end_ms": 4000, "kind": "cpp"},
    {"output": "gen/Other.cpp", "start_ms": 0, "end_ms": 4000, "kind": "cpp"},
    {"output": "CMakeFiles/cmTC_1.dir/x.c.o", "start_ms": 0, "end_ms": 100, "kind": "c"},
    {"output": "c10/CMakeFiles/c10.dir/A.cpp.o", "start_ms": 4000, "end_ms": 14000, "kind": "cpp"},
    {"output": "c10/cuda/CMakeFiles/c10_cuda.dir/C.cpp.o", "start_ms": 4000, "end_ms": 34000,
     "kind": "cu"}],
  "memory": {"unit_peaks_mib": {"c10/CMakeFiles/c10.dir/A.cpp.o": 300,
                                "c10/cuda/CMakeFiles/c10_cuda.dir/C.cpp.o": 900},
             "unit_cpu_ms": {"c10/CMakeFiles/c10.dir/A.cpp.o": 9000}}}})";

TEST(BuildPrediction, UnitsOfABuildNinjaWithTheirRulesKinds) {
  auto units = build_units_from_ninja(k_build_ninja);
  ASSERT_EQ(units.size(), 6u);  // phony, install.util and RERUN_CMAKE left out
  EXPECT_EQ(units[2].output, "c10/cuda/CMakeFiles/c10_cuda.dir/C.cpp.o");
  EXPECT_EQ(units[2].kind, "cpp") << "c10_cuda's C++ unit is C++";
  EXPECT_EQ(units[2].target, "c10_cuda");
  EXPECT_EQ(units[3].kind, "cu");
  EXPECT_EQ(units[4].output, "gen/Register.cpp");
  EXPECT_EQ(units[4].kind, "other") << "a generator's .cpp output is no compile unit";
  EXPECT_EQ(units[5].kind, "link");
}

TEST(BuildPrediction, AReportsUnitsOnOneTimeline) {
  auto units = build_units_from_ninja(k_build_ninja);
  std::vector<plan::MeasuredUnit> m;
  auto end = add_measured_units(nlohmann::json::parse(k_report), units, 100, m);
  ASSERT_TRUE(end) << end.error().message;
  EXPECT_DOUBLE_EQ(*end, 134);
  ASSERT_EQ(m.size(), 3u);  // the secondary output and the configure check left out
  EXPECT_EQ(m[0].unit.kind, "other");
  EXPECT_FALSE(m[0].peak_mib);
  EXPECT_DOUBLE_EQ(m[1].seconds, 10);
  EXPECT_DOUBLE_EQ(m[1].end_s, 114);
  EXPECT_EQ(m[2].peak_mib, 900u);
  // The same report again adds nothing: a unit keeps its first measurement.
  ASSERT_TRUE(add_measured_units(nlohmann::json::parse(k_report), units, 200, m));
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].cpu_s, 9.0);
  // By CPU time: only the unit the governor sampled, its 9 s of CPU (10 s of wall).
  std::vector<plan::MeasuredUnit> cpu;
  ASSERT_TRUE(add_measured_units(nlohmann::json::parse(k_report), units, 0, cpu, true));
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_DOUBLE_EQ(cpu[0].seconds, 9);
  EXPECT_FALSE(add_measured_units(nlohmann::json::parse(R"({"run": {}})"), units, 0, m));
  EXPECT_FALSE(add_measured_units(nlohmann::json::parse("[1]"), units, 0, m));
}

TEST(BuildPrediction, FromFilesWithChecks) {
  fs::path dir = tailor::test::scratch_dir("build_prediction");
  std::ofstream(dir / "build.ninja") << k_build_ninja;
  std::ofstream(dir / "r.json") << k_report;
  std::ofstream(dir / "other.json") << R"({"run": {"job_timeline": [
      {"output": "elsewhere.o", "start_ms": 0, "end_ms": 5}]}})";
  std::ofstream(dir / "bad.json") << "{not json";
  PredictionInput in{{(dir / "r.json").string()}, (dir / "build.ninja").string(), 4, 16, true};
  auto r = predict_from_files(in);
  ASSERT_TRUE(r) << r.error().message;
  const plan::BuildPrediction& p = r->prediction;
  EXPECT_EQ(p.units_total, 6u);
  EXPECT_EQ(p.units_measured, 3u);
  EXPECT_DOUBLE_EQ(p.measured_cpu_s, 4 + 10 + 30);
  // B.cpp.o: c10's C++ mean 10 s; K.cu.o and the link: kinds not measured, every unit's mean.
  EXPECT_NEAR(p.remaining_cpu_s, 10 + 2 * (44.0 / 3), 1e-9);
  EXPECT_EQ(p.kinds_not_measured, (std::vector<std::string>{"cu", "link"}));
  EXPECT_EQ(p.peak_per_job_mib, 900u);
  EXPECT_EQ(p.jobs, 4);
  EXPECT_EQ(r->checks.size(), 2u);
  nlohmann::json j = prediction_json(*r);
  EXPECT_EQ(j["machine"]["jobs"], 4);
  EXPECT_EQ(j["kinds"]["cpp"]["measured"], 2);
  EXPECT_TRUE(j["checks"].contains("interleaved"));

  // Ninja's own log of a run that left no report: its units, after the report's.
  std::ofstream(dir / "ninja_log")
      << "# ninja log v5\n0\t20000\t0\tc10/CMakeFiles/c10.dir/B.cpp.o\th\n";
  in.reports = {(dir / "r.json").string(), (dir / "ninja_log").string()};
  auto both = predict_from_files(in);
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->prediction.units_measured, 4u);
  EXPECT_DOUBLE_EQ(both->prediction.measured_cpu_s, 4 + 10 + 30 + 20);

  in.reports = {(dir / "other.json").string()};
  auto none = predict_from_files(in);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("measured no unit"), std::string::npos);
  in.reports = {(dir / "bad.json").string()};
  auto bad = predict_from_files(in);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.json: not JSON (a tailor build report or a .ninja_log)"),
            std::string::npos);
  in.reports = {(dir / "r.json").string()};
  in.build_ninja = (dir / "missing.ninja").string();
  EXPECT_FALSE(predict_from_files(in));
}

}  // namespace
}  // namespace tailor::workflow
