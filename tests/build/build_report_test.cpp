#include "build/build_report.h"

#include <gtest/gtest.h>

using namespace tailor::build;

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
  r.cache_tool = "ccache";
  r.cache_hits = 3;
  r.cache_misses = 1;
  r.wheel = "fused_ops-0.1.0-cp311-cp311-linux_x86_64.whl";
  r.sha256 = "ab";
  r.size = 2977516;
  r.bytes_per_target = {{"sm_75", 123456}};
  r.checks = {{"targets", CheckStatus::passed, "exactly sm_75"}, {"gpu-smoke", CheckStatus::skipped, "no GPU"}};
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

TEST(BuildReport, UnknownCacheStatsAreNull) {
  BuildReport r;
  r.cache_tool = "none";
  auto j = to_json(r);
  EXPECT_TRUE(j["run"]["cache"]["hits"].is_null());
  EXPECT_TRUE(j["wheel"].is_null());
  EXPECT_NE(render_summary(r).find("install ccache"), std::string::npos);
}
