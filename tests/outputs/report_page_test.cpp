#include "outputs/report_page.h"

#include <gtest/gtest.h>

#include "outputs/build_report.h"

using namespace tailor::outputs;
using nlohmann::json;

namespace {

BuildReport page_report() {
  BuildReport r;
  r.tool_version = "0.1.0";
  r.package = "fused_ops";
  r.source = "examples/fused_ops";
  r.targets = {"sm_75", "sm_80"};
  r.duration_s = 95.2;
  r.jobs = 2;
  r.cache_tool = tailor::cache::CacheTool::sccache;
  r.cache_storage = "local";
  r.cache_hits = 6;
  r.cache_misses = 2;
  r.cache_categories = {{"CUDA (nvcc)", {4, 1}}, {"C/C++", {2, 1}}};
  tailor::governor::GovernorReport g;
  g.mode = "governor";
  g.reason = "ninja 1.13.1 is a jobserver client";
  g.peak_build_rss = 1500ull << 20;
  for (int i = 0; i < 20; ++i)
    g.series.push_back({i * 0.5, 2, size_t(i % 3), 0, 9000, uint64_t(200 + i * 50)});
  g.job_peaks = {{"nvcc", 900ull << 20}};
  r.governor = g;
  r.job_timeline = {{"temp/a.o", 0, 40000, "cu"},
                    {"temp/b.o", 100, 12000, "cpp"},
                    {"temp/c.o", 12000, 30000, "cu"},
                    {"lib/_C.so", 40000, 42000, "link"}};
  r.wheel = "fused_ops-0.1.0-cp311-cp311-linux_x86_64.whl";
  r.size = 2977516;
  r.bytes_per_target = {{"sm_75", 123456}, {"compute_80", 4567}};
  r.checks = {{"targets", CheckStatus::passed, "exactly sm_75 sm_80"},
              {"gpu-smoke", CheckStatus::skipped, "no GPU"}};
  r.ok = true;
  return r;
}

size_t occurrences_in_page(const std::string& s, std::string_view needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(ReportPage, DrawsEverySectionOfAFullReport) {
  std::string page = render_report_html(to_json(page_report()));
  EXPECT_NE(page.find("<title>tailor build report: fused_ops-0.1.0"), std::string::npos);
  EXPECT_NE(page.find("class=\"timeline\""), std::string::npos);
  EXPECT_NE(page.find("4 jobs over 42.0 s, up to 2 at once"), std::string::npos)
      << "b runs beside a";
  EXPECT_NE(page.find("The slowest translation units"), std::string::npos);
  // Link steps are not translation units: three rows, a first.
  auto table = page.substr(page.find("The slowest translation units"));
  table = table.substr(0, table.find("</table>"));
  EXPECT_EQ(occurrences_in_page(table, "<tr><td class=\"num\">"), 3u) << table;
  EXPECT_LT(table.find("temp/a.o"), table.find("temp/c.o"));
  EXPECT_EQ(table.find("lib/_C.so"), std::string::npos);
  EXPECT_EQ(occurrences_in_page(page, "<polyline"), 5u)
      << "RSS, available, tokens, running, stopped";
  EXPECT_NE(page.find("peak build RSS 1500 MiB"), std::string::npos);
  EXPECT_NE(page.find("CUDA (nvcc)"), std::string::npos);
  EXPECT_NE(page.find("75% hits"), std::string::npos);
  EXPECT_NE(page.find("exactly sm_75 sm_80"), std::string::npos);
  EXPECT_NE(page.find("b-skip"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  // Device code per target: a bar per target, SASS blue and PTX orange, with its size.
  ASSERT_NE(page.find("Device code per target in the wheel"), std::string::npos);
  const std::string bars = page.substr(page.find("Device code per target in the wheel"));
  EXPECT_NE(bars.find("fill=\"#2f6fdf\"><title>sm_75: 120.6 KiB</title>"), std::string::npos)
      << bars;
  EXPECT_NE(bars.find("fill=\"#e8590c\"><title>compute_80: 4.5 KiB</title>"), std::string::npos)
      << bars;
  EXPECT_EQ(bars.find("fill=\"#e8590c\"><title>sm_75"), std::string::npos)
      << "SASS is not drawn as PTX";
}

TEST(ReportPage, MissingSectionsAreNotesNotErrors) {
  for (const json& j : {json::object(), json{{"run", 5}},
                        json{{"run", {{"cache", "x"}, {"memory", json::array()}}}},
                        json{{"checks", "none"}, {"wheel", 3}}}) {
    std::string page = render_report_html(j);
    EXPECT_NE(page.find("No job timeline in this report"), std::string::npos) << j.dump();
    EXPECT_NE(page.find("No memory record"), std::string::npos) << j.dump();
    EXPECT_NE(page.find("No compiler cache"), std::string::npos) << j.dump();
    EXPECT_NE(page.find("No checks in this report"), std::string::npos) << j.dump();
  }
  BuildReport r = page_report();
  r.governor->mode = "static";
  r.governor->reason = "--jobs 4 asked for";
  EXPECT_NE(
      render_report_html(to_json(r)).find("Static job count, no memory curve: --jobs 4 asked for"),
      std::string::npos);
}

TEST(ReportPage, HostileValuesAreEscapedAndWrongTypesSkipped) {
  json j = to_json(page_report());
  j["run"]["job_timeline"].push_back({{"output", "<script>alert(1)</script>"},
                                      {"start_ms", 0},
                                      {"end_ms", 50000},
                                      {"kind", "<b>"}});
  j["run"]["job_timeline"].push_back({{"output", "neg"}, {"start_ms", -5}, {"end_ms", 1}});
  j["run"]["job_timeline"].push_back({{"output", "backwards"}, {"start_ms", 10}, {"end_ms", 1}});
  j["run"]["job_timeline"].push_back({{"output", 7}, {"start_ms", "x"}});
  j["run"]["job_timeline"].push_back("not an object");
  j["run"]["cache"]["categories"]["<img src=x>"] = {{"hits", "many"}};
  j["checks"].push_back(
      {{"name", "<iframe>"}, {"status", "\"><script>"}, {"detail", std::string("bad \xff byte")}});
  j["run"]["memory"]["series"].push_back({"t", 1, 2});
  j["run"]["memory"]["series_fields"] = {"t", 3, "build_rss_mib"};
  std::string page;
  ASSERT_NO_THROW(page = render_report_html(j));
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<iframe"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("bad \\xff byte"), std::string::npos);
  EXPECT_NE(page.find("5 jobs over 50.0 s"), std::string::npos)
      << "the three broken entries are skipped";
}

TEST(ReportPage, ReadsTheTorchBuildReport) {
  json j = {{"wheel", "torch-2.11.0+sm90-cp311-cp311-linux_x86_64.whl"},
            {"targets_verified", {"sm_90"}},
            {"bytes_per_target", {{"sm_90", 900000000}}},
            {"gpu_smoke_test", "skipped (no GPU)"},
            {"duration_s", 5400.0},
            {"wheel_bytes", 1200000000},
            {"run",
             {{"job_timeline",
               {{{"output", "a.o"}, {"start_ms", 0}, {"end_ms", 1000}, {"kind", "cpp"}}}}}}};
  std::string page = render_report_html(j);
  EXPECT_NE(page.find("tailor build report: torch-2.11.0+sm90"), std::string::npos);
  EXPECT_NE(page.find("1 h 30 min"), std::string::npos);
  EXPECT_NE(page.find("exactly sm_90"), std::string::npos);
  EXPECT_NE(page.find("858.3 MiB"), std::string::npos);
  EXPECT_NE(page.find("1 job over 1.0 s"), std::string::npos);
}

TEST(ReportPage, SaysWhereTheCompilersSawTheWorkFolder) {
  BuildReport r = page_report();
  r.work_path = "/tmp/.tailor-build/fused_ops";
  r.work_path_route = "namespace";
  std::string page = render_report_html(to_json(r));
  EXPECT_NE(
      page.find("<p>Work path <code>/tmp/.tailor-build/fused_ops</code> · namespace route</p>"),
      std::string::npos);
  r.work_path = "/home/u/w/fused_ops-1a2b";
  r.work_path_route = "none";
  r.work_path_note = "no fixed work path (<why>): ...; fix: ...";
  page = render_report_html(to_json(r));
  EXPECT_NE(
      page.find("<p class=\"note\">Warning: no fixed work path (&lt;why&gt;): ...; fix: ...</p>"),
      std::string::npos);
}
