// data/diagnose/log_markers.toml through its one loader, and the reader's messages for a
// broken table.
#include "diagnose/log_markers.h"

#include <gtest/gtest.h>

namespace tailor::diagnose {
namespace {

TEST(LogMarkers, EmbeddedFileLoadsEveryList) {
  const LogMarkers& m = log_markers();
  EXPECT_FALSE(m.needles.empty());
  EXPECT_FALSE(m.error.empty());
  EXPECT_FALSE(m.failed.empty());
  EXPECT_EQ(classify_line(m, "FAILED: /tmp/b/kernel.o"), LineKind::failed);
}

TEST(LogMarkers, BrokenTablesNameTheKey) {
  auto r = parse_log_markers("needles = [\"error\"]\nstop = [\"(\"]\n", "m.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("m.toml: stop[0]: not a valid regex", 0), 0u)
      << r.error().message;
  r = parse_log_markers("needles = [\"error\"]\nstop = []\n", "m.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "m.toml: tail: missing (expected an array)");
  r = parse_log_markers("stop = []\n", "m.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "m.toml: needles: missing (expected an array)");
}

}  // namespace
}  // namespace tailor::diagnose
