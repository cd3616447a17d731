#include "plan/unit_times.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "data/toml_document.h"
#include "plan/extension_recipe.h"

namespace tailor::plan {
namespace {

constexpr double k_max_seconds = 7.0 * 24 * 3600;  // a week: more is not one compile
constexpr size_t k_max_key_bytes = 1024;

bool relative_inside(std::string_view key) {
  if (key.empty() || key.size() > k_max_key_bytes || key.front() == '/') return false;
  size_t at = 0;
  while (at <= key.size()) {
    size_t end = key.find('/', at);
    if (end == std::string_view::npos) end = key.size();
    std::string_view part = key.substr(at, end - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = end + 1;
  }
  return true;
}

}  // namespace

const std::vector<MeasuredUnitTimes>& all_measured_unit_times() {
  static const std::vector<MeasuredUnitTimes> all = [] {
    auto doc = data::toml_document("build/unit_times.toml");
    std::vector<MeasuredUnitTimes> out;
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& p : doc["package"].array()) {
      MeasuredUnitTimes m;
      m.recipe = p["recipe"].string();
      m.profile = p["profile"].string_or("");
      m.measured = p["measured"].string();
      const ExtensionRecipe* recipe = nullptr;
      for (const auto& r : all_recipes())
        if (r.name == m.recipe) recipe = &r;
      if (!recipe) p["recipe"].fail("no recipe of that name in data/recipes");
      if (!m.profile.empty()) {
        bool found = false;
        for (const auto& pr : recipe->profiles) found = found || pr.name == m.profile;
        if (!found) p["profile"].fail(fmt::format("recipe {} has no profile of that name", m.recipe));
      }
      if (m.measured.empty()) p["measured"].fail("say where and how the times were measured");
      if (!seen.insert({m.recipe, m.profile}).second) p["recipe"].fail("a second entry for this recipe and profile");
      for (const auto& [key, v] : p["seconds"].entries()) {
        const double s = v.number();
        if (!relative_inside(key)) v.fail("expected a source path relative to the package's folder");
        if (!(s > 0) || s > k_max_seconds) v.fail("expected seconds above 0 and at most a week");
        m.unit_ms[key] = static_cast<uint64_t>(std::llround(s * 1000));
      }
      if (m.unit_ms.empty()) p["seconds"].fail("expected at least one unit");
      out.push_back(std::move(m));
    }
    return out;
  }();
  return all;
}

const MeasuredUnitTimes* measured_unit_times(std::string_view recipe, std::string_view profile) {
  for (const auto& m : all_measured_unit_times())
    if (m.recipe == recipe && m.profile == profile) return &m;
  return nullptr;
}

UnitTimesChoice choose_unit_times(const std::map<std::string, uint64_t>* learned, std::string_view recipe,
                                  std::string_view profile) {
  if (learned && !learned->empty()) return {learned, "earlier builds on this machine"};
  if (const MeasuredUnitTimes* m = measured_unit_times(recipe, profile)) return {&m->unit_ms, m->measured};
  return {};
}

}  // namespace tailor::plan
