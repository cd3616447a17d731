#include "cache/sccache_dist.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::cache::dist;

namespace {
std::string dist_data_file(const std::string& name) {
  std::ifstream in(std::string(TAILOR_SOURCE_DIR) + "/tests/cache/data/" + name);
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(SccacheDist, ParsesRecordedStatsOfACudaAndACppCompile) {
  auto s = parse_dist_stats_json(dist_data_file("sccache_dist_stats_cu_cpp.json"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->compilations, 6u);
  EXPECT_EQ(s->dist_compiles, 5u);
  EXPECT_EQ(s->dist_errors, 0u);
  ASSERT_EQ(s->per_server.size(), 1u);
  EXPECT_EQ(s->per_server.at("127.0.0.1:10501"), 5u);
}

TEST(SccacheDist, ParsesRecordedStatsOfTheExampleKernel) {
  auto s = parse_dist_stats_json(dist_data_file("sccache_dist_stats_nvcc_example.json"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->compilations, 5u);
  EXPECT_EQ(s->dist_compiles, 4u);
  EXPECT_EQ(s->per_server.at("127.0.0.1:10702"), 4u);
  // One local run (the nvcc driver) is said in the notes.
  auto notes = dist_notes(*s);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("1 compiler run stayed"), std::string::npos) << notes[0];
}

TEST(SccacheDist, StatsDeltaIsPerServerAndClamped) {
  DistStats before, after;
  before.compilations = 4;
  before.per_server = {{"a:1", 2}, {"b:2", 5}};
  after.compilations = 10;
  after.dist_errors = 1;
  after.per_server = {{"a:1", 6}, {"b:2", 5}, {"c:3", 1}};
  DistStats d = dist_stats_delta(before, after);
  EXPECT_EQ(d.compilations, 6u);
  EXPECT_EQ(d.dist_compiles, 5u);
  EXPECT_EQ(d.dist_errors, 1u);
  EXPECT_EQ(d.per_server.size(), 2u);  // b:2 sent nothing during the build
  EXPECT_EQ(dist_stats_delta(after, before).compilations, 0u);
}

TEST(SccacheDist, StatsWithoutDistAreZeroAndBadInputIsAnError) {
  auto s =
      parse_dist_stats_json(R"({"stats":{"compilations":3,"dist_compiles":{},"dist_errors":0}})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->dist_compiles, 0u);
  auto notes = dist_notes(*s);
  EXPECT_NE(notes.back().find("nothing was distributed"), std::string::npos);
  EXPECT_FALSE(parse_dist_stats_json("not json"));
  EXPECT_FALSE(parse_dist_stats_json(R"({"stats":{"dist_compiles":7}})"));
  EXPECT_FALSE(parse_dist_stats_json(R"([1,2])"));
}

TEST(SccacheDist, SchedulerStatusAndDistStatus) {
  auto s = parse_scheduler_status_json(R"({"num_servers":2,"num_cpus":4,"in_progress":1})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->num_servers, 2u);
  EXPECT_EQ(s->num_cpus, 4u);
  // Real `sccache --dist-status` lines (0.16.0).
  auto ok = parse_sccache_dist_status(
      R"({"SchedulerStatus":["http://127.0.0.1:10600/",{"num_servers":1,"num_cpus":2,"in_progress":0}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->num_servers, 1u);
  auto down = parse_sccache_dist_status(
      R"({"NotConnected":["http://127.0.0.1:10699/","enabled, not connected, will retry in 30.0s"]})");
  ASSERT_FALSE(down);
  EXPECT_NE(down.error().message.find("NotConnected: enabled, not connected"), std::string::npos)
      << down.error().message;
  auto off = parse_sccache_dist_status(R"({"Disabled":"disabled"})");
  ASSERT_FALSE(off);
  EXPECT_NE(off.error().message.find("Disabled"), std::string::npos);
}

TEST(SccacheDist, RenderedConfigsParseBackWithTheirValues) {
  // A hostile path and token: quotes and backslashes stay inside their strings.
  std::string token = "ab\"c\\d";
  auto sched = toml::parse(render_scheduler_config("127.0.0.1:10600", token));
  EXPECT_EQ(sched["public_addr"].value_or(std::string()), "127.0.0.1:10600");
  EXPECT_EQ(sched["client_auth"]["type"].value_or(std::string()), "token");
  EXPECT_EQ(sched["client_auth"]["token"].value_or(std::string()), token);
  EXPECT_EQ(sched["server_auth"]["token"].value_or(std::string()), token);

  ServerConfigInput in{"/s/tool\"chains",        "/s/build", "/usr/bin/bwrap", "127.0.0.1:10601",
                       "http://127.0.0.1:10600", token};
  auto server = toml::parse(render_server_config(in));
  EXPECT_EQ(server["cache_dir"].value_or(std::string()), "/s/tool\"chains");
  EXPECT_EQ(server["public_addr"].value_or(std::string()), "127.0.0.1:10601");
  EXPECT_EQ(server["scheduler_url"].value_or(std::string()), "http://127.0.0.1:10600");
  EXPECT_EQ(server["builder"]["type"].value_or(std::string()), "overlay");
  EXPECT_EQ(server["builder"]["build_dir"].value_or(std::string()), "/s/build");
  EXPECT_EQ(server["builder"]["bwrap_path"].value_or(std::string()), "/usr/bin/bwrap");
  EXPECT_EQ(server["scheduler_auth"]["token"].value_or(std::string()), token);

  std::string client = render_client_config("http://127.0.0.1:10600", token);
  auto c = parse_client_config(client, "client.toml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->scheduler_url, "http://127.0.0.1:10600");
  EXPECT_EQ(c->token, token);
}

TEST(SccacheDist, ClientConfigErrorsNameFileAndKey) {
  auto bad = parse_client_config("[dist\nscheduler_url = 1", "c.toml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("c.toml:1:", 0), 0u) << bad.error().message;
  auto no_url = parse_client_config("[dist]\ntoolchains = []\n", "c.toml");
  ASSERT_FALSE(no_url);
  EXPECT_NE(no_url.error().message.find("dist.scheduler_url"), std::string::npos);
  auto not_url = parse_client_config("[dist]\nscheduler_url = \"10.0.0.1\"\n", "c.toml");
  ASSERT_FALSE(not_url);
  auto empty_token = parse_client_config(
      "[dist]\nscheduler_url = \"http://h:1\"\n[dist.auth]\ntype = \"token\"\ntoken = \"\"\n",
      "c.toml");
  ASSERT_FALSE(empty_token);
  EXPECT_NE(empty_token.error().message.find("dist.auth.token"), std::string::npos);
  auto insecure = parse_client_config("[dist]\nscheduler_url = \"http://h:1\"\n", "c.toml");
  ASSERT_TRUE(insecure);
  EXPECT_TRUE(insecure->token.empty());
}

TEST(SccacheDist, ConfigPathFromFolderFileOrVariable) {
  auto dir = tailor::test::scratch_dir("sccache-dist-config");
  std::ofstream(dir / "client.toml") << render_client_config("http://127.0.0.1:1", "t");
  auto from_dir = resolve_client_config_path(dir.string(), nullptr);
  ASSERT_TRUE(from_dir) << from_dir.error().message;
  EXPECT_EQ(*from_dir, (dir / "client.toml").string());
  auto from_env = resolve_client_config_path("", dir.string().c_str());
  ASSERT_TRUE(from_env);
  EXPECT_EQ(*from_env, *from_dir);
  auto missing = resolve_client_config_path((dir / "nope").string(), nullptr);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("tailor dist up"), std::string::npos);
}

TEST(SccacheDist, UnreachableSchedulerIsAnErrorNotAHang) {
  auto port = free_loopback_port();
  ASSERT_TRUE(port);
  auto st = scheduler_status("http://127.0.0.1:" + std::to_string(*port));
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cannot connect"), std::string::npos) << st.error().message;
  EXPECT_FALSE(http_request("ftp://x", "GET", "/", {}, std::chrono::milliseconds(100)));
}

TEST(SccacheDist, StateFolderWithoutProcesses) {
  auto dir = tailor::test::scratch_dir("sccache-dist-state");
  std::ofstream(dir / "scheduler.pid") << "999999999 1\n";  // no such process
  std::ofstream(dir / "other.pid") << "1 1\n";              // not ours: ignored
  auto procs = processes_of(dir.string());
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].name, "scheduler");
  EXPECT_FALSE(procs[0].alive);
  EXPECT_TRUE(down(dir.string(), std::chrono::milliseconds(10)).empty());
  EXPECT_FALSE(std::filesystem::exists(dir / "scheduler.pid"));  // a stale pid file is removed
  EXPECT_TRUE(std::filesystem::exists(dir / "other.pid"));
}
