// What earlier builds taught the governor: the peaks file in the user cache, over real
// files (a scratch folder): record and read back, per-kind replacement, the bound on
// entries, and damaged or hostile files.
#include "governor/governor_profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::governor;

namespace {

constexpr uint64_t kProfileMiB = uint64_t{1} << 20;

void write_profile_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST(GovernorProfile, KeysNameWhatDecidesTheJobPeaks) {
  EXPECT_EQ(governor_profile_key("causal-conv1d", "causal-conv1d", {"sm_90", "sm_80"}, 4),
            "causal-conv1d recipe=causal-conv1d targets=sm_80,sm_90 nvcc-threads=4");
  EXPECT_NE(governor_profile_key("p", "r", {"sm_90"}, 4),
            governor_profile_key("p", "r", {"sm_90"}, 2));
  EXPECT_NE(governor_profile_key("p", "r", {"sm_90"}, 4),
            governor_profile_key("p", "r", {"sm_80"}, 4));
}

TEST(GovernorProfile, RecordsAndReadsBackPerKind) {
  auto dir = tailor::test::scratch_dir("governor-profile");
  const std::string path = (dir / "sub" / "peaks.json").string();
  auto none = read_governor_profile(path, "k");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(*none) << "no file: no entry";
  ASSERT_TRUE(record_governor_profile(
      path, "k", {{"nvcc --threads 4", 900 * kProfileMiB}, {"cc1plus", 1800 * kProfileMiB}}, 8,
      PeakUpdate::replace));
  // The second build measured only nvcc jobs (smaller now): cc1plus is kept.
  ASSERT_TRUE(record_governor_profile(path, "k", {{"nvcc --threads 4", 700 * kProfileMiB}}, 8,
                                      PeakUpdate::replace));
  ASSERT_TRUE(
      record_governor_profile(path, "other", {{"ld", 50 * kProfileMiB}}, 8, PeakUpdate::replace));
  auto got = read_governor_profile(path, "k");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->builds, 2u);
  EXPECT_EQ((*got)->peaks.at("nvcc --threads 4"), 700 * kProfileMiB);
  EXPECT_EQ((*got)->peaks.at("cc1plus"), 1800 * kProfileMiB);
  EXPECT_FALSE((*got)->updated.empty());
  // Nothing measured (a build interrupted before any job ended) writes nothing.
  ASSERT_TRUE(record_governor_profile(path, "k", {}, 8, PeakUpdate::replace));
  EXPECT_EQ((*read_governor_profile(path, "k"))->builds, 2u);
}

TEST(GovernorProfile, KeepsAtMostMaxEntriesDroppingTheLeastRecent) {
  auto dir = tailor::test::scratch_dir("governor-profile-bound");
  const std::string path = (dir / "peaks.json").string();
  // Entries dated in the past, then a new one recorded with a bound of 2.
  write_profile_text(path, R"({"schema": "tailor.governor-peaks/1", "entries": {
    "old":    {"peaks": {"cc1plus": 1048576}, "builds": 1, "updated": "2020-01-01T00:00:00Z"},
    "recent": {"peaks": {"cc1plus": 1048576}, "builds": 1, "updated": "2025-01-01T00:00:00Z"}}})");
  ASSERT_TRUE(
      record_governor_profile(path, "new", {{"cc1plus", 5 * kProfileMiB}}, 2, PeakUpdate::replace));
  EXPECT_FALSE(*read_governor_profile(path, "old")) << "the least recently updated went";
  EXPECT_TRUE(*read_governor_profile(path, "recent"));
  EXPECT_TRUE(*read_governor_profile(path, "new"));
}

TEST(GovernorProfile, DamagedOrHostileFilesAreErrorsNamingTheFileAndAreReplaced) {
  auto dir = tailor::test::scratch_dir("governor-profile-bad");
  const std::string path = (dir / "peaks.json").string();
  for (
      const std::string& text : {
          std::string("not json"),
          std::string(R"({"schema": "something else", "entries": {}})"),
          std::string(R"({"schema": "tailor.governor-peaks/1", "entries": []})"),
          std::string(
              R"({"schema": "tailor.governor-peaks/1", "entries": {"k": {"peaks": {"cc1plus": -5}}}})"),
          std::string(
              R"({"schema": "tailor.governor-peaks/1", "entries": {"k": {"peaks": {"cc1plus": 0}}}})"),
          std::string(
              R"({"schema": "tailor.governor-peaks/1", "entries": {"k": {"peaks": {"cc1plus": 1e300}}}})"),
          std::string(
              R"({"schema": "tailor.governor-peaks/1", "entries": {"k": {"peaks": {"cc1plus": 99999999999999999}}}})"),
          std::string(
              R"({"schema": "tailor.governor-peaks/1", "entries": {"k": {"peaks": "x"}}}})"),
          std::string("{\"schema\": \"tailor.governor-peaks/1\"\0, \"entries\": {}}", 44),
      }) {
    write_profile_text(path, text);
    auto r = read_governor_profile(path, "k");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(path), std::string::npos) << r.error().message;
    // The next build's record starts the file again.
    ASSERT_TRUE(
        record_governor_profile(path, "k", {{"cc1plus", 7 * kProfileMiB}}, 8, PeakUpdate::replace));
    auto again = read_governor_profile(path, "k");
    ASSERT_TRUE(again && *again) << text;
    EXPECT_EQ((*again)->peaks.at("cc1plus"), 7 * kProfileMiB);
    EXPECT_EQ((*again)->builds, 1u);
  }
  // A folder where the file should be: an error, not a crash.
  std::filesystem::remove(path);
  std::filesystem::create_directories(path);
  EXPECT_FALSE(read_governor_profile(path, "k"));
}

TEST(GovernorProfile, OnlyABuildThatCompiledEverythingLowersAKeptPeak) {
  // No cache, or a cache with no hit, and no Ninja step reused: the build's peaks replace.
  EXPECT_EQ(peak_update(BuildReuse{}), PeakUpdate::replace);
  EXPECT_EQ(peak_update(BuildReuse{true, 0, false, std::nullopt}), PeakUpdate::replace);
  EXPECT_EQ(peak_update(BuildReuse{true, 0, true, 0}), PeakUpdate::replace);
  // Any hit, a reused step, or counts unknown: a subset compiled, which only raises.
  EXPECT_EQ(peak_update(BuildReuse{true, 12, false, std::nullopt}), PeakUpdate::raise_only);
  EXPECT_EQ(peak_update(BuildReuse{true, 1, false, std::nullopt}), PeakUpdate::raise_only);
  EXPECT_EQ(peak_update(BuildReuse{true, std::nullopt, false, std::nullopt}),
            PeakUpdate::raise_only);
  EXPECT_EQ(peak_update(BuildReuse{false, std::nullopt, true, 3}), PeakUpdate::raise_only);
  EXPECT_EQ(peak_update(BuildReuse{false, std::nullopt, true, std::nullopt}),
            PeakUpdate::raise_only);

  auto dir = tailor::test::scratch_dir("governor-profile-cached");
  const std::string path = (dir / "peaks.json").string();
  ASSERT_TRUE(
      record_governor_profile(path, "k", {{"nvcc", 561 * kProfileMiB}}, 8, PeakUpdate::replace));
  // A rebuild with cache hits measured smaller jobs: the kept peak stays.
  ASSERT_TRUE(record_governor_profile(path, "k",
                                      {{"nvcc", 104 * kProfileMiB}, {"cc1plus", 300 * kProfileMiB}},
                                      8, PeakUpdate::raise_only));
  auto got = read_governor_profile(path, "k");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->peaks.at("nvcc"), 561 * kProfileMiB) << "never lowered by a build with hits";
  EXPECT_EQ((*got)->peaks.at("cc1plus"), 300 * kProfileMiB) << "a kind not known yet is learned";
  EXPECT_EQ((*got)->builds, 2u);
  // A larger peak raises it; a build that compiled everything may lower it.
  ASSERT_TRUE(
      record_governor_profile(path, "k", {{"nvcc", 584 * kProfileMiB}}, 8, PeakUpdate::raise_only));
  EXPECT_EQ((*read_governor_profile(path, "k"))->peaks.at("nvcc"), 584 * kProfileMiB);
  ASSERT_TRUE(
      record_governor_profile(path, "k", {{"nvcc", 500 * kProfileMiB}}, 8, PeakUpdate::replace));
  EXPECT_EQ((*read_governor_profile(path, "k"))->peaks.at("nvcc"), 500 * kProfileMiB);
}

TEST(GovernorProfile, UnitTimesAreKeptPerKeyAndOnlyRaisedByABuildWithHits) {
  auto dir = tailor::test::scratch_dir("governor-units");
  const std::string path = (dir / "peaks.json").string();
  // A build without the governor records unit times alone.
  ASSERT_TRUE(record_governor_profile(
      path, "k", {}, 8, PeakUpdate::replace,
      {{"csrc/causal_conv1d_bwd.cu", 380000}, {"csrc/causal_conv1d.cpp", 9000}}));
  auto got = read_governor_profile(path, "k");
  ASSERT_TRUE(got && *got);
  EXPECT_TRUE((*got)->peaks.empty());
  EXPECT_EQ((*got)->unit_ms.at("csrc/causal_conv1d_bwd.cu"), 380000u);
  // A build with cache hits measured 40 ms for the hit: the kept time stays.
  ASSERT_TRUE(record_governor_profile(path, "k", {{"cc1plus", 100 * kProfileMiB}}, 8,
                                      PeakUpdate::raise_only,
                                      {{"csrc/causal_conv1d_bwd.cu", 40}, {"csrc/new.cu", 5000}}));
  got = read_governor_profile(path, "k");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->unit_ms.at("csrc/causal_conv1d_bwd.cu"), 380000u);
  EXPECT_EQ((*got)->unit_ms.count("csrc/new.cu"), 0u)
      << "a unit first seen in a build with hits may be a hit";
  EXPECT_EQ((*got)->peaks.at("cc1plus"), 100 * kProfileMiB);
  // A build that compiled everything (split now) replaces the time.
  ASSERT_TRUE(record_governor_profile(path, "k", {}, 8, PeakUpdate::replace,
                                      {{"csrc/causal_conv1d_bwd.cu", 200000}}));
  got = read_governor_profile(path, "k");
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->unit_ms.at("csrc/causal_conv1d_bwd.cu"), 200000u);
  EXPECT_EQ((*got)->unit_ms.size(), 2u) << "units this build did not measure are kept";
}

TEST(GovernorProfile, HostileUnitTimesAreErrorsNamingTheFile) {
  auto dir = tailor::test::scratch_dir("governor-units-hostile");
  const auto path = dir / "peaks.json";
  for (const char* entry :
       {R"("unit_ms": [1, 2])", R"("unit_ms": {"a.cu": -1})", R"("unit_ms": {"a.cu": "slow"})",
        R"("unit_ms": {"a.cu": 99999999999999})", R"("unit_ms": {"": 1})"}) {
    write_profile_text(
        path,
        std::string(R"({"schema": "tailor.governor-peaks/1", "entries": {"k": {"peaks": {}, )") +
            entry + "}}}");
    auto got = read_governor_profile(path.string(), "k");
    ASSERT_FALSE(got) << entry;
    EXPECT_NE(got.error().message.find(path.string()), std::string::npos) << got.error().message;
    EXPECT_NE(got.error().message.find("unit_ms"), std::string::npos) << got.error().message;
  }
}
