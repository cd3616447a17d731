// The one publish algorithm (wheelhouse/publish_target.h) over an in-memory store whose
// other publishers act at chosen moments: a lost race for the state is retried without
// storing a wheel twice, pages are written again while the state changes under them, a
// conflict writes nothing, and a store that always loses gives up with one line.
#include "wheelhouse/publish_target.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "wheelhouse/index_pages.h"

namespace tailor::wheelhouse {
namespace {

WheelEntry entry(const std::string& name, char hash = 'a', const std::string& set = "sm90") {
  WheelEntry e;
  e.file = name + "-1.0-py3-none-any.whl";
  e.project = name;
  e.version = "1.0";
  e.target_set = set;
  e.targets = {"sm_90"};
  e.sha256 = std::string(64, hash);
  e.metadata_sha256 = std::string(64, 'f');
  return e;
}

WheelCandidate candidate(const std::string& name, char hash = 'a') {
  return {entry(name, hash), "/in/" + name + ".whl", "Metadata-Version: 2.1\n"};
}

std::vector<std::string> files(const std::vector<WheelEntry>& wheels) {
  std::vector<std::string> out;
  for (const auto& e : wheels) out.push_back(e.file);
  std::sort(out.begin(), out.end());
  return out;
}

/// A bucket's semantics in memory: the state replaced only at the version read; hooks stand
/// for other publishers between this one's calls.
class MemoryTarget : public PublishTarget {
 public:
  std::vector<WheelEntry> state;
  int version = 0;                             ///< 0: no state yet
  std::map<std::string, std::string> objects;  ///< wheel path -> sha256
  int stores = 0, replaces = 0;
  std::vector<std::vector<WheelEntry>> pages;  ///< every write_pages' wheels
  std::function<void()> before_replace, after_pages;

  std::string describe() const override { return "memory://house"; }
  Expected<StateRead> read_state() override {
    return StateRead{state, version ? std::to_string(version) : ""};
  }
  Expected<std::string> store_wheel(const WheelCandidate& c) override {
    ++stores;
    auto [it, added] = objects.emplace(wheel_file_path(c.entry), c.entry.sha256);
    if (!added && it->second != c.entry.sha256) return conflict_line(c.path, c.entry, it->second);
    return std::string();
  }
  Expected<bool> replace_state(const std::vector<WheelEntry>& wheels,
                               const std::string& read_version) override {
    ++replaces;
    if (before_replace) before_replace();
    if (read_version != (version ? std::to_string(version) : "")) return false;
    state = wheels;
    ++version;
    return true;
  }
  Expected<void> write_pages(const std::vector<WheelEntry>& wheels) override {
    pages.push_back(wheels);
    if (after_pages) after_pages();
    return {};
  }
  /// Another publisher's whole write of `e`.
  void other_publishes(const WheelEntry& e) {
    objects[wheel_file_path(e)] = e.sha256;
    state.push_back(e);
    ++version;
  }
};

TEST(PublishTo, ALostRaceIsReadAgainAndRetriedWithoutStoringTwice) {
  MemoryTarget t;
  int races = 1;
  t.before_replace = [&] {
    if (races-- > 0) t.other_publishes(entry("other"));
  };
  int pauses = 0;
  auto r = publish_to(t, {candidate("mine")}, [&](int) { ++pauses; });
  ASSERT_EQ(r.failure, PublishFailure::none) << r.message;
  EXPECT_EQ(t.replaces, 2);
  EXPECT_EQ(pauses, 1);
  EXPECT_EQ(t.stores, 1) << "the wheel stored before the lost race is kept";
  EXPECT_EQ(files(t.state), files({entry("mine"), entry("other")}));
  ASSERT_EQ(t.pages.size(), 1u);
  EXPECT_EQ(files(t.pages.back()), files(t.state));
  ASSERT_EQ(r.wheels.size(), 1u);
  EXPECT_EQ(r.wheels[0].outcome, PublishOutcome::added);
}

TEST(PublishTo, PagesAreWrittenAgainWhileTheStateChangesUnderThem) {
  MemoryTarget t;
  int changes = 2;
  t.after_pages = [&] {
    if (changes-- > 0) t.other_publishes(entry("late" + std::to_string(changes)));
  };
  auto r = publish_to(t, {candidate("mine")}, {});
  ASSERT_EQ(r.failure, PublishFailure::none) << r.message;
  ASSERT_EQ(t.pages.size(), 3u);
  EXPECT_EQ(files(t.pages.back()), files(t.state)) << "the last pages list every wheel";
  EXPECT_EQ(t.pages.back().size(), 3u);
}

TEST(PublishTo, AConflictInTheStateWritesNothing) {
  MemoryTarget t;
  t.other_publishes(entry("mine", 'b'));
  const auto before = t.state;
  auto r = publish_to(t, {candidate("fresh"), candidate("mine", 'a')}, {});
  EXPECT_EQ(r.failure, PublishFailure::conflict);
  EXPECT_NE(r.message.find("is already in the sm90 index with sha256 bbbb"), std::string::npos)
      << r.message;
  EXPECT_EQ(t.stores, 0);
  EXPECT_EQ(t.replaces, 0);
  EXPECT_EQ(files(t.state), files(before));
  EXPECT_TRUE(r.wheels.empty());
}

TEST(PublishTo, AWheelObjectWithOtherBytesIsAConflict) {
  // Another publisher stored the same file with other bytes and has not written the state.
  MemoryTarget t;
  t.objects[wheel_file_path(entry("mine"))] = std::string(64, 'c');
  auto r = publish_to(t, {candidate("mine")}, {});
  EXPECT_EQ(r.failure, PublishFailure::conflict);
  EXPECT_EQ(t.replaces, 0);
  EXPECT_TRUE(t.state.empty());
}

TEST(PublishTo, WhatIsPublishedAlreadyWritesNothing) {
  MemoryTarget t;
  t.other_publishes(entry("mine"));
  auto r = publish_to(t, {candidate("mine")}, {});
  ASSERT_EQ(r.failure, PublishFailure::none);
  ASSERT_EQ(r.wheels.size(), 1u);
  EXPECT_EQ(r.wheels[0].outcome, PublishOutcome::already_published);
  EXPECT_EQ(t.stores + t.replaces, 0);
  EXPECT_TRUE(t.pages.empty());
}

TEST(PublishTo, AStoreThatAlwaysLosesGivesUpWithOneLine) {
  MemoryTarget t;
  int n = 0;
  t.before_replace = [&] { t.other_publishes(entry("other" + std::to_string(n++))); };
  int pauses = 0;
  auto r = publish_to(t, {candidate("mine")}, [&](int) { ++pauses; });
  EXPECT_EQ(r.failure, PublishFailure::io);
  EXPECT_EQ(t.replaces, k_publish_attempts);
  EXPECT_EQ(pauses, k_publish_attempts);
  EXPECT_EQ(t.stores, 1);
  EXPECT_NE(r.message.find("memory://house: the state file changed under 50 attempts"),
            std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace tailor::wheelhouse
