#include "outputs/build_report.h"

#include <gtest/gtest.h>

using namespace tailor::outputs;

TEST(BuildReport, JsonCarriesEveryField) {
  BuildReport r;
  r.tool_version = "0.1.0";
  r.package = "fused_ops";
  r.source = "/repo/examples/fused_ops";
  r.source_kind = "example";
  r.targets = {"sm_75"};
  r.env = {{"TORCH_CUDA_ARCH_LIST", "7.5"}, {"MAX_JOBS", "2"}};
  r.toolchain = {{"nvcc", "13.0.88"}};
  r.duration_s = 91.5;
  r.jobs = 2;
  r.jobs_reason = "22 GiB / 3 GiB per job = 7, capped by 2 cores";
  r.cache_tool = tailor::cache::CacheTool::ccache;
  r.cache_hits = 3;
  r.cache_misses = 1;
  r.wheel = "fused_ops-0.1.0-cp311-cp311-linux_x86_64.whl";
  r.sha256 = "ab";
  r.size = 2977516;
  r.bytes_per_target = {{"sm_75", 123456}};
  r.checks = {{"targets", CheckStatus::passed, "exactly sm_75"},
              {"gpu-smoke", CheckStatus::skipped, "no GPU"}};
  r.ok = true;
  auto j = to_json(r);
  EXPECT_EQ(j["inputs"]["targets"][0], "sm_75");
  EXPECT_EQ(j["environment"]["set"]["TORCH_CUDA_ARCH_LIST"], "7.5");
  EXPECT_EQ(j["run"]["cache"]["hits"], 3);
  EXPECT_EQ(j["wheel"]["bytes_per_target"]["sm_75"], 123456);
  EXPECT_EQ(j["checks"][1]["status"], "skipped");
  std::string text = render_summary(r);
  EXPECT_NE(text.find("sm_75 120.6 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("ccache: 3 hits, 1 misses"), std::string::npos);
  EXPECT_NE(text.find("gpu-smoke  skipped: no GPU"), std::string::npos);
}

// A wheel fetched from a wheelhouse compiled nothing: no job count and no compiler-cache
// advice (the "cache none (install ccache ...)" with ccache installed).
TEST(BuildReport, AFetchedWheelClaimsNoCompilesAndNoCache) {
  BuildReport r;
  r.targets = {"sm_75"};
  r.jobs = 2;
  r.jobs_reason = "2 cores";
  r.wheel_from = "/srv/house/files/sm75/demo.whl";
  r.checks = {{"import", CheckStatus::passed, "demo"}};
  std::string text = render_summary(r);
  EXPECT_EQ(text.find("with 2 jobs"), std::string::npos) << text;
  EXPECT_EQ(text.find("install ccache"), std::string::npos) << text;
  EXPECT_NE(text.find("nothing compiled"), std::string::npos) << text;
  EXPECT_NE(text.find("import     passed"), std::string::npos) << text;
}

TEST(BuildReport, SaysWhereTheStepsSawTheWorkFolder) {
  BuildReport r;
  r.work_path = "/tmp/.tailor-build/fused_ops";
  r.work_path_route = "folder";
  r.work_path_tried = "namespace: unshare(CLONE_NEWUSER|CLONE_NEWNS): permission denied";
  auto j = to_json(r);
  EXPECT_EQ(j["run"]["work_path_route"], "folder");
  EXPECT_EQ(j["run"]["work_path_tried"], r.work_path_tried);
  EXPECT_TRUE(j["run"]["work_path_note"].is_null());
  EXPECT_EQ(j["run"]["sandbox"], false);
  EXPECT_NE(render_summary(r).find("path      /tmp/.tailor-build/fused_ops (folder)\n"),
            std::string::npos)
      << render_summary(r);
  // Without a fixed path the warning comes again at the end of the summary.
  r.work_path = "/home/u/.cache/tailor/extensions/fused_ops-1a2b";
  r.work_path_route = "none";
  r.work_path_note = "no fixed work path (...): ...; fix: ...";
  EXPECT_NE(render_summary(r).find("path      warning: no fixed work path (...): ...; fix: ...\n"),
            std::string::npos)
      << render_summary(r);
}

TEST(BuildReport, UnknownCacheStatsAreNull) {
  BuildReport r;
  r.cache_tool = tailor::cache::CacheTool::none;
  auto j = to_json(r);
  EXPECT_TRUE(j["run"]["cache"]["hits"].is_null());
  EXPECT_TRUE(j["wheel"].is_null());
  EXPECT_NE(render_summary(r).find("install ccache"), std::string::npos);
}

TEST(BuildReport, TheMemorySectionSaysWhichModeRanAndWhy) {
  BuildReport r;
  r.jobs = 2;
  r.jobs_reason = "22 GiB / 3 GiB per job = 7, capped by 2 cores";
  EXPECT_FALSE(to_json(r)["run"].contains("memory")) << "no section for a build that never ran";
  tailor::governor::GovernorReport g;
  g.mode = "static";
  g.reason = "ninja 1.11.1 on the build's PATH is not a jobserver client (1.13 is)";
  r.governor = g;
  EXPECT_EQ(to_json(r)["run"]["memory"]["mode"], "static");
  EXPECT_NE(render_summary(r).find("with 2 jobs"), std::string::npos);
  EXPECT_NE(render_summary(r).find("static job count (ninja 1.11.1"), std::string::npos)
      << render_summary(r);
  g.mode = "governor";
  g.reason = "ninja 1.13.2 is a jobserver client";
  g.budget = uint64_t{3} << 30;
  g.peak_build_rss = uint64_t{2390} << 20;
  g.max_running = 2;
  g.job_peaks = {{"nvcc", uint64_t{584} << 20}, {"cc1plus", uint64_t{1836} << 20}};
  g.series = {{0.0, 1, 0, 0, 3000, 10}, {0.25, 1, 1, 0, 2500, 500}};
  g.brakes = {{1.0, "stop", 42, "cc1plus", 900, 200}, {2.0, "continue", 42, "cc1plus", 900, 1500}};
  r.governor = g;
  auto j = to_json(r)["run"]["memory"];
  EXPECT_EQ(j["mode"], "governor");
  EXPECT_EQ(j["budget_mib"], 3072);
  EXPECT_EQ(j["peak_build_rss_mib"], 2390);
  EXPECT_EQ(j["job_peaks_mib"]["cc1plus"], 1836);
  EXPECT_EQ(j["series"][1][4], 2500);
  EXPECT_EQ(j["brakes"][0]["action"], "stop");
  std::string text = render_summary(r);
  EXPECT_NE(text.find("under the memory governor (ninja 1.13.2"), std::string::npos) << text;
  EXPECT_NE(text.find("peak build RSS 2390 MiB, up to 2 jobs at once, 1 brake stop\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cc1plus 1836 MiB, nvcc 584 MiB"), std::string::npos) << text;
}

TEST(BuildReport, PhasesAndTheCompileSpanAreReported) {
  BuildReport r;
  r.phases = {{"inputs", 2.5}, {"build", 40.0}, {"import", 3.25}};
  r.job_timeline = {
      {"a.o", 1000, 9000, "cu"}, {"b.o", 500, 4000, "cpp"}, {"lib.so", 9000, 12500, "link"}};
  nlohmann::json j = to_json(r);
  ASSERT_EQ(j["run"]["phases"].size(), 3u);
  EXPECT_EQ(j["run"]["phases"][1]["name"], "build");
  EXPECT_DOUBLE_EQ(j["run"]["phases"][2]["seconds"].get<double>(), 3.25);
  EXPECT_DOUBLE_EQ(j["run"]["compile_span_s"].get<double>(), 12.0);  // 0.5 s to 12.5 s
  std::string text = render_summary(r);
  EXPECT_NE(text.find("phases    inputs 2.5, build 40.0 (compiles 12.0), import 3.2 s"),
            std::string::npos)
      << text;
  EXPECT_FALSE(compile_span_s({}).has_value());
  BuildReport none;
  EXPECT_FALSE(to_json(none)["run"].contains("phases"));
  EXPECT_FALSE(to_json(none)["run"].contains("compile_span_s"));
}
