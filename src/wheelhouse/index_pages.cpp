#include "wheelhouse/index_pages.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "util/html.h"
#include "wheelhouse/variant_metadata.h"

namespace tailor::wheelhouse {

namespace {

constexpr const char* k_api_version = "1.1";

std::string page_head(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" content=\"{}\">\n"
      "<title>{}</title>\n</head>\n<body>\n<h1>{}</h1>\n",
      k_api_version, html::escape(title), html::escape(title));
}

// A project page's link to the wheel: up from <set>/simple/<project>/ to the root.
std::string wheel_href(const WheelEntry& e) { return "../../../" + wheel_file_path(e); }

std::string project_html(const std::string& project, const std::vector<const WheelEntry*>& files) {
  std::string out = page_head("Links for " + project);
  for (const WheelEntry* e : files) {
    std::string attrs;
    if (!e->requires_python.empty())
      attrs += fmt::format(" data-requires-python=\"{}\"", html::escape(e->requires_python));
    attrs +=
        fmt::format(" data-dist-info-metadata=\"sha256={0}\" data-core-metadata=\"sha256={0}\"",
                    e->metadata_sha256);
    out += fmt::format("<a href=\"{}#sha256={}\"{}>{}</a><br>\n", html::escape(wheel_href(*e)),
                       e->sha256, attrs, html::escape(e->file));
  }
  return out + "</body>\n</html>\n";
}

nlohmann::json project_json(const std::string& project,
                            const std::vector<const WheelEntry*>& files) {
  nlohmann::json list = nlohmann::json::array();
  std::set<std::string> versions;
  for (const WheelEntry* e : files) {
    nlohmann::json f = {{"filename", e->file},
                        {"url", wheel_href(*e)},
                        {"hashes", {{"sha256", e->sha256}}},
                        {"size", e->size},
                        {"core-metadata", {{"sha256", e->metadata_sha256}}},
                        {"dist-info-metadata", {{"sha256", e->metadata_sha256}}},
                        {"yanked", false}};
    if (!e->requires_python.empty()) f["requires-python"] = e->requires_python;
    list.push_back(std::move(f));
    versions.insert(e->version);
  }
  return {{"meta", {{"api-version", k_api_version}}},
          {"name", project},
          {"versions", versions},
          {"files", list}};
}

}  // namespace

std::string wheel_file_path(const WheelEntry& e) { return "files/" + e.target_set + "/" + e.file; }

std::vector<IndexFile> render_index(const std::string& target_set,
                                    const std::vector<WheelEntry>& wheels) {
  std::map<std::string, std::vector<const WheelEntry*>> projects;
  for (const auto& e : wheels)
    if (e.target_set == target_set) projects[e.project].push_back(&e);
  for (auto& [name, files] : projects)
    std::sort(files.begin(), files.end(),
              [](const WheelEntry* a, const WheelEntry* b) { return a->file < b->file; });
  std::vector<IndexFile> out;
  const std::string simple = target_set + "/simple/";
  std::string root = page_head("Simple index");
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [name, files] : projects) {
    root += fmt::format("<a href=\"{0}/\">{0}</a><br>\n", html::escape(name));
    names.push_back({{"name", name}});
    out.push_back({simple + name + "/index.html", project_html(name, files)});
    out.push_back({simple + name + "/index.json", project_json(name, files).dump(1) + "\n"});
  }
  out.push_back({simple + "index.html", root + "</body>\n</html>\n"});
  nlohmann::json root_json = {{"meta", {{"api-version", k_api_version}}}, {"projects", names}};
  out.push_back({simple + "index.json", root_json.dump(1) + "\n"});
  for (auto& file : render_variant_files(target_set, wheels)) out.push_back(std::move(file));
  return out;
}

}  // namespace tailor::wheelhouse
