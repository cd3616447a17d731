#include "util/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <set>

#include "util/text_escape.h"

namespace tailor::html {

namespace {

// The shared stylesheet: system fonts only (nothing fetched), light background, charts
// that stay readable when printed.
constexpr std::string_view k_css = R"(
:root { --fg:#1d2330; --muted:#5b6475; --line:#d8dde6; --bg:#ffffff; --panel:#f6f8fb; --ok:#1a7f37; --bad:#c62828; --warn:#a15c00; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 18px 0 6px; }
p.sub, .muted { color: var(--muted); }
p.sub { margin: 0 0 16px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12.5px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 150px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 6px 0 10px; padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: 6px; font-size: 12.5px; }
.legend .sw { width: 14px; height: 14px; border-radius: 3px; display: inline-block; }
.legend .ln { width: 18px; height: 3px; display: inline-block; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; }
.b-ok { background: var(--ok); } .b-bad { background: var(--bad); } .b-warn { background: var(--warn); } .b-skip { background: #7a8394; }
.note { color: var(--muted); font-style: italic; margin: 4px 0; }
svg { display: block; max-width: 100%; height: auto; }
svg text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; fill: var(--fg); }
svg .axis text { fill: var(--muted); font-size: 11px; }
svg .grid { stroke: #e6e9ef; stroke-width: 1; }
svg .track { fill: #f1f3f7; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
)";

std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  return fmt::format("{:.1f}", v);
}

// A finite, non-negative value (hostile or broken input must not reach the arithmetic).
double clean(double v) { return std::isfinite(v) && v > 0 ? v : 0.0; }

std::string tick_label(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

}  // namespace

std::string escape(std::string_view s) {
  const std::string valid = is_valid_utf8(s) ? std::string(s) : escape_invalid_utf8(s);
  std::string out;
  out.reserve(valid.size() + valid.size() / 8);
  for (char c : valid) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') ||
            c == 0x7f)
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else
          out += c;
    }
  }
  return out;
}

std::string shorten(std::string_view s, size_t max_chars) {
  // Code point starts (bytes that are not continuation bytes).
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  if (starts.size() <= max_chars || max_chars < 3) return std::string(s);
  size_t keep = max_chars - 1;
  size_t head = keep / 3, tail = keep - head;
  return std::string(s.substr(0, starts[head])) + "\u2026" +
         std::string(s.substr(starts[starts.size() - tail]));
}

std::string seconds_text(double seconds) {
  seconds = clean(seconds);
  if (seconds < 1) return fmt::format("{:.0f} ms", seconds * 1000);
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  auto whole = static_cast<uint64_t>(std::llround(seconds));
  if (whole < 3600) return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} min", whole / 3600, (whole % 3600) / 60);
}

std::string page(std::string_view title, std::string_view body, std::string_view css) {
  std::string out;
  out.reserve(body.size() + k_css.size() + 1024);
  out += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // No scripts, no fetches: a name that escaped escaping still cannot act.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'; "
      "img-src data:\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + escape(title) + "</title>\n<style>";
  out += k_css;
  out += css;
  out += "</style>\n</head>\n<body>\n<h1>" + escape(title) + "</h1>\n";
  out += body;
  out += "\n</body>\n</html>\n";
  return out;
}

std::vector<double> ticks(double max, int count) {
  max = clean(max);
  count = std::max(count, 1);
  if (max <= 0) return {0, 1};
  double raw = max / count;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (int i = 0; i <= count * 3 && (out.empty() || out.back() < max); ++i) out.push_back(step * i);
  return out;
}

std::string stacked_bars(const std::vector<BarRow>& rows, const BarChartOptions& o) {
  double scale = clean(o.scale_max);
  if (scale <= 0)
    for (const auto& r : rows) {
      double total = 0;
      for (const auto& s : r.segments) total += clean(s.value);
      scale = std::max(scale, total);
    }
  const double x0 = o.label_width, bar_w = std::max(10, o.width - o.label_width - o.note_width - 8);
  const int h = static_cast<int>(rows.size()) * o.row_height + 4;
  std::string out = fmt::format(
      "<svg class=\"bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\">\n",
      o.width, h, o.width, h);
  for (size_t i = 0; i < rows.size(); ++i) {
    const BarRow& r = rows[i];
    const double y = 2 + static_cast<double>(i) * o.row_height;
    const double bh = o.row_height - 6;
    out += fmt::format("<g><title>{}</title>", escape(r.label));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", num(x0 - 8),
                       num(y + bh / 2 + 4), escape(shorten(r.label, o.label_chars)));
    out +=
        fmt::format("<rect class=\"track\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\"/>",
                    num(x0), num(y), num(bar_w), num(bh));
    out += "</g>";
    double x = x0;
    for (const auto& s : r.segments) {
      double w = scale > 0 ? clean(s.value) / scale * bar_w : 0;
      if (w <= 0) continue;
      w = std::max(w, 1.0);  // a non-zero share stays visible
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
          num(x), num(y), num(w), num(bh), escape(s.color), escape(s.tooltip));
      x += w;
    }
    if (!r.note.empty())
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", num(x0 + bar_w + 8),
                         num(y + bh / 2 + 4), escape(r.note));
    out += "\n";
  }
  out += "</svg>\n";
  return out;
}

std::string legend(const std::vector<LegendItem>& items) {
  std::string out = "<ul class=\"legend\">";
  for (const auto& i : items)
    out += fmt::format("<li><span class=\"{}\" style=\"background:{}\"></span>{}</li>",
                       i.shape == "line" ? "ln" : "sw", escape(i.color), escape(i.label));
  return out + "</ul>\n";
}

namespace {

struct Frame {
  double left = 64, right = 16, top = 10, bottom = 40;
  double w = 0, h = 0;  // plot area
};

// Axes, grid and tick labels for x in [0, xmax] and y in [0, ymax].
std::string axes(const Frame& f, const std::vector<double>& xt, const std::vector<double>& yt,
                 double xmax, double ymax, const std::string& x_label, const std::string& y_label) {
  std::string out = "<g class=\"axis\">";
  for (double v : yt) {
    double y = f.top + f.h - (ymax > 0 ? v / ymax * f.h : 0);
    out += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                       num(f.left), num(y), num(f.left + f.w), num(y));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", num(f.left - 6),
                       num(y + 4), tick_label(v));
  }
  for (double v : xt) {
    double x = f.left + (xmax > 0 ? v / xmax * f.w : 0);
    out += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", num(x),
                       num(f.top), num(x), num(f.top + f.h));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", num(x),
                       num(f.top + f.h + 16), tick_label(v));
  }
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#8a93a3\"/>",
                     num(f.left), num(f.top + f.h), num(f.left + f.w));
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#8a93a3\"/>",
                     num(f.left), num(f.top), num(f.top + f.h));
  if (!x_label.empty())
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                       num(f.left + f.w / 2), num(f.top + f.h + 34), escape(x_label));
  if (!y_label.empty())
    out += fmt::format(
        "<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
        "{0})\">{1}</text>",
        num(f.top + f.h / 2), escape(y_label));
  return out + "</g>\n";
}

}  // namespace

std::string line_chart(const std::vector<LineSeries>& series, const LineChartOptions& o) {
  double xmax = clean(o.x_max), ymax = clean(o.y_max);
  for (const auto& s : series)
    for (const auto& p : s.points) {
      if (o.x_max <= 0) xmax = std::max(xmax, clean(p.x));
      if (o.y_max <= 0) ymax = std::max(ymax, clean(p.y));
    }
  auto xt = ticks(xmax, 10), yt = ticks(ymax, 5);
  if (o.integer_y && yt.size() > 1 && yt[1] < 1) {
    yt.clear();
    for (double v = 0; v < ymax + 1; v += 1) yt.push_back(v);
  }
  xmax = std::max(xmax, xt.back());
  ymax = std::max(ymax, yt.back());
  Frame f;
  f.left = o.y_label.empty() ? 56 : 72;
  f.w = o.width - f.left - f.right;
  f.h = o.height - f.top - f.bottom;
  std::string out = fmt::format(
      "<svg class=\"line\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\">\n",
      o.width, o.height);
  out += axes(f, xt, yt, xmax, ymax, o.x_label, o.y_label);
  auto px = [&](double x) { return f.left + (xmax > 0 ? clean(x) / xmax * f.w : 0); };
  auto py = [&](double y) {
    return f.top + f.h - (ymax > 0 ? std::min(clean(y), ymax) / ymax * f.h : 0);
  };
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    std::string pts;
    for (size_t i = 0; i < s.points.size(); ++i) {
      const Point& p = s.points[i];
      if (s.step && i > 0) pts += num(px(p.x)) + "," + num(py(s.points[i - 1].y)) + " ";
      pts += num(px(p.x)) + "," + num(py(p.y)) + " ";
    }
    out += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-linejoin=\"round\" "
        "points=\"{}\">"
        "<title>{}</title></polyline>\n",
        escape(s.color), pts, escape(s.name));
  }
  return out + "</svg>\n";
}

std::vector<size_t> pack_lanes(const std::vector<Interval>& intervals) {
  std::vector<Interval> iv(intervals);
  for (auto& i : iv) {
    i.start = std::isfinite(i.start) ? i.start : 0;
    i.end = std::isfinite(i.end) ? std::max(i.end, i.start) : i.start;
  }
  std::vector<size_t> order(iv.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (iv[a].start != iv[b].start) return iv[a].start < iv[b].start;
    if (iv[a].end != iv[b].end) return iv[a].end < iv[b].end;
    return a < b;
  });
  using Busy = std::pair<double, size_t>;  // (end, lane)
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  std::set<size_t> free_lanes;
  size_t lanes = 0;
  std::vector<size_t> lane_of(iv.size(), 0);
  for (size_t idx : order) {
    while (!busy.empty() && busy.top().first <= iv[idx].start) {
      free_lanes.insert(busy.top().second);
      busy.pop();
    }
    size_t lane;
    if (free_lanes.empty()) {
      lane = lanes++;
    } else {
      lane = *free_lanes.begin();
      free_lanes.erase(free_lanes.begin());
    }
    lane_of[idx] = lane;
    busy.push({iv[idx].end, lane});
  }
  return lane_of;
}

std::string timeline(const std::vector<TimelineBar>& bars, const TimelineOptions& o) {
  double xmax = 0;
  size_t lanes = 0;
  for (const auto& b : bars) {
    xmax = std::max(xmax, clean(b.end));
    lanes = std::max(lanes, b.lane + 1);
  }
  auto xt = ticks(xmax, 12);
  xmax = std::max(xmax, xt.back());
  // Few lanes get tall bands (up to 2 x lane_height), many get thin ones (down to 2 px).
  int lane_h = lanes ? std::clamp(static_cast<int>(o.max_height / static_cast<double>(lanes)), 2,
                                  2 * o.lane_height)
                     : o.lane_height;
  Frame f;
  f.left = 56;
  f.w = o.width - f.left - f.right;
  f.h = std::max<double>(static_cast<double>(lanes) * lane_h, 20);
  const int height = static_cast<int>(f.h + f.top + f.bottom);
  std::string out = fmt::format(
      "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">\n",
      o.width, height);
  // Lane bands alternate so that parallel jobs read as rows.
  for (size_t l = 0; l < lanes; l += 2)
    out += fmt::format("<rect class=\"track\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                       num(f.left), num(f.top + static_cast<double>(l) * lane_h), num(f.w), lane_h);
  out += axes(f, xt, {}, xmax, 0, o.x_label, "");
  const double gap = lane_h >= 6 ? 1 : 0;
  for (const auto& b : bars) {
    double x = f.left + (xmax > 0 ? clean(b.start) / xmax * f.w : 0);
    double w = xmax > 0 ? std::max(clean(b.end) - clean(b.start), 0.0) / xmax * f.w : 0;
    // A white edge keeps back-to-back jobs of one kind apart.
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#fff\" "
        "stroke-width=\"{}\" rx=\"1\"><title>{}</title></rect>\n",
        num(x), num(f.top + static_cast<double>(b.lane) * lane_h + gap), num(std::max(w, 1.0)),
        num(lane_h - 2 * gap), escape(b.color), lane_h >= 6 ? "0.8" : "0", escape(b.tooltip));
  }
  return out + "</svg>\n";
}

}  // namespace tailor::html
