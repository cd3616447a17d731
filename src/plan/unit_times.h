// data/build/unit_times.toml: each compile unit's time in a real build of a known package
// (recipe and profile), the order a build starts its units in when this machine has not
// built the package before. What this machine's own earlier builds measured comes first.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tailor::plan {

struct MeasuredUnitTimes {
  std::string recipe;                       ///< a recipe name (data/recipes)
  std::string profile;                      ///< one of its profiles, "" for none
  std::string measured;                     ///< where and how the times were measured
  std::map<std::string, uint64_t> unit_ms;  ///< source relative to the package's folder -> ms
};

/// Every entry of data/build/unit_times.toml, loaded once.
const std::vector<MeasuredUnitTimes>& all_measured_unit_times();

/// The measured times for this recipe and profile, or nullptr.
const MeasuredUnitTimes* measured_unit_times(std::string_view recipe, std::string_view profile);

/// Which unit times a build starts with. This machine's learned times (`learned`, may be
/// partial: an interrupted build records the units it finished) win unit by unit; the
/// measured times of the recipe and profile fill in the rest, scaled to this machine by
/// the median ratio over the units both know (1 when none). Empty: nothing known.
struct UnitTimesChoice {
  std::map<std::string, uint64_t> unit_ms;
  bool learned = false;   ///< some times are this machine's own
  bool measured = false;  ///< some come from data/build/unit_times.toml
  std::string source;     ///< for the report: where the times come from
};
UnitTimesChoice choose_unit_times(const std::map<std::string, uint64_t>* learned,
                                  std::string_view recipe, std::string_view profile);

}  // namespace tailor::plan
