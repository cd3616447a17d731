#include "outputs/report_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "util/html.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::outputs {

namespace {

using html::escape;
using nlohmann::json;

constexpr size_t k_max_jobs = 20000;   // bars on the timeline
constexpr size_t k_max_points = 5000;  // points per memory series
constexpr size_t k_max_rows = 200;     // table rows (checks, categories, targets)

// ---- defensive reading: a report from a file may have any shape --------------------------

const json* get(const json* j, std::string_view key) {
  if (!j || !j->is_object()) return nullptr;
  auto it = j->find(key);
  return it == j->end() ? nullptr : &*it;
}
const json* path(const json& root, std::initializer_list<std::string_view> keys) {
  const json* j = &root;
  for (auto k : keys) j = get(j, k);
  return j;
}
std::string str(const json* j) {
  if (!j) return {};
  if (j->is_string()) return j->get<std::string>();
  if (j->is_number() || j->is_boolean()) return j->dump();
  return {};
}
std::optional<double> number(const json* j) {
  if (!j || !j->is_number()) return std::nullopt;
  double v = j->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// Colours per job kind and per check status (styling, not facts).
struct KindStyle {
  const char* kind;
  const char* label;
  const char* color;
};
constexpr KindStyle k_kinds[] = {
    {"cu", "CUDA (.cu)", "#4c9a2a"}, {"cpp", "C++ (.cpp)", "#2f6fdf"}, {"c", "C (.c)", "#17a2b8"},
    {"link", "link", "#9b59b6"},     {"other", "other", "#9aa3b2"},
};
const KindStyle& kind_style(std::string_view kind) {
  for (const auto& k : k_kinds)
    if (kind == k.kind) return k;
  return k_kinds[std::size(k_kinds) - 1];
}

std::string badge(std::string_view status) {
  std::string cls = status == "passed" || status == "ok" ? "b-ok"
                    : status == "failed"                 ? "b-bad"
                    : status == "skipped"                ? "b-skip"
                                                         : "b-warn";
  return fmt::format("<span class=\"badge {}\">{}</span>", cls, escape(status));
}

std::string card(std::string_view value, std::string_view key) {
  return fmt::format("<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>",
                     escape(value), escape(key));
}

std::string note(std::string_view text) {
  return fmt::format("<p class=\"note\">{}</p>\n", escape(text));
}

struct Job {
  std::string output, kind;
  double start = 0, end = 0;  // seconds
};

std::vector<Job> read_jobs(const json& report, uint64_t& dropped) {
  std::vector<Job> jobs;
  const json* a = path(report, {"run", "job_timeline"});
  if (!a || !a->is_array()) {
    const json* alt = path(report, {"run", "jobs"});  // the shape a hand-made report may use
    a = alt && alt->is_array() ? alt : nullptr;
  }
  if (!a) return jobs;
  if (auto d = number(path(report, {"run", "job_timeline_dropped"})))
    dropped = static_cast<uint64_t>(std::max(0.0, *d));
  for (const auto& e : *a) {
    if (jobs.size() >= k_max_jobs) {
      ++dropped;
      continue;
    }
    auto s = number(get(&e, "start_ms")), en = number(get(&e, "end_ms"));
    if (!s || !en || *s < 0 || *en < *s) continue;
    Job j;
    j.output = str(get(&e, "output"));
    j.kind = str(get(&e, "kind"));
    if (j.kind.empty()) j.kind = "other";
    j.start = *s / 1000.0;
    j.end = *en / 1000.0;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

bool is_translation_unit(std::string_view kind) {
  return kind == "cu" || kind == "cpp" || kind == "c";
}

void jobs_section(std::string& out, const std::vector<Job>& jobs, uint64_t dropped) {
  out += "<h2>Compile jobs</h2>\n";
  if (jobs.empty()) {
    out += note(
        "No job timeline in this report (it comes from the build folder's .ninja_log; builds "
        "without Ninja, "
        "and reports of older tailor versions, have none).");
    return;
  }
  std::vector<html::Interval> iv;
  for (const auto& j : jobs) iv.push_back({j.start, j.end});
  auto lanes = html::pack_lanes(iv);
  size_t lane_count = 0;
  double span = 0, busy = 0;
  std::map<std::string, std::pair<size_t, double>> per_kind;  // count, seconds
  std::vector<html::TimelineBar> bars;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    lane_count = std::max(lane_count, lanes[i] + 1);
    span = std::max(span, j.end);
    busy += j.end - j.start;
    auto& k = per_kind[kind_style(j.kind).kind];
    ++k.first;
    k.second += j.end - j.start;
    bars.push_back({j.start, j.end, lanes[i], kind_style(j.kind).color,
                    fmt::format("{} ({}): {} → {}, {}", j.output, kind_style(j.kind).label,
                                html::seconds_text(j.start), html::seconds_text(j.end),
                                html::seconds_text(j.end - j.start))});
  }
  out += fmt::format(
      "<p class=\"sub\">{} job{} over {}, up to {} at once (average {:.1f}); each row is a lane, "
      "jobs packed into the first free lane. Hover a bar for its output.</p>\n",
      jobs.size(), jobs.size() == 1 ? "" : "s", html::seconds_text(span), lane_count,
      span > 0 ? busy / span : 0.0);
  std::vector<html::LegendItem> items;
  for (const auto& k : k_kinds)
    if (auto it = per_kind.find(k.kind); it != per_kind.end())
      items.push_back(
          {fmt::format("{}: {} job{}, {} total", k.label, it->second.first,
                       it->second.first == 1 ? "" : "s", html::seconds_text(it->second.second)),
           k.color});
  out += html::legend(items);
  html::TimelineOptions opt;
  opt.x_label = "seconds since the first job started";
  out += html::timeline(bars, opt);
  if (dropped)
    out += note(fmt::format("{} more jobs are not shown (the report keeps at most {}).", dropped,
                            k_max_jobs));

  // The slowest translation units.
  std::vector<size_t> order;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (is_translation_unit(jobs[i].kind)) order.push_back(i);
  bool only_tus = !order.empty();
  if (!only_tus)
    for (size_t i = 0; i < jobs.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[a].end - jobs[a].start > jobs[b].end - jobs[b].start;
  });
  if (order.size() > 10) order.resize(10);
  out += fmt::format("<h3>The slowest {}</h3>\n", only_tus ? "translation units" : "jobs");
  std::vector<html::BarRow> rows;
  double longest = 0;
  for (size_t i : order) longest = std::max(longest, jobs[i].end - jobs[i].start);
  out +=
      "<table><tr><th>#</th><th>output</th><th>kind</th><th class=\"num\">time</th><th "
      "class=\"num\">started "
      "at</th><th class=\"num\">share of the build</th></tr>\n";
  for (size_t r = 0; r < order.size(); ++r) {
    const Job& j = jobs[order[r]];
    double d = j.end - j.start;
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"mono\">{}</td><td><span class=\"badge\" "
        "style=\"background:{}\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{:.0f}%</td></tr>\n",
        r + 1, escape(html::shorten(j.output, 90)), kind_style(j.kind).color,
        escape(kind_style(j.kind).label), html::seconds_text(d), html::seconds_text(j.start),
        span > 0 ? 100.0 * d / span : 0.0);
  }
  out += "</table>\n";
}

void memory_section(std::string& out, const json& report) {
  out += "<h2>Memory</h2>\n";
  const json* mem = path(report, {"run", "memory"});
  if (!mem || !mem->is_object()) {
    out += note("No memory record in this report (the memory governor did not run).");
    return;
  }
  std::string mode = str(get(mem, "mode")), reason = str(get(mem, "reason"));
  if (mode != "governor") {
    out += note(
        fmt::format("Static job count, no memory curve{}.", reason.empty() ? "" : ": " + reason));
    return;
  }
  out += fmt::format("<p class=\"sub\">Memory governor: {}</p>\n", escape(reason));
  // Columns by name (series_fields), so a report that adds a field still draws.
  std::map<std::string, size_t> col = {{"t", 0},       {"tokens", 1},        {"running", 2},
                                       {"stopped", 3}, {"available_mib", 4}, {"build_rss_mib", 5}};
  if (const json* f = get(mem, "series_fields"); f && f->is_array()) {
    col.clear();
    for (size_t i = 0; i < f->size() && i < 64; ++i)
      if ((*f)[i].is_string()) col[(*f)[i].get<std::string>()] = i;
  }
  const json* series = get(mem, "series");
  auto field = [&](const json& row, const char* name) -> std::optional<double> {
    auto it = col.find(name);
    if (it == col.end() || !row.is_array() || it->second >= row.size()) return std::nullopt;
    return number(&row[it->second]);
  };
  html::LineSeries rss{"build RSS (MiB)", "#d9480f", {}, false},
      avail{"available memory (MiB)", "#2f6fdf", {}, false};
  html::LineSeries tokens{"jobs allowed (tokens + Ninja's own one)", "#4c9a2a", {}, true},
      running{"jobs running", "#2f6fdf", {}, true},
      stopped{"jobs stopped (brake)", "#c62828", {}, true};
  if (series && series->is_array())
    for (const auto& row : *series) {
      if (rss.points.size() >= k_max_points) break;
      auto t = field(row, "t");
      if (!t) continue;
      if (auto v = field(row, "build_rss_mib")) rss.points.push_back({*t, *v});
      if (auto v = field(row, "available_mib")) avail.points.push_back({*t, *v});
      if (auto v = field(row, "tokens"))
        tokens.points.push_back({*t, *v + 1});  // the client's implicit token
      if (auto v = field(row, "running")) running.points.push_back({*t, *v});
      if (auto v = field(row, "stopped")) stopped.points.push_back({*t, *v});
    }
  if (rss.points.empty() && avail.points.empty()) {
    out += note("The governor recorded no samples.");
    return;
  }
  std::vector<std::string> facts;
  if (auto v = number(get(mem, "peak_build_rss_mib")))
    facts.push_back(fmt::format("peak build RSS {:.0f} MiB", *v));
  if (auto v = number(get(mem, "reserve_mib")))
    facts.push_back(fmt::format("reserve {:.0f} MiB", *v));
  if (auto v = number(get(mem, "budget_mib")))
    facts.push_back(fmt::format("budget {:.0f} MiB", *v));
  if (auto v = number(get(mem, "max_running")))
    facts.push_back(fmt::format("up to {:.0f} jobs at once", *v));
  if (auto v = number(get(mem, "brake_count")))
    facts.push_back(fmt::format("{:.0f} brake events", *v));
  if (!facts.empty()) out += fmt::format("<p>{}</p>\n", escape(join(facts, " · ")));
  out += html::legend({{rss.name, rss.color, "line"}, {avail.name, avail.color, "line"}});
  html::LineChartOptions lo;
  lo.y_label = "MiB";
  lo.x_label = "seconds since the governor started";
  out += html::line_chart({avail, rss}, lo);
  out += html::legend({{tokens.name, tokens.color, "line"},
                       {running.name, running.color, "line"},
                       {stopped.name, stopped.color, "line"}});
  lo.y_label = "jobs";
  lo.height = 200;
  lo.integer_y = true;
  out += html::line_chart({tokens, running, stopped}, lo);
  if (const json* peaks = get(mem, "job_peaks_mib");
      peaks && peaks->is_object() && !peaks->empty()) {
    out +=
        "<h3>Learned peak per job kind</h3>\n<table><tr><th>job kind</th><th "
        "class=\"num\">peak</th></tr>\n";
    size_t n = 0;
    for (auto it = peaks->begin(); it != peaks->end() && n < k_max_rows; ++it, ++n)
      out += fmt::format("<tr><td>{}</td><td class=\"num\">{} MiB</td></tr>\n", escape(it.key()),
                         escape(str(&it.value())));
    out += "</table>\n";
  }
}

// The build's phases (run.phases) as one bar each; the build phase split into the
// compile span (run.compile_span_s) and the rest (pip or CMake, the link, the wheel).
void phases_section(std::string& out, const json& report) {
  const json* phases = path(report, {"run", "phases"});
  if (!phases || !phases->is_array() || phases->empty()) return;
  out += "<h2>Where the time went</h2>\n";
  auto span = number(path(report, {"run", "compile_span_s"}));
  std::vector<html::BarRow> rows;
  for (const auto& ph : *phases) {
    if (rows.size() >= k_max_rows) break;
    std::string name = str(get(&ph, "name"));
    double sec = std::clamp(number(get(&ph, "seconds")).value_or(0), 0.0, 1e9);
    if (name == "build" && span) {
      double c = std::clamp(*span, 0.0, sec);
      rows.push_back(
          {name,
           html::seconds_text(sec),
           {{c, "#1971c2", fmt::format("compiles: {}", html::seconds_text(c))},
            {sec - c, "#a5d8ff",
             fmt::format("the rest of the build step: {}", html::seconds_text(sec - c))}}});
    } else {
      rows.push_back({name,
                      html::seconds_text(sec),
                      {{sec, "#868e96", fmt::format("{}: {}", name, html::seconds_text(sec))}}});
    }
  }
  out += html::legend({{"compiles (Ninja jobs)", "#1971c2"},
                       {"rest of the build step", "#a5d8ff"},
                       {"other phases", "#868e96"}});
  html::BarChartOptions bo;
  bo.label_width = 200;
  out += html::stacked_bars(rows, bo);
}

void cache_section(std::string& out, const json& report) {
  out += "<h2>Compiler cache</h2>\n";
  // The cache keys carry the path the compilers saw: the fixed one (and its route), or the
  // work folder's own with the warning the build printed.
  if (std::string where = str(path(report, {"run", "work_path"})); !where.empty()) {
    std::string route = str(path(report, {"run", "work_path_route"}));
    std::string warning = str(path(report, {"run", "work_path_note"}));
    out += route == "none" && !warning.empty()
               ? note("Warning: " + warning)
               : fmt::format("<p>Work path <code>{}</code>{}</p>\n", escape(where),
                             route.empty() ? "" : " · " + escape(route) + " route");
  }
  const json* cache = path(report, {"run", "cache"});
  std::string tool = str(get(cache, "tool"));
  if (!cache || tool.empty() || tool == "none") {
    out += note("No compiler cache in this build.");
    return;
  }
  auto hits = number(get(cache, "hits")), misses = number(get(cache, "misses"));
  std::string storage = str(get(cache, "storage"));
  out += fmt::format("<p><b>{}</b>{}</p>\n", escape(tool),
                     storage.empty() ? "" : " · storage " + escape(storage));
  if (!hits || !misses) {
    out += note("Statistics unavailable for this build.");
    return;
  }
  auto rate = [](double h, double m) {
    return h + m > 0 ? fmt::format("{:.0f}%", 100 * h / (h + m)) : std::string("-");
  };
  out += "<div class=\"cards\">" + card(fmt::format("{:.0f}", *hits), "hits") +
         card(fmt::format("{:.0f}", *misses), "misses") + card(rate(*hits, *misses), "hit rate");
  if (auto e = number(get(cache, "errors")); e && *e > 0)
    out += card(fmt::format("{:.0f}", *e), "storage errors");
  out += "</div>\n";
  std::vector<html::BarRow> rows;
  rows.push_back({"all compiles",
                  fmt::format("{} hits", rate(*hits, *misses)),
                  {{*hits, "#4c9a2a", fmt::format("{:.0f} hits", *hits)},
                   {*misses, "#e8590c", fmt::format("{:.0f} misses", *misses)}}});
  if (const json* cats = get(cache, "categories"); cats && cats->is_object())
    for (auto it = cats->begin(); it != cats->end() && rows.size() < k_max_rows; ++it) {
      double h = number(get(&it.value(), "hits")).value_or(0),
             m = number(get(&it.value(), "misses")).value_or(0);
      rows.push_back({it.key(),
                      fmt::format("{} hits", rate(h, m)),
                      {{h, "#4c9a2a", fmt::format("{}: {:.0f} hits", it.key(), h)},
                       {m, "#e8590c", fmt::format("{}: {:.0f} misses", it.key(), m)}}});
    }
  out += html::legend({{"hits", "#4c9a2a"}, {"misses", "#e8590c"}});
  html::BarChartOptions bo;
  bo.label_width = 200;
  out += html::stacked_bars(rows, bo);
}

void checks_section(std::string& out, const json& report) {
  out += "<h2>Verification</h2>\n";
  std::vector<std::array<std::string, 3>> checks;  // name, status, detail
  if (const json* c = get(&report, "checks"); c && c->is_array())
    for (const auto& e : *c) {
      if (checks.size() >= k_max_rows) break;
      checks.push_back({str(get(&e, "name")), str(get(&e, "status")), str(get(&e, "detail"))});
    }
  // `tailor build torch` reports its checks as fields.
  if (const json* t = get(&report, "targets_verified"); t && t->is_array()) {
    std::vector<std::string> names;
    for (const auto& e : *t)
      if (e.is_string() && names.size() < k_max_rows) names.push_back(e.get<std::string>());
    checks.push_back({"targets", "passed", "exactly " + join(names, " ")});
  }
  if (const json* g = get(&report, "gpu_smoke_test"); g && g->is_string()) {
    std::string v = g->get<std::string>();
    checks.push_back({"gpu-smoke",
                      v == "ok"                    ? "passed"
                      : v.rfind("skipped", 0) == 0 ? "skipped"
                                                   : "failed",
                      v});
  }
  if (checks.empty()) {
    out += note("No checks in this report.");
  } else {
    out += "<table><tr><th>check</th><th>result</th><th>detail</th></tr>\n";
    for (const auto& [name, status, detail] : checks)
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(name),
                         badge(status), escape(detail));
    out += "</table>\n";
  }
  const json* per_target = path(report, {"wheel", "bytes_per_target"});
  if (!per_target || !per_target->is_object()) per_target = get(&report, "bytes_per_target");
  if (per_target && per_target->is_object() && !per_target->empty()) {
    out += "<h3>Device code per target in the wheel</h3>\n";
    std::vector<html::BarRow> rows;
    for (auto it = per_target->begin(); it != per_target->end() && rows.size() < k_max_rows; ++it) {
      double v = number(&it.value()).value_or(0);
      bool ptx = it.key().rfind("compute_", 0) == 0;
      std::string size = human_bytes(static_cast<uint64_t>(std::max(0.0, std::min(v, 1e18))));
      rows.push_back({it.key(), size, {{v, ptx ? "#e8590c" : "#2f6fdf", it.key() + ": " + size}}});
    }
    out += html::legend({{"SASS (sm_XX)", "#2f6fdf"}, {"PTX (compute_XX)", "#e8590c"}});
    html::BarChartOptions bo;
    bo.label_width = 160;
    out += html::stacked_bars(rows, bo);
  }
}

}  // namespace

std::string render_report_html(const nlohmann::json& report_in) {
  json report = report_in;
  escape_json_strings(report);  // invalid UTF-8 from a hand-edited file becomes \xNN text
  std::string wheel = str(path(report, {"wheel", "name"}));
  if (wheel.empty()) wheel = str(get(&report, "wheel"));
  std::string title = wheel.empty() ? "tailor build report" : "tailor build report: " + wheel;
  std::string body;
  std::vector<std::string> sub;
  if (auto p = str(path(report, {"inputs", "package"})); !p.empty()) sub.push_back("package " + p);
  if (auto s = str(path(report, {"inputs", "source"})); !s.empty()) sub.push_back("from " + s);
  if (auto s = str(path(report, {"run", "started_at"})); !s.empty()) sub.push_back("started " + s);
  if (const json* targets = path(report, {"inputs", "targets"}); targets && targets->is_array()) {
    std::vector<std::string> t;
    for (const auto& e : *targets)
      if (e.is_string() && t.size() < k_max_rows) t.push_back(e.get<std::string>());
    if (!t.empty()) sub.push_back("targets " + join(t, " "));
  }
  if (!sub.empty()) body += "<p class=\"sub\">" + escape(join(sub, " · ")) + "</p>\n";

  uint64_t dropped = 0;
  std::vector<Job> jobs = read_jobs(report, dropped);
  body += "<div class=\"cards\">";
  if (const json* ok = get(&report, "ok"); ok && ok->is_boolean())
    body += fmt::format(
        "<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">result</div></div>",
        badge(ok->get<bool>() ? "ok" : "failed"));
  auto duration = number(path(report, {"run", "duration_s"}));
  if (!duration) duration = number(get(&report, "duration_s"));
  if (duration) body += card(html::seconds_text(*duration), "build time");
  if (!jobs.empty()) body += card(fmt::format("{}", jobs.size() + dropped), "Ninja jobs");
  if (auto j = number(path(report, {"run", "jobs"})))
    body += card(fmt::format("{:.0f}", *j), "parallel jobs planned");
  auto size = number(path(report, {"wheel", "size"}));
  if (!size) size = number(get(&report, "wheel_bytes"));
  if (size)
    body += card(human_bytes(static_cast<uint64_t>(std::clamp(*size, 0.0, 1e18))), "wheel size");
  body += "</div>\n";

  phases_section(body, report);
  jobs_section(body, jobs, dropped);
  memory_section(body, report);
  cache_section(body, report);
  checks_section(body, report);
  body += fmt::format(
      "<footer>Made by tailor {} from the build report. Self-contained: no scripts, nothing "
      "fetched.</footer>\n",
      escape(str(path(report, {"tool", "version"}))));
  return html::page(title, body);
}

}  // namespace tailor::outputs
