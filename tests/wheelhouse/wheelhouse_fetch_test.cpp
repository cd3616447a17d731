// Matching a build's inputs against published wheels, reading a wheelhouse location and a
// against the index's sha256; a tampered file, a link out of the wheelhouse, refused.
#include "wheelhouse/wheelhouse_fetch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "formats/zip_writer.h"
#include "util/files.h"
#include "wheelhouse/wheelhouse.h"
#include "wheelhouse/wheelhouse_store.h"

namespace tailor::wheelhouse {
namespace {

namespace fs = std::filesystem;

/// The wheelhouse at `location` opened as a build opens it, then searched.
Expected<std::optional<FetchedWheel>> fetch_at(const std::string& location,
                                               const BuildInputs& inputs,
                                               const std::string& dest_dir, std::string& why_not) {
  TAILOR_TRY(store, open_store(location));
  return fetch_matching_wheel(*store, inputs, dest_dir, why_not);
}

const char* k_provenance = R"j({"package": "fused_ops", "recipe": "generic", "targets": ["sm_90"],
  "source": {"kind": "example", "tree-sha256": "ab12"},
  "toolchain": {"torch": "2.11.0+cu130 (CUDA 13.0)", "python": "3.12.3", "nvcc": "13.0.88"}})j";

BuildInputs inputs() {
  return {"fused-ops", "ab12",   {"sm_90"}, "2.11.0+cu130 (CUDA 13.0)",
          "13.0.48",   "3.12.9", "generic", ""};
}

WheelEntry published() {
  WheelEntry e;
  e.file = "fused_ops-0.1.0-py3-none-any.whl";
  e.project = "fused-ops";
  e.targets = {"sm_90"};
  e.target_set = "sm90";
  e.provenance = nlohmann::json::parse(k_provenance);
  return e;
}

TEST(InputMismatch, EveryInputCounts) {
  EXPECT_EQ(input_mismatch(published(), inputs()), "");  // nvcc and Python by major.minor
  auto in = inputs();
  in.digest = "cd34";
  EXPECT_NE(input_mismatch(published(), in).find("source"), std::string::npos);
  in = inputs();
  in.targets = {"sm_80"};
  EXPECT_EQ(input_mismatch(published(), in), "other targets");
  in = inputs();
  in.torch = "2.10.0+cu128 (CUDA 12.8)";
  EXPECT_NE(input_mismatch(published(), in).find("torch"), std::string::npos);
  in = inputs();
  in.nvcc = "12.8.93";
  EXPECT_NE(input_mismatch(published(), in).find("CUDA"), std::string::npos);
  in = inputs();
  in.python = "3.11.7";
  EXPECT_NE(input_mismatch(published(), in).find("Python"), std::string::npos);
  in = inputs();
  in.recipe = "flash-attn";
  EXPECT_NE(input_mismatch(published(), in).find("recipe"), std::string::npos);
  // A --profile compiles other kernels: a wheel of the whole recipe is not one of a profile.
  in = inputs();
  in.profile = "minimal";
  EXPECT_EQ(input_mismatch(published(), in), "profile '' vs 'minimal'");
  in = inputs();
  in.package = "other";
  EXPECT_EQ(input_mismatch(published(), in), "another package");
  auto foreign = published();
  foreign.foreign = true;
  EXPECT_EQ(input_mismatch(foreign, inputs()), "not built by tailor");
}

// torch is matched against the wheel's pin (torch==<the public version it was built with>)
// and its CUDA: the issue's stack torch 2.11.0 from the default index (CUDA 13.0, read from its
// metadata) against a wheel built with 2.11.0+cu130 is the same build.
TEST(InputMismatch, AStackComparesTorchByThePinAndItsCudaAndNotTheCompiler) {
  auto in = inputs();
  in.torch = "2.11.0+cu130 (CUDA 13.0)";
  in.nvcc = "";
  EXPECT_EQ(stack_input_mismatch(published(), in), "");
  EXPECT_NE(input_mismatch(published(), in), "");  // a build compares the compiler too
  in.torch = "2.11.0 (CUDA 13.0)";
  EXPECT_EQ(stack_input_mismatch(published(), in), "");
  in.torch = "2.12.0 (CUDA 13.0)";
  EXPECT_EQ(stack_input_mismatch(published(), in),
            "torch 2.11.0+cu130 vs 2.12.0 (the wheel pins torch==2.11.0)");
  in.torch = "2.11.0+cu128 (CUDA 12.8)";
  EXPECT_EQ(stack_input_mismatch(published(), in), "torch 2.11.0+cu130 for CUDA 13.0 vs for 12.8");
  in.torch = "2.11.0+cpu";
  EXPECT_EQ(stack_input_mismatch(published(), in), "torch 2.11.0+cu130 for CUDA 13.0 vs for none");
  in = inputs();
  in.torch = "2.11.0+cu130 (CUDA 13.0)";
  in.targets = {"sm_80", "sm_90"};
  EXPECT_EQ(stack_input_mismatch(published(), in), "other targets");
}

TEST(WheelhouseStore, Locations) {
  EXPECT_EQ((*open_store("/srv/wh"))->describe(), "/srv/wh");
  EXPECT_EQ((*open_store("file:///srv/wh"))->describe(), "/srv/wh");
  EXPECT_EQ((*open_store("file:///srv/wh"))->origin("sm90/simple/index.json"),
            "/srv/wh/sm90/simple/index.json");
  EXPECT_FALSE(open_store("file://host/srv/wh"));
  EXPECT_EQ((*open_store("https://example.com/wh/"))->origin("files/sm90/a-1+cu130.whl"),
            "https://example.com/wh/files/sm90/a-1%2Bcu130.whl");
  EXPECT_FALSE(open_store("https://user:pw@example.com/wh"));
  EXPECT_FALSE(open_store("https://example.com/wh?x=1"));
  EXPECT_FALSE(open_store("ftp://example.com/wh"));
  EXPECT_EQ((*open_store("s3://bucket/wh?endpoint=http://127.0.0.1:9000"))->describe(),
            "s3://bucket/wh (endpoint http://127.0.0.1:9000)");
  EXPECT_EQ((*open_store("s3://bucket/wh?endpoint=http://127.0.0.1:9000"))->origin("a b"),
            "http://127.0.0.1:9000/bucket/wh/a%20b");
  EXPECT_EQ((*open_store("s3://bucket/wh"))->origin("wheelhouse.json"),
            "https://bucket.s3.amazonaws.com/wh/wheelhouse.json");
  EXPECT_FALSE(open_store("s3://B/wh"));
  EXPECT_FALSE(open_store("s3://bucket/wh?acl=public"));
}

TEST(ProjectIndex, LinksMustStayRelative) {
  const std::string sha(64, 'a');
  auto page = [&](const std::string& url) {
    return R"({"files": [{"filename": "a-1-py3-none-any.whl", "url": ")" + url +
           R"(", "hashes": {"sha256": ")" + sha + R"("}}]})";
  };
  auto ok = parse_project_index(page("../../../files/sm90/a-1-py3-none-any.whl"), "p");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ((*ok)[0].sha256, sha);
  EXPECT_FALSE(parse_project_index(page("https://evil.example/a-1-py3-none-any.whl"), "p"));
  EXPECT_FALSE(parse_project_index(page("//evil.example/a.whl"), "p"));
  EXPECT_FALSE(parse_project_index(page("/etc/passwd"), "p"));
  EXPECT_FALSE(parse_project_index(R"({"files": [{"filename": "a", "url": "a"}]})", "p"));
  EXPECT_FALSE(parse_project_index("[]", "p"));
}

class FetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("tailor-fetch-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "in");
    fs::create_directories(m_dir / "out");
    auto whl = (m_dir / "in/fused_ops-0.1.0-py3-none-any.whl").string();
    auto written = formats::write_zip(
        whl, {{"fused_ops/__init__.py", std::string("x = 1\n")},
              {"fused_ops-0.1.0.dist-info/METADATA",
               std::string("Metadata-Version: 2.1\nName: fused_ops\nVersion: 0.1.0\n")},
              {"fused_ops-0.1.0.dist-info/tailor-provenance.json", std::string(k_provenance)}});
    ASSERT_TRUE(written);
    auto r = publish({whl}, house(), ForeignWheels::refused);
    ASSERT_EQ(r.failure, PublishFailure::none) << r.message;
    m_sha256 = r.wheels.at(0).entry.sha256;
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string house() const { return (m_dir / "house").string(); }
  fs::path m_dir;
  std::string m_sha256;
};

TEST_F(FetchTest, TheMatchingWheelIsCopiedAndChecked) {
  std::string why;
  auto got = fetch_at("file://" + house(), inputs(), (m_dir / "out").string(), why);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_TRUE(got->has_value()) << why;
  EXPECT_EQ((*got)->sha256, m_sha256);
  EXPECT_TRUE(fs::is_regular_file(m_dir / "out/fused_ops-0.1.0-py3-none-any.whl"));
  auto other = inputs();
  other.targets = {"sm_80"};
  auto none = fetch_at(house(), other, (m_dir / "out").string(), why);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  EXPECT_NE(why.find("other targets"), std::string::npos) << why;
}

TEST_F(FetchTest, ATamperedWheelIsRefused) {
  std::ofstream(m_dir / "house/files/sm90/fused_ops-0.1.0-py3-none-any.whl", std::ios::app) << "x";
  std::string why;
  auto got = fetch_at(house(), inputs(), (m_dir / "out").string(), why);
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find(m_sha256), std::string::npos) << got.error().message;
  EXPECT_FALSE(fs::exists(m_dir / "out/fused_ops-0.1.0-py3-none-any.whl"));
}

TEST_F(FetchTest, AnIndexLinkOutOfItsPlaceIsRefused) {
  const auto page = m_dir / "house/sm90/simple/fused-ops/index.json";
  auto text = read_file(page.string());
  ASSERT_TRUE(text);
  auto j = nlohmann::json::parse(*text);
  j["files"][0]["url"] = "../../../../../etc/fused_ops-0.1.0-py3-none-any.whl";
  ASSERT_TRUE(write_file_atomic(page.string(), j.dump()));
  std::string why;
  auto got = fetch_at(house(), inputs(), (m_dir / "out").string(), why);
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("not to its place"), std::string::npos) << got.error().message;
}

TEST_F(FetchTest, AHugeIndexIsBounded) {
  const auto page = m_dir / "house/sm90/simple/fused-ops/index.json";
  fs::resize_file(page, uint64_t{17} << 20);
  std::string why;
  auto got = fetch_at(house(), inputs(), (m_dir / "out").string(), why);
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("larger than"), std::string::npos) << got.error().message;
}

}  // namespace
}  // namespace tailor::wheelhouse
