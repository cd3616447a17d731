// data/build/unit_times.toml loads, names real recipes and profiles, and a build's learned
// times win over the shipped ones.
#include "plan/unit_times.h"

#include <gtest/gtest.h>

#include "plan/extension_recipe.h"

namespace tailor::plan {
namespace {

TEST(UnitTimes, EveryEntryNamesARecipeAndRelativeSources) {
  const auto& all = all_measured_unit_times();
  ASSERT_FALSE(all.empty());
  for (const auto& m : all) {
    EXPECT_EQ(recipe_for(m.recipe).name, m.recipe);
    EXPECT_FALSE(m.measured.empty()) << m.recipe;
    ASSERT_FALSE(m.unit_ms.empty()) << m.recipe;
    for (const auto& [src, ms] : m.unit_ms) {
      EXPECT_GT(ms, 0u) << src;
      EXPECT_NE(src.front(), '/') << src;
      EXPECT_EQ(src.find(".."), std::string::npos) << src;
    }
  }
}

TEST(UnitTimes, FlashAttnMinimalStartsTheForwardUnitsBeforeTheBackwardOnes) {
  // The reason the file exists: flash-attn lists its sources alphabetically, so the short
  // backward units of the minimal profile came first and the long forward ones last.
  const MeasuredUnitTimes* m = measured_unit_times("flash-attn", "minimal");
  ASSERT_NE(m, nullptr);
  uint64_t longest_bwd = 0, shortest_fwd = UINT64_MAX;
  for (const auto& [src, ms] : m->unit_ms) {
    if (src.find("/flash_bwd_") != std::string::npos) longest_bwd = std::max(longest_bwd, ms);
    if (src.find("/flash_fwd_") != std::string::npos) shortest_fwd = std::min(shortest_fwd, ms);
  }
  EXPECT_GT(longest_bwd, 0u);
  EXPECT_LT(longest_bwd, shortest_fwd);
  // No profile is another build (the backward units are the long ones there): not this entry.
  EXPECT_EQ(measured_unit_times("flash-attn", ""), nullptr);
  EXPECT_EQ(measured_unit_times("no-such-recipe", ""), nullptr);
}

TEST(UnitTimes, LearnedTimesWinUnitByUnitAndScaleTheMeasuredRest) {
  const MeasuredUnitTimes* m = measured_unit_times("flash-attn", "minimal");
  ASSERT_NE(m, nullptr);
  ASSERT_GE(m->unit_ms.size(), 3u);
  auto it = m->unit_ms.begin();
  const auto [a, a_ms] = *it++;
  const auto [b, b_ms] = *it++;
  const auto [c_src, c_ms] = *it;
  // An interrupted build on a machine 3 x slower learned two units: they win, and the
  // other units are the measured ones scaled 3 x (the median of the two ratios).
  const std::map<std::string, uint64_t> learned = {
      {a, a_ms * 3}, {b, b_ms * 3}, {"new_in_this_version.cu", 7}};
  auto c = choose_unit_times(&learned, "flash-attn", "minimal");
  EXPECT_TRUE(c.learned);
  EXPECT_TRUE(c.measured);
  EXPECT_EQ(c.unit_ms.size(), m->unit_ms.size() + 1);
  EXPECT_EQ(c.unit_ms.at(a), a_ms * 3);
  EXPECT_EQ(c.unit_ms.at("new_in_this_version.cu"), 7u);
  EXPECT_EQ(c.unit_ms.at(c_src), c_ms * 3);
  EXPECT_NE(c.source.find("scaled 3.00 x"), std::string::npos) << c.source;
  // Nothing learned: the measured times as they are.
  c = choose_unit_times(nullptr, "flash-attn", "minimal");
  EXPECT_EQ(c.unit_ms, m->unit_ms);
  EXPECT_FALSE(c.learned);
  EXPECT_EQ(c.source, m->measured);
  // Learned, no measured entry: the learned times alone.
  c = choose_unit_times(&learned, "generic", "");
  EXPECT_EQ(c.unit_ms, learned);
  EXPECT_FALSE(c.measured);
  EXPECT_EQ(c.source, "earlier builds on this machine");
  // Neither: nothing.
  EXPECT_TRUE(choose_unit_times(nullptr, "generic", "").unit_ms.empty());
}

}  // namespace
}  // namespace tailor::plan
