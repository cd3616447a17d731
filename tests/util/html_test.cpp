#include "util/html.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tailor::html;

namespace {
size_t occurrences_in_svg(const std::string& s, std::string_view needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(HtmlEscape, MarkupFromTheInputBecomesText) {
  EXPECT_EQ(escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(escape("a&b \"q\" 'x'"), "a&amp;b &quot;q&quot; &#39;x&#39;");
  EXPECT_EQ(escape("plain/lib_x.so"), "plain/lib_x.so");
}

TEST(HtmlEscape, InvalidUtf8AndControlsBecomeVisibleBytes) {
  EXPECT_EQ(escape(std::string("a\xff"
                               "b")),
            "a\\xffb");
  EXPECT_EQ(escape(std::string("a\x1b[31mb", 7)), "a\\x1b[31mb");
  EXPECT_EQ(escape(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(escape("tab\tand\nline"), "tab\tand\nline");
  EXPECT_EQ(escape("\u00e9t\u00e9"), "\u00e9t\u00e9") << "valid UTF-8 stays";
}

TEST(HtmlShorten, CutsInTheMiddleOnCodePointBoundaries) {
  EXPECT_EQ(shorten("short", 10), "short");
  std::string s = shorten("abcdefghijklmnopqrstuvwxyz", 10);
  EXPECT_EQ(s, "abc\u2026uvwxyz");
  // Multi-byte characters are never split.
  std::string greek = "\u03b1\u03b2\u03b3\u03b4\u03b5\u03b6\u03b7\u03b8\u03b9\u03ba\u03bb\u03bc";
  std::string cut = shorten(greek, 7);
  EXPECT_EQ(cut, "\u03b1\u03b2\u2026\u03b9\u03ba\u03bb\u03bc");
}

TEST(HtmlTicks, RoundStepsCoverTheMaximum) {
  auto t = ticks(93.0, 6);
  ASSERT_GE(t.size(), 2u);
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 93.0);
  EXPECT_DOUBLE_EQ(t[1], 20.0);
  EXPECT_EQ(ticks(0).size(), 2u);
  EXPECT_EQ(ticks(std::numeric_limits<double>::quiet_NaN()).size(), 2u);
  EXPECT_LE(ticks(1e300).size(), 20u);
}

TEST(HtmlLanes, ParallelIntervalsGetTheirOwnLanesAndFreedLanesAreReused) {
  // a [0,10) b [2,5) c [5,8) d [6,12) e [10,11)
  auto lanes = pack_lanes({{0, 10}, {2, 5}, {5, 8}, {6, 12}, {10, 11}});
  ASSERT_EQ(lanes.size(), 5u);
  EXPECT_EQ(lanes[0], 0u);
  EXPECT_EQ(lanes[1], 1u);
  EXPECT_EQ(lanes[2], 1u) << "c starts when b ends: same lane";
  EXPECT_EQ(lanes[3], 2u);
  EXPECT_EQ(lanes[4], 0u) << "a's lane is free again at 10, and it is the lowest";
}

TEST(HtmlLanes, LaneCountIsTheLargestOverlap) {
  std::vector<Interval> iv;
  for (int i = 0; i < 100; ++i) iv.push_back({double(i % 10), double(i % 10) + 3.5});
  auto lanes = pack_lanes(iv);
  size_t max_lane = 0;
  for (auto l : lanes) max_lane = std::max(max_lane, l);
  // At t=3: starts 0..3 overlap, ten intervals each -> 40 at once.
  EXPECT_EQ(max_lane + 1, 40u);
  // No two intervals in one lane overlap.
  for (size_t a = 0; a < iv.size(); ++a)
    for (size_t b = a + 1; b < iv.size(); ++b)
      if (lanes[a] == lanes[b]) {
        EXPECT_TRUE(iv[a].end <= iv[b].start || iv[b].end <= iv[a].start) << a << " " << b;
      }
}

TEST(HtmlLanes, BrokenIntervalsDoNotBreakThePacking) {
  double nan = std::numeric_limits<double>::quiet_NaN(),
         inf = std::numeric_limits<double>::infinity();
  auto lanes = pack_lanes({{nan, 5}, {3, 1}, {0, inf}, {-4, -2}});
  EXPECT_EQ(lanes.size(), 4u);
  EXPECT_TRUE(pack_lanes({}).empty());
}

TEST(HtmlCharts, BarsEscapeLabelsAndTooltipsAndScaleSegments) {
  BarRow row{
      "<script>alert(1)</script>", "1 KiB", {{300, "#123456", "<b>x</b>"}, {100, "#654321", "y"}}};
  std::string svg = stacked_bars({row});
  EXPECT_EQ(svg.find("<script"), std::string::npos) << svg;
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(occurrences_in_svg(svg, "fill=\"#123456\""), 1u);
  EXPECT_EQ(occurrences_in_svg(svg, "fill=\"#654321\""), 1u);
  // Widths: 1100 - 330 - 110 - 8 = 652 px for 400 units: 489 and 163.
  EXPECT_NE(svg.find("width=\"489.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("width=\"163.0\""), std::string::npos) << svg;
}

TEST(HtmlCharts, LineChartDrawsOnePolylinePerSeriesWithinTheFrame) {
  LineSeries a{"rss", "#d9480f", {{0, 100}, {5, 900}, {10, 400}}, false};
  LineSeries b{"jobs", "#2f6fdf", {{0, 1}, {5, 2}}, true};
  std::string svg = line_chart({a, b});
  EXPECT_EQ(occurrences_in_svg(svg, "<polyline"), 2u);
  EXPECT_NE(svg.find(">seconds<"), std::string::npos) << "x axis label";
  // The step series has a corner point per change: 3 points for 2 samples.
  auto at = svg.find("stroke=\"#2f6fdf\"");
  ASSERT_NE(at, std::string::npos);
  auto pts = svg.substr(svg.find("points=\"", at),
                        svg.find("\"", svg.find("points=\"", at) + 8) - svg.find("points=\"", at));
  EXPECT_EQ(occurrences_in_svg(pts, ","), 3u) << pts;
}

TEST(HtmlCharts, TimelineHasARectanglePerBarAndAnAxisInSeconds) {
  std::vector<TimelineBar> bars;
  for (int i = 0; i < 30; ++i)
    bars.push_back({double(i), double(i) + 2.5, size_t(i % 3), "#4c9a2a", "job"});
  std::string svg = timeline(bars);
  EXPECT_EQ(occurrences_in_svg(svg, "fill=\"#4c9a2a\""), 30u);
  EXPECT_NE(svg.find(">seconds<"), std::string::npos);
  EXPECT_NE(svg.find(">30<"), std::string::npos) << "ticks reach the last job's end";
}

TEST(HtmlPage, ForbidsScriptsAndFetchesAndEscapesTheTitle) {
  std::string p = page("<x>", "<p>body</p>");
  EXPECT_NE(p.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(p.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(p.find("<script"), std::string::npos);
  EXPECT_EQ(p.find(" src="), std::string::npos) << "nothing loaded";
  EXPECT_EQ(p.find(" href="), std::string::npos) << "nothing linked";
  EXPECT_NE(p.find("<title>&lt;x&gt;</title>"), std::string::npos);
  EXPECT_NE(p.find("<p>body</p>"), std::string::npos);
}

TEST(HtmlSeconds, ReadableDurations) {
  EXPECT_EQ(seconds_text(0.25), "250 ms");
  EXPECT_EQ(seconds_text(12.34), "12.3 s");
  EXPECT_EQ(seconds_text(125), "2 min 05 s");
  EXPECT_EQ(seconds_text(-5), "0 ms");
}

TEST(HtmlCharts, CountsGetWholeNumberTicks) {
  LineSeries jobs{"jobs", "#2f6fdf", {{0, 1}, {50, 2}}, true};  // x ticks 0, 5, 10 ...: whole too
  LineChartOptions o;
  o.integer_y = true;
  std::string svg = line_chart({jobs}, o);
  EXPECT_EQ(svg.find(">0.5<"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(">1.5<"), std::string::npos);
  EXPECT_NE(svg.find(">2<"), std::string::npos);
  EXPECT_NE(line_chart({jobs}).find(">0.5<"), std::string::npos)
      << "without the option the ticks are finer";
}
