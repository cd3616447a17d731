#include "outputs/ninja_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "outputs/build_report.h"
#include "support/fixtures.h"

using namespace tailor::outputs;
namespace fs = std::filesystem;

namespace {
tailor::RealDiskInterface real_disk;  // these tests read and write real files
}  // namespace

TEST(NinjaLog, ReadsEveryVersionTailorKnows) {
  for (std::string v : {"5", "6", "7"}) {
    std::string text = "# ninja log v" + v +
                       "\n10\t2500\t1700000000000000000\tobj/a.o\tdeadbeef\n"
                       "20\t900\t0\tobj/b.o\t1234abcd\n";
    auto log = parse_ninja_log(text);
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_EQ(log->version, v[0] - '0');
    ASSERT_EQ(log->jobs.size(), 2u);
    EXPECT_EQ(log->jobs[0].output, "obj/a.o");
    EXPECT_EQ(log->jobs[0].start_ms, 10u);
    EXPECT_EQ(log->jobs[0].end_ms, 2500u);
    EXPECT_EQ(log->skipped, 0u);
  }
}

TEST(NinjaLog, AHeaderIsRequiredAndNamesWhatItSaw) {
  auto none = parse_ninja_log("10\t20\t0\ta.o\tff\n");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("not a Ninja log"), std::string::npos);
  EXPECT_FALSE(parse_ninja_log(""));
  auto v4 = parse_ninja_log("# ninja log v4\n10\t20\t0\ta.o\n");
  ASSERT_FALSE(v4);
  EXPECT_NE(v4.error().message.find("version 4"), std::string::npos) << v4.error().message;
  auto long_version = parse_ninja_log("# ninja log v" + std::string(5000, '9') + "\n");
  ASSERT_FALSE(long_version);
  EXPECT_LT(long_version.error().message.size(), 200u) << "the message does not echo a huge header";
}

TEST(NinjaLog, HostileLinesAreSkippedAndCounted) {
  std::string text =
      "# ninja log v5\n"
      "1\t2\t0\tok.o\tff\n"                          // fine
      "1\t2\t0\tshort.o\n"                           // 4 fields
      "1\t2\t0\tlong.o\tff\textra\n"                 // 6 fields
      "-5\t2\t0\tneg.o\tff\n"                        // negative
      "1\t99999999999999999999999\t0\thuge.o\tff\n"  // overflows
      "1\t1099511627777\t0\tpast.o\tff\n"            // past the 2^40 ms cap
      "abc\t2\t0\tword.o\tff\n"                      // not a number
      " 1\t2\t0\tspace.o\tff\n"                      // not only digits
      "9\t3\t0\tbackwards.o\tff\n"                   // ends before it starts
      "1\t2\t0\t\tff\n"                              // no output
      "# ninja log v5\n"                             // a second header
      "\n"
      "3\t4\t0\tlast.o\tff\r\n";  // CRLF is fine
  auto log = parse_ninja_log(text);
  ASSERT_TRUE(log) << log.error().message;
  ASSERT_EQ(log->jobs.size(), 2u);
  EXPECT_EQ(log->jobs[0].output, "ok.o");
  EXPECT_EQ(log->jobs[1].output, "last.o");
  EXPECT_EQ(log->skipped, 10u);
}

TEST(NinjaLog, EntriesPastTheBoundAreDroppedNotKept) {
  std::string text = "# ninja log v5\n";
  for (int i = 0; i < 50; ++i)
    text += std::to_string(i) + "\t" + std::to_string(i + 10) + "\t0\tf" + std::to_string(i) +
            ".o\tff\n";
  NinjaLogLimits limits;
  limits.max_jobs = 20;
  auto log = parse_ninja_log(text, 0, limits);
  ASSERT_TRUE(log);
  EXPECT_EQ(log->jobs.size(), 20u);
  EXPECT_EQ(log->dropped, 30u);
  limits.max_output = 3;
  auto cut = parse_ninja_log("# ninja log v5\n1\t2\t0\tlong_name.o\tff\n", 0, limits);
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->jobs.empty());
  EXPECT_EQ(cut->skipped, 1u);
}

TEST(NinjaLog, FromAnOffsetOnlyWhatARunAppended) {
  std::string before = "# ninja log v5\n1\t2\t0\told.o\tff\n";
  std::string text = before + "5\t9\t0\tnew.o\tff\n";
  auto log = parse_ninja_log(text, before.size());
  ASSERT_TRUE(log);
  ASSERT_EQ(log->jobs.size(), 1u);
  EXPECT_EQ(log->jobs[0].output, "new.o");
  // An offset inside a line (the log was rewritten): that line is skipped, the rest read.
  auto mid = parse_ninja_log(text, before.size() + 3);
  ASSERT_TRUE(mid);
  EXPECT_TRUE(mid->jobs.empty());
  EXPECT_EQ(mid->skipped, 1u);
  auto past = parse_ninja_log(text, text.size() + 100);
  ASSERT_TRUE(past);
  EXPECT_TRUE(past->jobs.empty());
}

TEST(NinjaLog, InvocationsArePlacedOneAfterAnother) {
  std::vector<NinjaJob> jobs = {{"a.o", 0, 4000, ""},
                                {"b.o", 100, 6000, ""},  // first Ninja: ends at 6 s
                                {"c.o", 0, 3000, ""},
                                {"d.o", 50, 3500, ""}};  // second: times start again
  uint64_t end = place_invocations(jobs, 1000);
  EXPECT_EQ(jobs[0].start_ms, 1000u);
  EXPECT_EQ(jobs[1].end_ms, 7000u);
  EXPECT_EQ(jobs[2].start_ms, 7000u);
  EXPECT_EQ(jobs[3].end_ms, 10500u);
  EXPECT_EQ(end, 10500u);
}

TEST(NinjaLog, JobKindsComeFromTheRuleAndTheInput) {
  std::string build_ninja =
      "rule compile\n  command = c++ $in\nrule cuda_compile\n  command = nvcc $in\n"
      "build /w/build/temp/k.o: cuda_compile /w/csrc/k.cu\n"
      "build /w/build/temp/b.o: compile /w/csrc/b.cpp || order_only\n"
      "build /w/build/temp/with$ space.o: compile /w/csrc/with$ space.c\n";
  std::vector<NinjaJob> jobs = {{"/w/build/temp/k.o", 0, 1, ""},
                                {"/w/build/temp/b.o", 0, 1, ""},
                                {"/w/build/temp/with space.o", 0, 1, ""},
                                {"lib/_C.so", 0, 1, ""},
                                {"gen/x.h", 0, 1, ""},
                                {"src/direct.cu.o", 0, 1, ""}};
  classify_jobs(jobs, build_ninja);
  EXPECT_EQ(jobs[0].kind, "cu");
  EXPECT_EQ(jobs[1].kind, "cpp");
  EXPECT_EQ(jobs[2].kind, "c");
  EXPECT_EQ(jobs[3].kind, "link");
  EXPECT_EQ(jobs[4].kind, "other");
  EXPECT_EQ(jobs[5].kind, "other") << "an unknown edge is judged by its output name";
  classify_jobs(jobs, "build broken line without colon\nbuild :\nbuild x.o:");  // never throws
}

TEST(NinjaLog, CMakeRulesDecideTheKindNotTheTargetsName) {
  // As PyTorch's configured tree has them (rules in CMakeFiles/rules.ninja): c10_cuda's C++
  // units are C++, whatever the target is called; a code generator's .cpp outputs are its
  // own step, not compile units.
  std::string build_ninja =
      "build c10/cuda/CMakeFiles/c10_cuda.dir/CUDAFunctions.cpp.o: "
      "CXX_COMPILER__c10_cuda_unscanned_Release /src/c10/cuda/CUDAFunctions.cpp || gen\n"
      "build caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/Indexing.cu.o: "
      "CUDA_COMPILER__torch_cuda_unscanned_Release /src/aten/src/ATen/native/cuda/Indexing.cu\n"
      "build aten/src/ATen/RegisterCUDA.cpp aten/src/ATen/RegisterCPU.cpp: CUSTOM_COMMAND "
      "/src/torchgen/gen.py\n"
      "build /t/torch/csrc/autograd/generated/Functions.cpp: CUSTOM_COMMAND\n"
      "build lib/libc10_cuda.so: CXX_SHARED_LIBRARY_LINKER__c10_cuda_Release x.o\n"
      "build m.o: cuda_compile_m2 k.cu\n"
      "build d.o: cuda_devlink a.o\n";
  std::vector<NinjaJob> jobs = {
      {"c10/cuda/CMakeFiles/c10_cuda.dir/CUDAFunctions.cpp.o", 0, 1, ""},
      {"caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/Indexing.cu.o", 0, 1, ""},
      {"aten/src/ATen/RegisterCUDA.cpp", 0, 1, ""},
      {"/t/torch/csrc/autograd/generated/Functions.cpp", 0, 1, ""},
      {"lib/libc10_cuda.so", 0, 1, ""},
      {"m.o", 0, 1, ""},
      {"d.o", 0, 1, ""}};
  classify_jobs(jobs, build_ninja);
  EXPECT_EQ(jobs[0].kind, "cpp");
  EXPECT_EQ(jobs[1].kind, "cu");
  EXPECT_EQ(jobs[2].kind, "other");
  EXPECT_EQ(jobs[3].kind, "other");
  EXPECT_EQ(jobs[4].kind, "link");
  EXPECT_EQ(jobs[5].kind, "cu");
  EXPECT_EQ(jobs[6].kind, "link");
  auto edges = parse_ninja_edges(build_ninja, 3);
  ASSERT_EQ(edges.size(), 3u) << "bounded";
  EXPECT_EQ(edges[2].output, "aten/src/ATen/RegisterCUDA.cpp");
  EXPECT_EQ(edges[2].rule, "CUSTOM_COMMAND");
  EXPECT_EQ(edges[2].input, "/src/torchgen/gen.py");
}

TEST(NinjaLog, CollectsWhatThisRunAppendedUnderTheBuildFolder) {
  fs::path root = tailor::test::scratch_dir("ninja_log") / "build";
  fs::create_directories(root / "temp.linux");
  fs::path log = root / "temp.linux" / ".ninja_log";
  {
    std::ofstream(log) << "# ninja log v5\n0\t1000\t0\t" << (root / "temp.linux/old.o").string()
                       << "\tff\n";
  }
  {
    std::ofstream(root / "temp.linux" / "build.ninja")
        << "build " << (root / "temp.linux/new.o").string() << ": cuda_compile /s/new.cu\n";
  }
  auto before = ninja_log_sizes(real_disk, root.string());
  ASSERT_EQ(before.size(), 1u);
  {
    std::ofstream(log, std::ios::app)
        << "0\t2000\t0\t" << (root / "temp.linux/new.o").string() << "\tff\n";
  }
  BuildJobs jobs = collect_build_jobs(real_disk, root.string(), before);
  ASSERT_EQ(jobs.jobs.size(), 1u);
  EXPECT_EQ(jobs.jobs[0].output, "temp.linux/new.o") << "relative to the build folder";
  EXPECT_EQ(jobs.jobs[0].kind, "cu");
  EXPECT_EQ(jobs.jobs[0].end_ms, 2000u);
  // A fresh tree (nothing before): the whole log.
  EXPECT_EQ(collect_build_jobs(real_disk, root.string(), {}).jobs.size(), 2u);
  EXPECT_TRUE(collect_build_jobs(real_disk, (root / "missing").string(), {}).jobs.empty());
}

TEST(NinjaLog, TheReportCarriesTheTimelineOnlyWhenThereIsOne) {
  BuildReport r;
  r.jobs = 4;
  EXPECT_FALSE(to_json(r)["run"].contains("job_timeline"));
  r.job_timeline = {{"a.o", 0, 1500, "cu"}};
  r.job_timeline_dropped = 3;
  auto j = to_json(r);
  EXPECT_EQ(j["run"]["jobs"], 4) << "the job count keeps its name";
  ASSERT_EQ(j["run"]["job_timeline"].size(), 1u);
  EXPECT_EQ(j["run"]["job_timeline"][0]["output"], "a.o");
  EXPECT_EQ(j["run"]["job_timeline"][0]["end_ms"], 1500);
  EXPECT_EQ(j["run"]["job_timeline"][0]["kind"], "cu");
  EXPECT_EQ(j["run"]["job_timeline_dropped"], 3);
}

namespace tailor::outputs {
namespace {

TEST(NinjaLog, ModulesBuiltSideBySideArePlacedByTheirStartStamps) {
  // The build driver ran two modules at once, each Ninja in its own folder, and wrote when
  // each started (.tailor_start, epoch ms): their jobs overlap in the timeline instead of
  // one module's following the other's.
  fs::path root = tailor::test::scratch_dir("ninja_log_side") / "build";
  for (const char* m : {"pkg._a", "pkg._b"}) fs::create_directories(root / "temp" / m);
  {
    std::ofstream(root / "temp/pkg._a/.ninja_log")
        << "# ninja log v5\n0\t3000\t0\t" << (root / "temp/pkg._a/a.o").string() << "\tff\n";
  }
  {
    std::ofstream(root / "temp/pkg._b/.ninja_log")
        << "# ninja log v5\n0\t2000\t0\t" << (root / "temp/pkg._b/b.o").string() << "\tff\n";
  }
  { std::ofstream(root / "temp/pkg._a/.tailor_start") << "1700000000000\n"; }
  { std::ofstream(root / "temp/pkg._b/.tailor_start") << "1700000000500\n"; }
  BuildJobs jobs = collect_build_jobs(real_disk, root.string(), {});
  ASSERT_EQ(jobs.jobs.size(), 2u);
  std::map<std::string, NinjaJob> by;
  for (const auto& j : jobs.jobs) by[j.output] = j;
  EXPECT_EQ(by["temp/pkg._a/a.o"].start_ms, 0u);
  EXPECT_EQ(by["temp/pkg._a/a.o"].end_ms, 3000u);
  EXPECT_EQ(by["temp/pkg._b/b.o"].start_ms, 500u) << "started 500 ms after the first module";
  EXPECT_EQ(by["temp/pkg._b/b.o"].end_ms, 2500u);
  // A damaged stamp: that log is placed one after another, as before.
  { std::ofstream(root / "temp/pkg._b/.tailor_start") << "soon\n"; }
  jobs = collect_build_jobs(real_disk, root.string(), {});
  by.clear();
  for (const auto& j : jobs.jobs) by[j.output] = j;
  EXPECT_GE(by["temp/pkg._b/b.o"].start_ms, 3000u);
  // apex moves each module's objects one folder further (build_temp/<module>/<extension>):
  // the stamp in the module's folder still places its log.
  { std::ofstream(root / "temp/pkg._b/.tailor_start") << "1700000000500\n"; }
  fs::create_directories(root / "temp/pkg._c/fused_c");
  {
    std::ofstream(root / "temp/pkg._c/fused_c/.ninja_log")
        << "# ninja log v5\n0\t1000\t0\t" << (root / "temp/pkg._c/fused_c/c.o").string()
        << "\tff\n";
  }
  { std::ofstream(root / "temp/pkg._c/.tailor_start") << "1700000001000\n"; }
  jobs = collect_build_jobs(real_disk, root.string(), {});
  by.clear();
  for (const auto& j : jobs.jobs) by[j.output] = j;
  EXPECT_EQ(by["temp/pkg._c/fused_c/c.o"].start_ms, 1000u)
      << "placed by its module's stamp, not after the others";
}

}  // namespace
}  // namespace tailor::outputs

TEST(NinjaLog, ThePackageNinjasModuleStampsAreNotJobsAndItsSubninjasClassify) {
  // The build driver's one Ninja over every module: one log in the package's build folder,
  // each module ending in a stamp edge (.tailor-done/mN), and a module file it could not
  // merge included with `subninja` (its edges, and so their kinds, are there).
  fs::path root = tailor::test::scratch_dir("ninja_log_package") / "build";
  fs::create_directories(root / "temp/pkg._b");
  {
    std::ofstream(root / "temp/build.ninja")
        << "rule cuda_compile_m0\n  command = nvcc $in\n"
        << "build " << (root / "temp/pkg._a/k.o").string() << ": cuda_compile_m0 /s/k.cu\n"
        << "subninja " << (root / "temp/pkg._b/build$ ninja").string() << "\n"
        << "build .tailor-done/m0: tailor_module_done " << (root / "temp/pkg._a/k.o").string()
        << "\n";
  }
  {
    std::ofstream(root / "temp/pkg._b/build ninja")
        << "build " << (root / "temp/pkg._b/h.o").string() << ": compile /s/h.cpp\n";
  }
  {
    std::ofstream(root / "temp/.ninja_log")
        << "# ninja log v7\n0\t3000\t0\t" << (root / "temp/pkg._a/k.o").string()
        << "\tff\n3000\t3001\t0\t.tailor-done/m0\tff\n0\t900\t0\t"
        << (root / "temp/pkg._b/h.o").string() << "\tff\n";
  }
  BuildJobs jobs = collect_build_jobs(real_disk, root.string(), {});
  ASSERT_EQ(jobs.jobs.size(), 2u) << "the stamp edge is not a job";
  std::map<std::string, NinjaJob> by;
  for (const auto& j : jobs.jobs) by[j.output] = j;
  EXPECT_EQ(by["temp/pkg._a/k.o"].kind, "cu");
  EXPECT_EQ(by["temp/pkg._a/k.o"].input, "/s/k.cu");
  EXPECT_EQ(by["temp/pkg._b/h.o"].kind, "cpp") << "classified from the subninja's edge";
  EXPECT_EQ(by["temp/pkg._b/h.o"].input, "/s/h.cpp");
}

TEST(NinjaLog, UnitTimesAreKeyedBySourceWithinThePackageFromAnyFolder) {
  std::vector<NinjaJob> jobs = {
      {"/tmp/.tailor-build/pkg/src/build/temp/m/csrc/bwd.o", 0, 380000, "cu",
       "/tmp/.tailor-build/pkg/src/csrc/bwd.cu"},
      {"/home/u/w/src/build/temp/m/csrc/fwd.o", 10, 2010, "cpp", "/home/u/w/src/csrc/fwd.cpp"},
      {"build/temp/m/x.o", 0, 50, "c", "csrc/x.c"},   // already relative: kept as written
      {"m.so", 0, 9000, "link", "build/temp/m/x.o"},  // links are not units
      {"gen.h", 0, 10, "other", "gen.py"},
      {"orphan.o", 0, 10, "cpp", ""},  // no known source
  };
  auto t = unit_times(jobs, {"/home/u/w/src", "/tmp/.tailor-build/pkg/src"});
  EXPECT_EQ(t, (std::map<std::string, uint64_t>{
                   {"csrc/bwd.cu", 380000}, {"csrc/fwd.cpp", 2000}, {"csrc/x.c", 50}}));
  // classify_jobs gives each job its input from build.ninja.
  std::vector<NinjaJob> classified = {{"/s/build/a.o", 0, 5, ""}};
  classify_jobs(classified, "build /s/build/a.o: cuda_compile /s/csrc/a.cu\n");
  EXPECT_EQ(classified[0].input, "/s/csrc/a.cu");
  EXPECT_EQ(unit_times(classified, {"/s"}), (std::map<std::string, uint64_t>{{"csrc/a.cu", 5}}));
}
