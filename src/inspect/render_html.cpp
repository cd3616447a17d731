// `tailor inspect --html FILE`: the inspect result (the model to_json renders) as one
// self-contained page: bytes per GPU target (SASS cool colours, PTX warm), a stacked bar
// per library, totals, compression, the verdicts as a library x GPU grid, the wheels'
// checks. Every string from the input goes through html::escape.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cuda/fatbin_code.h"
#include "inspect/render.h"
#include "util/html.h"
#include "util/strings.h"

namespace tailor::inspect {

namespace {

using html::escape;

constexpr size_t k_max_library_rows = 150;
constexpr size_t k_max_table_rows = 500;

// Palettes: SASS in blues/greens, PTX in oranges/reds (styling, not facts).
constexpr const char* k_sass_colors[] = {"#1c3f94", "#2f6fdf", "#2b8a3e", "#5f3dc4",
                                         "#0b7285", "#74a7f5", "#66a80f", "#862e9c",
                                         "#1098ad", "#364fc7", "#94d82d", "#15aabf"};
constexpr const char* k_ptx_colors[] = {"#e8590c", "#f59f00", "#c92a2a",
                                        "#d6336c", "#ffa94d", "#a61e4d"};

// PTX entries (compute_XX) get the warm palette, whether or not the model reads them as a target.
bool is_ptx(const cuda::FatbinCode& code) { return code.kind == cuda::k_fatbin_kind_ptx; }

// The i-th colour of a kind when the fixed palette is too short: hues inside the kind's
// range (SASS green to violet, PTX red to yellow) a golden ratio apart, three lightnesses.
std::string generated_color(size_t i, bool ptx) {
  const double lo = ptx ? 0 : 95, hi = ptx ? 50 : 290;
  const double frac = std::fmod(static_cast<double>(i) * 0.6180339887, 1.0);
  static constexpr int k_lightness[] = {38, 52, 66};
  return fmt::format("hsl({:.0f} 70% {}%)", lo + (hi - lo) * frac, k_lightness[i % 3]);
}

std::map<cuda::FatbinCode, std::string> target_colors(const std::vector<cuda::FatbinCode>& names) {
  size_t sass_count = 0, ptx_count = 0;
  for (const auto& n : names) ++(is_ptx(n) ? ptx_count : sass_count);
  std::map<cuda::FatbinCode, std::string> colors;
  size_t sass = 0, ptx = 0;
  for (const auto& n : names) {
    if (is_ptx(n)) {
      colors[n] =
          ptx_count <= std::size(k_ptx_colors) ? k_ptx_colors[ptx] : generated_color(ptx, true);
      ++ptx;
    } else {
      colors[n] = sass_count <= std::size(k_sass_colors) ? k_sass_colors[sass]
                                                         : generated_color(sass, false);
      ++sass;
    }
  }
  return colors;
}

std::string card(std::string_view value, std::string_view key) {
  return fmt::format("<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>",
                     escape(value), escape(key));
}
std::string note(std::string_view text) {
  return fmt::format("<p class=\"note\">{}</p>\n", escape(text));
}

std::string percent(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.1f}%",
                             100.0 * static_cast<double>(part) / static_cast<double>(whole))
               : "-";
}

std::string compression_words(const std::set<std::string>& s) {
  std::vector<std::string> words;
  for (const auto& c : s) words.push_back(c == "none" ? "uncompressed" : c);
  return join(words, ", ");
}

struct Labelled {
  std::string label;
  const InspectedLibrary* lib;
};

/// The folder every label starts with ("/site-packages/torch/lib/"), when there are several
/// labels: rows show the rest, tooltips the whole.
std::string common_folder(const std::vector<std::string>& labels) {
  if (labels.size() < 2) return {};
  std::string prefix = labels.front();
  for (const auto& l : labels) {
    size_t n = 0;
    while (n < prefix.size() && n < l.size() && prefix[n] == l[n]) ++n;
    prefix.resize(n);
  }
  auto slash = prefix.rfind('/');
  return slash == std::string::npos ? std::string() : prefix.substr(0, slash + 1);
}

std::string without(const std::string& label, const std::string& prefix) {
  return !prefix.empty() && label.rfind(prefix, 0) == 0 ? label.substr(prefix.size()) : label;
}

struct TargetSum {
  uint64_t libraries = 0, entries = 0, stored = 0, uncompressed = 0;
  std::set<std::string> compression;
};

std::string library_row_note(const InspectedLibrary& lib) {
  return human_bytes(lib.device_code_bytes);
}

void verdict_section(std::string& out, const Verdicts* verdicts) {
  out += "<h2>GPU verdicts</h2>\n";
  if (!verdicts) {
    out += note(
        "No verdicts asked for: run with --gpu SPEC (a GPU name, an instance type or a compute "
        "capability: "
        "--gpu H100,T4), --require SPEC or --exact SPEC to see which GPUs run each library.");
    return;
  }
  for (const auto& p : verdicts->problems)
    out += fmt::format("<p><span class=\"badge b-bad\">FAIL</span> {}</p>\n", escape(p));
  // GPU checks as a grid: a row per library, a column per device.
  std::vector<cuda::ComputeCapability> devices;
  std::vector<std::string> libraries, shown_names;
  std::map<cuda::ComputeCapability, std::string>
      device_labels;  // 9.0 -> "H100 (9.0)" where the user named the GPU
  std::map<std::pair<std::string, cuda::ComputeCapability>, const LibraryVerdict*> cell;
  for (const auto& v : verdicts->items) {
    if (v.check != VerdictCheck::gpu) continue;
    if (std::find(devices.begin(), devices.end(), v.device) == devices.end())
      devices.push_back(v.device);
    device_labels[v.device] = v.gpu_names.empty() ? "GPU " + v.device.str() : v.device_label();
    if (std::find(libraries.begin(), libraries.end(), v.library) == libraries.end())
      libraries.push_back(v.library);
    cell[{v.library, v.device}] = &v;
  }
  if (!devices.empty()) {
    out += html::legend({{"runs: native SASS", "#1a7f37"},
                         {"runs: compatible SASS (same major, older minor)", "#2b8a3e"},
                         {"JIT-only: compiled from PTX at first load", "#a15c00"},
                         {"missing: no kernel image", "#c62828"}});
    // "<wheel>!<member>": the member (the Wheels section names the wheel); else the path
    // below the folder all share. Whole in the tooltip.
    for (const auto& lib : libraries) {
      auto bang = lib.rfind('!');
      shown_names.push_back(bang == std::string::npos ? lib : lib.substr(bang + 1));
    }
    const std::string prefix = common_folder(shown_names);
    if (!prefix.empty())
      out += fmt::format("<p class=\"sub\">Libraries under <code>{}</code></p>\n", escape(prefix));
    out += "<table><tr><th>library</th>";
    for (const auto& d : devices) out += fmt::format("<th>{}</th>", escape(device_labels[d]));
    out += "</tr>\n";
    size_t rows = 0;
    for (size_t li = 0; li < libraries.size(); ++li) {
      const std::string& lib = libraries[li];
      if (++rows > k_max_table_rows) {
        out += fmt::format(
            "<tr><td colspan=\"{}\" class=\"note\">{} more libraries (--json lists them "
            "all)</td></tr>\n",
            devices.size() + 1, libraries.size() - k_max_table_rows);
        break;
      }
      const std::string shown = without(shown_names[li], prefix);
      out += fmt::format("<tr><td class=\"mono\" title=\"{}\">{}</td>", escape(lib),
                         escape(html::shorten(shown, 80)));
      for (const auto& d : devices) {
        auto it = cell.find({lib, d});
        if (it == cell.end()) {
          out += "<td></td>";
          continue;
        }
        const LibraryVerdict& v = *it->second;
        std::string cls, text;
        if (!v.reason.empty())
          cls = "b-bad", text = "wrong platform";
        else if (v.mode == "native")
          cls = "b-ok", text = "runs · " + v.via;
        else if (v.mode == "compatible_sass")
          cls = "b-ok", text = "runs · compatible " + v.via;
        else if (v.mode == "ptx_jit")
          cls = "b-warn", text = "JIT-only · " + v.via;
        else
          cls = "b-bad", text = "missing";
        std::string style = v.mode == "compatible_sass" ? " style=\"background:#2b8a3e\"" : "";
        if (!v.reason.empty()) style = fmt::format(" title=\"{}\"", escape(v.reason));
        out +=
            fmt::format("<td><span class=\"badge {}\"{}>{}</span></td>", cls, style, escape(text));
      }
      out += "</tr>\n";
    }
    out += "</table>\n";
  }
  bool any_spec = false;
  for (const auto& v : verdicts->items) any_spec = any_spec || v.check != VerdictCheck::gpu;
  if (any_spec) {
    out += "<table><tr><th>check</th><th>library</th><th>result</th><th>detail</th></tr>\n";
    size_t rows = 0;
    for (const auto& v : verdicts->items) {
      if (v.check == VerdictCheck::gpu) continue;
      if (++rows > k_max_table_rows) break;
      std::string detail;
      if (!v.missing.empty()) detail += "lacks " + join(v.missing, " ");
      if (!v.extra.empty())
        detail += (detail.empty() ? "" : "; ") + std::string("has extra ") + join(v.extra, " ");
      out += fmt::format(
          "<tr><td>{}</td><td class=\"mono\">{}</td><td><span class=\"badge "
          "{}\">{}</span></td><td>{}</td></tr>\n",
          verdict_check_key(v.check), escape(html::shorten(v.library, 80)),
          v.pass ? "b-ok" : "b-bad", v.pass ? "PASS" : "FAIL", escape(detail));
    }
    out += "</table>\n";
  }
}

void wheel_section(std::string& out, const WheelReport& w) {
  out += fmt::format("<h3 class=\"mono\">{}</h3>\n", escape(w.path));
  out += "<table>";
  out += fmt::format("<tr><th>name</th><td>{} {}{}</td></tr>\n", escape(w.name), escape(w.version),
                     w.local_label.empty() ? "" : " (local label +" + escape(w.local_label) + ")");
  out += fmt::format("<tr><th>tags</th><td class=\"mono\">{}</td></tr>\n",
                     escape(join(w.tags_from_name, " ")));
  out += fmt::format(
      "<tr><th>size</th><td>{} archive, {} installed ({} members; zip keeps {} of the installed "
      "bytes)</td></tr>\n",
      human_bytes(w.file_size), human_bytes(w.installed_bytes), w.members,
      percent(w.file_size, w.installed_bytes));
  std::string record =
      !w.record.present ? "<span class=\"badge b-bad\">missing</span>"
      : w.record.passed()
          ? fmt::format("<span class=\"badge b-ok\">ok</span> {} members match", w.record.ok)
          : fmt::format(
                "<span class=\"badge b-bad\">failed</span> {} ok, {} mismatched, {} unlisted, {} "
                "missing",
                w.record.ok, w.record.mismatches.size(), w.record.unlisted.size(),
                w.record.missing.size());
  out += "<tr><th>RECORD</th><td>" + record + "</td></tr>\n";
  if (!w.manylinux_needed.empty())
    out += fmt::format("<tr><th>manylinux</th><td>needs {}, claims {} {}</td></tr>\n",
                       escape(w.manylinux_needed), escape(w.manylinux_claimed),
                       w.claim_ok
                           ? "<span class=\"badge b-ok\">ok</span>"
                           : "<span class=\"badge b-bad\">wrong</span> " + escape(w.claim_problem));
  out += "</table>\n";
}

// What the page draws from: the libraries (of the inputs and inside wheels) with their
// labels, the targets in canonical order with their colours, and the sums over them.
struct PageModel {
  std::vector<Labelled> libs;
  std::vector<cuda::FatbinCode> codes;
  std::map<cuda::FatbinCode, std::string> colors;
  std::vector<html::LegendItem> legend;
  std::map<cuda::FatbinCode, TargetSum> sums;
  uint64_t device_bytes = 0, file_bytes = 0, sass_bytes = 0, ptx_bytes = 0, stored_all = 0,
           uncompressed_all = 0;
  size_t with_code = 0;
  /// Device code files per folder (the folder's label carries its wheel's path).
  std::vector<std::pair<std::string, DeviceFolder>> folders;
  uint64_t device_files = 0, device_file_bytes = 0;
};

// The device code files' folders into the model's sums (`libraries` of a sum counts files).
// One target's bytes of a library (`count` 1) or of a folder of device files (`count` its
// files) added to the page's sums.
template <typename Target>
void add_target(PageModel& m, const Target& t, uint64_t count) {
  auto& s = m.sums[t.code];
  s.libraries += count;
  s.entries += t.entries;
  s.stored += t.stored_bytes;
  s.uncompressed += t.uncompressed_bytes;
  s.compression.insert(t.compression.begin(), t.compression.end());
  (is_ptx(t.code) ? m.ptx_bytes : m.sass_bytes) += t.stored_bytes;
  m.stored_all += t.stored_bytes;
  m.uncompressed_all += t.uncompressed_bytes;
}

void add_device_folders(PageModel& m, const std::vector<DeviceFile>& files,
                        const std::string& prefix) {
  for (auto& f : device_folders(files)) {
    m.device_files += f.files;
    m.device_file_bytes += f.bytes;
    for (const auto& t : f.targets) add_target(m, t, t.files);
    std::string label = prefix + device_folder_label(f);
    m.folders.emplace_back(std::move(label), std::move(f));
  }
}

PageModel page_model(const InspectReport& report) {
  PageModel m;
  for (const auto& lib : report.libraries) m.libs.push_back({lib.path, &lib});
  for (const auto& w : report.wheels)
    for (const auto& lib : w.libraries) m.libs.push_back({lib.path, &lib});
  m.codes = report.target_codes();
  m.colors = target_colors(m.codes);
  for (const auto& code : m.codes) m.legend.push_back({code.name(), m.colors[code]});
  for (const auto& l : m.libs) {
    m.file_bytes += l.lib->file_size;
    if (!l.lib->has_device_code) continue;
    ++m.with_code;
    m.device_bytes += l.lib->device_code_bytes;
    for (const auto& t : l.lib->targets) add_target(m, t, 1);
  }
  add_device_folders(m, report.device_files, "");
  for (const auto& w : report.wheels) add_device_folders(m, w.device_files, w.path + "!");
  return m;
}

// A stacked bar per folder of device code files, in path order.
void device_folders_section(std::string& body, PageModel& m) {
  if (m.folders.empty()) return;
  body += "<h2>Device code files per folder</h2>\n";
  body +=
      "<p class=\"sub\">Cubins, PTX and fatbin files of their own: not host libraries; the "
      "package loads the one for the GPU at run time.</p>\n";
  body += html::legend(m.legend);
  std::vector<html::BarRow> rows;
  for (size_t i = 0; i < m.folders.size() && i < k_max_library_rows; ++i) {
    const auto& [label, f] = m.folders[i];
    html::BarRow row{
        label,
        fmt::format("{} files · {} cubin, {} PTX, {} fatbin", f.files, f.cubins, f.ptx, f.fatbins),
        {}};
    for (const auto& t : f.targets)
      row.segments.push_back({static_cast<double>(t.stored_bytes), m.colors[t.code],
                              fmt::format("{} {}: {} in {} files ({} entries, {})", label, t.name,
                                          human_bytes(t.stored_bytes), t.files, t.entries,
                                          compression_words(t.compression))});
    rows.push_back(std::move(row));
  }
  body += html::stacked_bars(rows);
  if (m.folders.size() > k_max_library_rows)
    body += note(fmt::format("{} more folders are not drawn (--json lists them all).",
                             m.folders.size() - k_max_library_rows));
}

void cards_section(std::string& body, const PageModel& m, const InspectReport& report,
                   const std::vector<std::string>& inputs) {
  body += "<p class=\"sub\">" + escape(inputs.size() == 1 ? inputs.front() : join(inputs, ", ")) +
          "</p>\n";
  body += "<div class=\"cards\">";
  body += card(fmt::format("{}", m.libs.size()), "ELF libraries");
  body += card(fmt::format("{}", m.with_code), "with CUDA device code");
  body += card(human_bytes(m.file_bytes), "library bytes");
  body += card(human_bytes(m.device_bytes),
               "device code (" + percent(m.device_bytes, m.file_bytes) + " of the libraries)");
  if (m.device_files > 0)
    body += card(fmt::format("{}", m.device_files),
                 "device code files (" + human_bytes(m.device_file_bytes) + ")");
  body += card(human_bytes(m.sass_bytes), "SASS (sm_XX), runs as is");
  body += card(human_bytes(m.ptx_bytes), "PTX (compute_XX), JIT-compiled");
  for (const auto& w : report.wheels) body += card(human_bytes(w.file_size), "wheel archive");
  body += "</div>\n";
}

void targets_section(std::string& body, PageModel& m) {
  body += "<h2>Bytes per GPU target</h2>\n";
  if (m.sums.empty()) {
    body += note("No library or device code file here carries CUDA device code.");
    return;
  }
  body +=
      "<p class=\"sub\">Stored bytes of each target's fatbin entries (compressed as they sit in "
      "the library), all "
      "libraries together. SASS (sm_XX, cool colours) runs on its GPU as is; PTX (compute_XX, warm "
      "colours) is "
      "compiled by the driver at first load.</p>\n";
  body += html::legend(m.legend);
  std::vector<html::BarRow> rows;
  for (const auto& code : m.codes) {
    auto it = m.sums.find(code);
    if (it == m.sums.end()) continue;
    const TargetSum& s = it->second;
    const std::string n = code.name();
    rows.push_back({n,
                    fmt::format("{} · {}", human_bytes(s.stored), percent(s.stored, m.stored_all)),
                    {{static_cast<double>(s.stored), m.colors[code],
                      fmt::format("{}: {} in {} entries of {} libraries", n, human_bytes(s.stored),
                                  s.entries, s.libraries)}}});
  }
  html::BarChartOptions bo;
  bo.label_width = 140;
  bo.note_width = 150;
  body += html::stacked_bars(rows, bo);
}

// A stacked bar per library with device code, largest first.
void libraries_section(std::string& body, PageModel& m) {
  std::vector<const Labelled*> coded;
  for (const auto& l : m.libs)
    if (l.lib->has_device_code) coded.push_back(&l);
  std::stable_sort(coded.begin(), coded.end(), [](const Labelled* a, const Labelled* b) {
    return a->lib->device_code_bytes > b->lib->device_code_bytes;
  });
  if (coded.empty()) return;
  body += "<h2>Device code per library</h2>\n";
  std::vector<std::string> labels;
  for (const auto* l : coded) labels.push_back(l->label);
  const std::string prefix = common_folder(labels);
  if (!prefix.empty())
    body += fmt::format("<p class=\"sub\">Libraries under <code>{}</code></p>\n", escape(prefix));
  body += html::legend(m.legend);
  std::vector<html::BarRow> rows;
  for (size_t i = 0; i < coded.size() && i < k_max_library_rows; ++i) {
    const InspectedLibrary& lib = *coded[i]->lib;
    html::BarRow row{without(coded[i]->label, prefix), library_row_note(lib), {}};
    for (const auto& t : lib.targets)
      row.segments.push_back(
          {static_cast<double>(t.stored_bytes), m.colors[t.code],
           fmt::format("{} {}: {} ({} entries, {})", coded[i]->label, t.name,
                       human_bytes(t.stored_bytes), t.entries, compression_words(t.compression))});
    rows.push_back(std::move(row));
  }
  body += html::stacked_bars(rows);
  if (coded.size() > k_max_library_rows)
    body += note(
        fmt::format("{} more libraries with device code are not drawn (--json lists them all).",
                    coded.size() - k_max_library_rows));
}

void compression_section(std::string& body, PageModel& m) {
  body += "<h2>Compression</h2>\n";
  if (m.sums.empty()) {
    body += note("No fatbin entries to compress.");
    return;
  }
  body += fmt::format(
      "<p class=\"sub\">Fatbin entries store {} for {} of code: {} of the uncompressed size.</p>\n",
      human_bytes(m.stored_all), human_bytes(m.uncompressed_all),
      percent(m.stored_all, m.uncompressed_all));
  body +=
      "<table><tr><th>target</th><th class=\"num\">libraries</th><th class=\"num\">entries</th><th "
      "class=\"num\">stored</th><th class=\"num\">uncompressed</th><th class=\"num\">stored / "
      "uncompressed</th><th>compression</th></tr>\n";
  for (const auto& code : m.codes) {
    auto it = m.sums.find(code);
    if (it == m.sums.end()) continue;
    const TargetSum& s = it->second;
    const std::string n = code.name();
    body += fmt::format(
        "<tr><td><span class=\"badge\" style=\"background:{}\">{}</span></td><td "
        "class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td>{}</td></tr>\n",
        m.colors[code], escape(n), s.libraries, s.entries, human_bytes(s.stored),
        human_bytes(s.uncompressed), percent(s.stored, s.uncompressed),
        escape(compression_words(s.compression)));
  }
  body += "</table>\n";
}

// The libraries without device code, folded away, and the inputs skipped.
void plain_and_skipped_section(std::string& body, const PageModel& m, const InspectReport& report) {
  std::vector<const Labelled*> plain;
  for (const auto& l : m.libs)
    if (!l.lib->has_device_code) plain.push_back(&l);
  if (!plain.empty()) {
    body += fmt::format(
        "<details><summary>{} {} without device code</summary><table><tr><th>library</th><th "
        "class=\"num\">size</th><th>manylinux</th></tr>\n",
        plain.size(), plain.size() == 1 ? "library" : "libraries");
    for (size_t i = 0; i < plain.size() && i < k_max_table_rows; ++i)
      body +=
          fmt::format("<tr><td class=\"mono\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                      escape(html::shorten(plain[i]->label, 100)),
                      human_bytes(plain[i]->lib->file_size), escape(plain[i]->lib->manylinux.tag));
    body += "</table></details>\n";
  }
  if (!report.skipped.empty()) {
    body += "<h2>Skipped</h2><ul>";
    for (size_t i = 0; i < report.skipped.size() && i < k_max_table_rows; ++i)
      body += "<li class=\"mono\">" + escape(report.skipped[i]) + "</li>";
    body += "</ul>\n";
  }
}

}  // namespace

std::string render_html(const InspectReport& report, const Verdicts* verdicts,
                        const std::vector<std::string>& inputs) {
  PageModel m = page_model(report);
  std::string body;
  cards_section(body, m, report, inputs);
  targets_section(body, m);
  libraries_section(body, m);
  device_folders_section(body, m);
  compression_section(body, m);
  verdict_section(body, verdicts);
  if (!report.wheels.empty()) {
    body += "<h2>Wheels</h2>\n";
    for (const auto& w : report.wheels) wheel_section(body, w);
  }
  plain_and_skipped_section(body, m, report);
  body +=
      "<footer>Made by tailor inspect from the same result as --json. Self-contained: no scripts, "
      "nothing "
      "fetched.</footer>\n";
  std::string title = "tailor inspect";
  if (inputs.size() == 1) {
    auto slash = inputs.front().find_last_of('/');
    title +=
        ": " + (slash == std::string::npos ? inputs.front() : inputs.front().substr(slash + 1));
  }
  return html::page(title, body);
}

}  // namespace tailor::inspect
