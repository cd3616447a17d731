// Self-contained HTML pages (one file: inline CSS and SVG, no scripts, nothing fetched)
// for people who would rather look than read: `tailor inspect --html` and the build
// report page. Only generic pieces live here: escaping, the page skeleton, horizontal
// stacked bars, line charts, interval timelines and the lane packing behind them, axis
// ticks. What a chart shows is decided by its caller (inspect, build).
//
// Every string that reaches a page goes through escape() (text and attribute values
// alike): input-derived names such as `<script>` become text. The page also carries a
// Content-Security-Policy that forbids scripts and every fetch, so a missed escape still
// cannot run code or reach the network.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tailor::html {

/// `s` as HTML text or a quoted attribute value: & < > " ' become entities; invalid UTF-8
/// and C0 controls other than TAB/LF/CR become the text `\xNN`.
std::string escape(std::string_view s);

/// At most `max_chars` code points of valid UTF-8 `s`, the middle replaced by "…" when
/// cut (paths keep their start and their file name). Not escaped.
std::string shorten(std::string_view s, size_t max_chars);

/// "12.3 s", "850 ms", "2 min 05 s".
std::string seconds_text(double seconds);

/// A whole page: <!doctype html>, charset, the CSP, the shared stylesheet plus `css`,
/// `title` (escaped here) as <title> and <h1>, then `body` (already HTML).
std::string page(std::string_view title, std::string_view body, std::string_view css = {});

/// Round axis ticks from 0 to at least `max`: about `count` steps of 1, 2 or 5 x 10^k.
std::vector<double> ticks(double max, int count = 6);

// ---- horizontal stacked bars -------------------------------------------------------------

struct BarSegment {
  double value = 0;
  std::string color;    ///< a CSS colour, from the caller's palette (not from input)
  std::string tooltip;  ///< plain text, escaped here
};

struct BarRow {
  std::string label;  ///< plain text, shortened and escaped here
  std::string note;   ///< right of the bar ("12.4 MiB"), plain text
  std::vector<BarSegment> segments;
};

struct BarChartOptions {
  int width = 1100;       ///< whole SVG
  int label_width = 330;  ///< left column for labels
  int note_width = 110;   ///< right column for notes
  int row_height = 22;
  size_t label_chars =
      48;  ///< longer labels are shortened in the middle (the tooltip keeps them whole)
  double scale_max = 0;  ///< 0: the largest row total
};

/// One SVG: a row per BarRow, segments left to right, widths proportional to value.
std::string stacked_bars(const std::vector<BarRow>& rows, const BarChartOptions& options = {});

struct LegendItem {
  std::string label;  ///< plain text
  std::string color;
  std::string shape = "box";  ///< "box" or "line"
};
/// An HTML list of coloured swatches with labels.
std::string legend(const std::vector<LegendItem>& items);

// ---- line charts -------------------------------------------------------------------------

struct Point {
  double x = 0, y = 0;
};
struct LineSeries {
  std::string name;  ///< plain text, for the tooltip
  std::string color;
  std::vector<Point> points;  ///< x ascending
  bool step = false;          ///< a staircase (counts) instead of straight segments
};
struct LineChartOptions {
  int width = 1100, height = 260;
  std::string x_label = "seconds", y_label;
  double x_max = 0, y_max = 0;  ///< 0: from the data
  bool integer_y = false;       ///< counts: y ticks at whole numbers only
};
/// One SVG with axes, ticks, grid lines and a polyline per series.
std::string line_chart(const std::vector<LineSeries>& series, const LineChartOptions& options = {});

// ---- timelines of intervals --------------------------------------------------------------

struct Interval {
  double start = 0, end = 0;
};

/// Greedy lane packing: intervals in order of start (then end, then index), each into the
/// lowest-numbered lane whose last interval ended at or before its start, else a new lane.
/// Returns the lane of each interval (in input order); the lane count is max + 1, which is
/// the largest number of intervals overlapping at one instant.
std::vector<size_t> pack_lanes(const std::vector<Interval>& intervals);

struct TimelineBar {
  double start = 0, end = 0;  ///< seconds
  size_t lane = 0;
  std::string color;
  std::string tooltip;  ///< plain text
};
struct TimelineOptions {
  int width = 1100;
  int lane_height = 12;  ///< up to twice this for few lanes, down to 2 px for many
  int max_height = 600;
  std::string x_label = "seconds";
};
/// One SVG: a horizontal band per lane, a rectangle per bar, an axis in seconds.
std::string timeline(const std::vector<TimelineBar>& bars, const TimelineOptions& options = {});

}  // namespace tailor::html
