// data/probe/isa_levels.toml through its one loader: every table it promises is there.
#include "probe/isa_levels.h"

#include <gtest/gtest.h>

using namespace tailor::probe;

TEST(IsaLevelTable, EmbeddedFileLoadsEveryTable) {
  const IsaLevelTable& t = isa_level_table();
  ASSERT_FALSE(t.x86_64.empty());
  ASSERT_FALSE(t.aarch64.empty());
  EXPECT_FALSE(t.x86_64_cpuinfo_names.empty());
  for (const auto& r : t.x86_64) {
    EXPECT_FALSE(r.level.empty());
    EXPECT_FALSE(r.features.empty()) << r.level;
  }
}
