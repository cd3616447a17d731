#include "plan/unit_times.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

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
        if (!found)
          p["profile"].fail(fmt::format("recipe {} has no profile of that name", m.recipe));
      }
      if (m.measured.empty()) p["measured"].fail("say where and how the times were measured");
      if (!seen.insert({m.recipe, m.profile}).second)
        p["recipe"].fail("a second entry for this recipe and profile");
      for (const auto& [key, v] : p["seconds"].entries()) {
        const double s = v.number();
        if (!relative_inside(key))
          v.fail("expected a source path relative to the package's folder");
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

UnitTimesChoice choose_unit_times(const std::map<std::string, uint64_t>* learned,
                                  std::string_view recipe, std::string_view profile) {
  UnitTimesChoice c;
  const MeasuredUnitTimes* m = measured_unit_times(recipe, profile);
  std::vector<double> ratios;
  if (learned && m)
    for (const auto& [src, ms] : *learned)
      if (auto it = m->unit_ms.find(src); it != m->unit_ms.end() && it->second > 0)
        ratios.push_back(static_cast<double>(ms) / static_cast<double>(it->second));
  double scale = 1.0;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();
    scale = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  }
  if (m)
    for (const auto& [src, ms] : m->unit_ms)
      if (!learned || !learned->contains(src)) {
        c.unit_ms[src] = static_cast<uint64_t>(std::llround(static_cast<double>(ms) * scale));
        c.measured = true;
      }
  if (learned)
    for (const auto& [src, ms] : *learned) {
      c.unit_ms[src] = ms;
      c.learned = true;
    }
  if (c.learned && c.measured)
    c.source =
        fmt::format("earlier builds on this machine, the rest measured ({}), scaled {:.2f} x",
                    m->measured, scale);
  else if (c.learned)
    c.source = "earlier builds on this machine";
  else if (c.measured)
    c.source = m->measured;
  return c;
}

}  // namespace tailor::plan
