// The wheelhouse: target set names, the index pages (relative links, sha256, PEP 658/714
// attributes, PEP 691 JSON), the state file's checks, and publish over real files in a
// temporary folder (added, the same bytes again, other bytes refused, bad input, foreign).
#include "wheelhouse/wheelhouse.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "formats/zip_writer.h"
#include "util/files.h"
#include "wheelhouse/index_pages.h"

namespace tailor::wheelhouse {
namespace {

namespace fs = std::filesystem;

class WheelhouseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("tailor-wheelhouse-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir / "in");
  }
  void TearDown() override { fs::remove_all(m_dir); }

  // A wheel `file` in in/<sub>/ with METADATA and, unless `provenance` is empty, tailor's
  // provenance; `payload` makes the bytes differ.
  std::string wheel(const std::string& file, const std::string& provenance,
                    const std::string& payload = "x = 1\n", const std::string& sub = "a") {
    auto name = file.substr(0, file.find('-'));
    auto rest = file.substr(name.size() + 1);
    auto version = rest.substr(0, rest.find('-'));
    auto di = name + "-" + version + ".dist-info/";
    std::vector<formats::ZipWriteEntry> members = {
        {name + "/__init__.py", payload},
        {di + "WHEEL", std::string("Wheel-Version: 1.0\nTag: py3-none-any\n")},
        {di + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version +
                              "\nRequires-Python: >=3.9\n"}};
    if (!provenance.empty()) members.push_back({di + "tailor-provenance.json", provenance});
    fs::create_directories(m_dir / "in" / sub);
    auto path = (m_dir / "in" / sub / file).string();
    auto written = formats::write_zip(path, members);
    EXPECT_TRUE(written) << (written ? "" : written.error().message);
    return path;
  }
  static std::string provenance(const std::string& package, const std::string& targets) {
    return R"j({"package": ")j" + package + R"j(", "targets": )j" + targets +
           R"j(, "source": {"kind": "example", "tree-sha256": "ab12"},
              "toolchain": {"torch": "2.11.0+cu130 (CUDA 13.0)", "python": "3.12.3"}})j";
  }
  std::string house() const { return (m_dir / "house").string(); }
  fs::path m_dir;
};

TEST(TargetSetName, OrdersByNumberAndJoins) {
  EXPECT_EQ(*target_set_name({"sm_90"}), "sm90");
  EXPECT_EQ(*target_set_name({"sm_100", "sm_80", "sm_90a"}), "sm80-sm90a-sm100");
  EXPECT_EQ(*target_set_name({"sm_90", "sm_90"}), "sm90");
  EXPECT_EQ(*target_set_name({}), "cpu");
  EXPECT_FALSE(target_set_name({"../etc"}));
  EXPECT_FALSE(target_set_name({"sm_90/x"}));
  EXPECT_FALSE(target_set_name({"_"}));
}

TEST(ProjectName, Pep508) {
  EXPECT_TRUE(valid_project_name("torch_scatter"));
  EXPECT_TRUE(valid_project_name("a.b-c"));
  EXPECT_FALSE(valid_project_name(".."));
  EXPECT_FALSE(valid_project_name("a/b"));
  EXPECT_FALSE(valid_project_name("-a"));
  EXPECT_FALSE(valid_project_name(""));
}

WheelEntry entry(const std::string& file, const std::string& set) {
  WheelEntry e;
  e.file = file;
  e.project = "fused-ops";
  e.version = "0.1.0";
  e.target_set = set;
  e.targets = {"sm_" + set.substr(2)};
  e.sha256 = std::string(64, 'a');
  e.metadata_sha256 = std::string(64, 'b');
  e.requires_python = ">=3.9";
  e.size = 10;
  return e;
}

TEST(IndexPages, RelativeLinksWithHashesAndMetadata) {
  auto pages = render_index("sm90", {entry("fused_ops-0.1.0-py3-none-any.whl", "sm90"),
                                     entry("fused_ops-0.1.0-py3-none-any.whl", "sm80")});
  ASSERT_EQ(pages.size(), 4u);
  EXPECT_EQ(pages[0].path, "sm90/simple/fused-ops/index.html");
  const std::string& html = pages[0].text;
  EXPECT_NE(html.find("href=\"../../../files/sm90/fused_ops-0.1.0-py3-none-any.whl#sha256=" +
                      std::string(64, 'a') + "\""),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("data-core-metadata=\"sha256=" + std::string(64, 'b') + "\""),
            std::string::npos);
  EXPECT_NE(html.find("data-dist-info-metadata=\"sha256="), std::string::npos);
  EXPECT_NE(html.find("data-requires-python=\"&gt;=3.9\""), std::string::npos);
  EXPECT_EQ(html.find("files/sm80"), std::string::npos);  // another set's wheel is not listed
  auto j = nlohmann::json::parse(pages[1].text);
  EXPECT_EQ(j["meta"]["api-version"], "1.1");
  ASSERT_EQ(j["files"].size(), 1u);
  EXPECT_EQ(j["files"][0]["hashes"]["sha256"], std::string(64, 'a'));
  EXPECT_EQ(j["files"][0]["core-metadata"]["sha256"], std::string(64, 'b'));
  EXPECT_EQ(j["versions"], nlohmann::json::array({"0.1.0"}));
  EXPECT_EQ(pages[2].path, "sm90/simple/index.html");
  EXPECT_NE(pages[2].text.find("<a href=\"fused-ops/\">fused-ops</a>"), std::string::npos);
  auto root = nlohmann::json::parse(pages[3].text);
  EXPECT_EQ(root["projects"][0]["name"], "fused-ops");
}

TEST(StateFile, RefusesNamesThatLeaveTheWheelhouse) {
  auto good = to_json(entry("fused_ops-0.1.0-py3-none-any.whl", "sm90"));
  EXPECT_TRUE(entry_from_json(good, "w"));
  auto bad_file = good;
  bad_file["file"] = "../../evil-0.1-py3-none-any.whl";
  EXPECT_FALSE(entry_from_json(bad_file, "w"));
  auto bad_set = good;
  bad_set["target_set"] = "../x";
  EXPECT_FALSE(entry_from_json(bad_set, "w"));
  auto bad_hash = good;
  bad_hash["sha256"] = "zz";
  EXPECT_FALSE(entry_from_json(bad_hash, "w"));
}

TEST_F(WheelhouseTest, PublishesAndKeepsTheIndex) {
  auto a = wheel("fused_ops-0.1.0-py3-none-any.whl", provenance("fused_ops", R"(["sm_90"])"));
  auto r = publish({a}, house(), ForeignWheels::refused);
  ASSERT_EQ(r.failure, PublishFailure::none) << r.message;
  ASSERT_EQ(r.wheels.size(), 1u);
  EXPECT_EQ(r.wheels[0].outcome, PublishOutcome::added);
  EXPECT_EQ(r.wheels[0].entry.target_set, "sm90");
  const fs::path h(house());
  EXPECT_TRUE(fs::is_regular_file(h / "files/sm90/fused_ops-0.1.0-py3-none-any.whl"));
  auto metadata = read_file((h / "files/sm90/fused_ops-0.1.0-py3-none-any.whl.metadata").string());
  ASSERT_TRUE(metadata);
  EXPECT_EQ(metadata->rfind("Metadata-Version: 2.1\nName: fused_ops", 0), 0u);
  EXPECT_TRUE(fs::is_regular_file(h / "sm90/simple/fused-ops/index.html"));

  // The same bytes again: nothing to do. Another target set of the same file name: its own index.
  auto again = publish({a}, house(), ForeignWheels::refused);
  ASSERT_EQ(again.failure, PublishFailure::none);
  EXPECT_EQ(again.wheels[0].outcome, PublishOutcome::already_published);
  auto b = wheel("fused_ops-0.1.0-py3-none-any.whl", provenance("fused_ops", R"(["sm_80"])"), "y\n",
                 "b");
  auto other_set = publish({b}, house(), ForeignWheels::refused);
  ASSERT_EQ(other_set.failure, PublishFailure::none) << other_set.message;
  auto listed = read_wheelhouse(house());
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 2u);
}

TEST_F(WheelhouseTest, OtherBytesUnderAPublishedNameAreRefusedAndChangeNothing) {
  auto a = wheel("fused_ops-0.1.0-py3-none-any.whl", provenance("fused_ops", R"(["sm_90"])"));
  ASSERT_EQ(publish({a}, house(), ForeignWheels::refused).failure, PublishFailure::none);
  auto state = read_file((fs::path(house()) / k_state_file).string());
  auto page = read_file((fs::path(house()) / "sm90/simple/fused-ops/index.html").string());
  auto tampered = wheel("fused_ops-0.1.0-py3-none-any.whl", provenance("fused_ops", R"(["sm_90"])"),
                        "z\n", "b");
  auto r = publish({tampered}, house(), ForeignWheels::refused);
  EXPECT_EQ(r.failure, PublishFailure::conflict);
  auto first = publish({a}, house(), ForeignWheels::refused).wheels.at(0).entry.sha256;
  EXPECT_NE(r.message.find(first), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find('\n'), std::string::npos);
  EXPECT_EQ(read_file((fs::path(house()) / k_state_file).string()), state);
  EXPECT_EQ(read_file((fs::path(house()) / "sm90/simple/fused-ops/index.html").string()), page);
}

TEST_F(WheelhouseTest, BadInputIsOneLineAndWritesNothing) {
  auto good = wheel("fused_ops-0.1.0-py3-none-any.whl", provenance("fused_ops", R"(["sm_90"])"));
  auto foreign = wheel("plain-1.0-py3-none-any.whl", "");
  std::ofstream((m_dir / "in/junk-1.0-py3-none-any.whl").string()) << "not a zip";
  auto bad_target = wheel("evil-1.0-py3-none-any.whl", provenance("evil", R"(["../../etc"])"));
  std::ofstream((m_dir / "in/notawheel.zip").string()) << "x";
  for (const std::string& input : {foreign, (m_dir / "in/junk-1.0-py3-none-any.whl").string(),
                                   bad_target, (m_dir / "in/notawheel.zip").string(),
                                   (m_dir / "in/missing-1.0-py3-none-any.whl").string()}) {
    auto r = publish({good, input}, house(), ForeignWheels::refused);
    EXPECT_EQ(r.failure, PublishFailure::bad_input) << input;
    EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
    EXPECT_FALSE(fs::exists(house())) << input;
  }
  std::ofstream((m_dir / "file").string()) << "x";
  auto to_file = publish({good}, (m_dir / "file").string(), ForeignWheels::refused);
  EXPECT_EQ(to_file.failure, PublishFailure::bad_input);
}

TEST_F(WheelhouseTest, ForeignWheelsWhenAllowedGoUnderTheirDeviceCode) {
  auto foreign = wheel("plain-1.0-py3-none-any.whl", "");
  auto r = publish({foreign}, house(), ForeignWheels::allowed);
  ASSERT_EQ(r.failure, PublishFailure::none) << r.message;
  EXPECT_TRUE(r.wheels[0].entry.foreign);
  EXPECT_EQ(r.wheels[0].entry.target_set, "cpu");
}

TEST_F(WheelhouseTest, ConcurrentPublishersBothLand) {
  std::vector<std::string> wheels;
  for (int i = 0; i < 8; ++i)
    wheels.push_back(wheel("pkg" + std::to_string(i) + "-1.0-py3-none-any.whl",
                           provenance("pkg" + std::to_string(i), R"(["sm_90"])")));
  std::vector<std::thread> threads;
  std::vector<PublishResult> results(wheels.size());
  for (size_t i = 0; i < wheels.size(); ++i)
    threads.emplace_back(
        [&, i] { results[i] = publish({wheels[i]}, house(), ForeignWheels::refused); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r.failure, PublishFailure::none) << r.message;
  auto listed = read_wheelhouse(house());
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), wheels.size());
  auto root = read_file((fs::path(house()) / "sm90/simple/index.json").string());
  ASSERT_TRUE(root);
  EXPECT_EQ(nlohmann::json::parse(*root)["projects"].size(), wheels.size());
}

TEST(WheelhousePage, PackagesByTargetsEscaped) {
  auto e = entry("fused_ops-0.1.0-py3-none-any.whl", "sm90");
  e.provenance = {{"toolchain", {{"torch", "2.11.0+cu130 (CUDA 13.0)"}, {"python", "3.12<b>"}}}};
  auto page = render_wheelhouse_html({e}, "/srv/<house>");
  EXPECT_NE(page.find("torch 2.11.0+cu130 · CUDA 13.0 · Python 3.12&lt;b&gt;"), std::string::npos)
      << page;
  EXPECT_EQ(page.find("<house>"), std::string::npos);
  EXPECT_NE(page.find(">sm90</a></th>"), std::string::npos);
}

}  // namespace
}  // namespace tailor::wheelhouse
