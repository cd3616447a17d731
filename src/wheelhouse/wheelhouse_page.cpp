// `tailor publish --html FILE`: the wheelhouse as one page, packages by GPU target sets.
#include <fmt/format.h>

#include <map>
#include <set>

#include "util/html.h"
#include "wheelhouse/index_pages.h"
#include "wheelhouse/wheelhouse.h"

namespace tailor::wheelhouse {

namespace {

std::string toolchain_value(const WheelEntry& e, const char* key) {
  if (!e.provenance.is_object()) return {};
  auto t = e.provenance.find("toolchain");
  if (t == e.provenance.end() || !t->is_object()) return {};
  auto v = t->find(key);
  return v != t->end() && v->is_string() ? v->get<std::string>() : std::string();
}

// "2.9.0+cu130 (CUDA 13.0)" -> torch "2.9.0+cu130", CUDA "13.0"; else CUDA from nvcc.
std::string wheel_cell(const WheelEntry& e) {
  std::string torch = toolchain_value(e, "torch"), cuda;
  if (auto at = torch.find(" (CUDA "); at != std::string::npos) {
    cuda = torch.substr(at + 7);
    if (!cuda.empty() && cuda.back() == ')') cuda.pop_back();
    torch.resize(at);
  }
  if (cuda.empty()) cuda = toolchain_value(e, "nvcc");
  std::string python = toolchain_value(e, "python");
  std::string built =
      e.foreign ? std::string("not built by tailor")
                : fmt::format("torch {} · CUDA {} · Python {}", torch.empty() ? "?" : torch,
                              cuda.empty() ? "?" : cuda, python.empty() ? "?" : python);
  return fmt::format("<div><a href=\"{}\">{}</a><br><small>{}</small></div>",
                     html::escape(wheel_file_path(e)), html::escape(e.version),
                     html::escape(built));
}

}  // namespace

std::string render_wheelhouse_html(const std::vector<WheelEntry>& wheels, const std::string& dir) {
  std::set<std::string> sets;
  std::map<std::string, std::map<std::string, std::vector<const WheelEntry*>>> cells;
  for (const auto& e : wheels) {
    sets.insert(e.target_set);
    cells[e.project][e.target_set].push_back(&e);
  }
  std::string body = fmt::format(
      "<p>{} wheels of {} packages for {} GPU target sets in {}. "
      "Install with <code>pip install --index-url DIR/SET/simple "
      "PACKAGE</code>.</p>\n",
      wheels.size(), cells.size(), sets.size(), html::escape(dir));
  body += "<table>\n<tr><th>package</th>";
  for (const auto& s : sets)
    body += fmt::format("<th><a href=\"{0}/simple/\">{0}</a></th>", html::escape(s));
  body += "</tr>\n";
  for (const auto& [project, by_set] : cells) {
    body += fmt::format("<tr><td>{}</td>", html::escape(project));
    for (const auto& s : sets) {
      body += "<td>";
      if (auto it = by_set.find(s); it != by_set.end())
        for (const WheelEntry* e : it->second) body += wheel_cell(*e);
      body += "</td>";
    }
    body += "</tr>\n";
  }
  body += "</table>\n";
  return html::page("Wheelhouse", body);
}

}  // namespace tailor::wheelhouse
