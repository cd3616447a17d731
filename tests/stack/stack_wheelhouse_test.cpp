// `tailor stack --wheelhouse`: a package the stack would build from its sdist is prebuilt when
// the wheelhouse publishes the wheel of that build's inputs (the sdist's sha256, the GPUs'
// targets, torch, Python, recipe); any other input keeps it a build, naming the difference.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "formats/zip_writer.h"
#include "stack/stack_context.h"
#include "support/fake_host.h"
#include "wheelhouse/wheelhouse.h"

namespace tailor::stack {
namespace {

namespace fs = std::filesystem;

const std::string k_sdist_sha(64, 'c');

class StackWheelhouse : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("tailor-stack-wh-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    const std::string provenance =
        R"j({"package": "torch_scatter", "recipe": "torch-scatter", "targets": ["sm_86"],
        "source": {"kind": "sdist", "sdist-sha256": ")j" +
        k_sdist_sha + R"j("}, "toolchain": {"torch": "2.11.0+cu130 (CUDA 13.0)",
        "python": "3.12.3", "nvcc": "13.0.88"}})j";
    const std::string whl = (m_dir / "torch_scatter-2.1.2-cp312-cp312-linux_x86_64.whl").string();
    ASSERT_TRUE(formats::write_zip(
        whl, {{"torch_scatter/__init__.py", std::string("x = 1\n")},
              {"torch_scatter-2.1.2.dist-info/METADATA",
               std::string("Metadata-Version: 2.1\nName: torch_scatter\nVersion: 2.1.2\n")},
              {"torch_scatter-2.1.2.dist-info/tailor-provenance.json", provenance}}));
    auto r = wheelhouse::publish({whl}, house(), wheelhouse::ForeignWheels::refused);
    ASSERT_EQ(r.failure, wheelhouse::PublishFailure::none) << r.message;
    m_sha = r.wheels.at(0).entry.sha256;
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string house() const { return (m_dir / "house").string(); }

  // One row to build, decided against the wheelhouse for GPUs `gpus` and torch `torch`.
  Row decided(const std::vector<std::string>& gpus, const std::string& torch,
              const std::string& python = "3.12",
              std::optional<cuda::CudaVersion> torch_cuda = std::nullopt) {
    StackRequest request;
    request.wheelhouse = house();
    test::FakeCommandRunner runner;
    Context c{request, runner, {}, {}, {}, {}, {}, {}, {}};
    for (const auto& g : gpus) c.target.gpus.push_back(*cuda::parse_compute_capability(g));
    c.target.python = python;
    c.result.torch.version = torch;
    // The CUDA of the torch, as the stack reads it (from its +cuNNN label, or given).
    c.result.torch.cuda = torch_cuda;
    if (auto cu = torch.find("+cu"); cu != std::string::npos)
      c.result.torch.cuda = *cuda::parse_cuda_version(torch.substr(cu + 1));
    std::vector<Row> rows(1);
    Row& row = rows[0];
    row.name = row.key = "torch-scatter";
    row.version = "2.1.2";
    row.kind = Kind::source;
    row.outcome = Outcome::build;
    row.buildable = "yes";
    row.recipe = "torch-scatter";
    row.sdist_sha256 = k_sdist_sha;
    row.sdist_file = "/cache/torch_scatter-2.1.2.tar.gz";
    row.reason = "no wheel for the target; build from torch_scatter-2.1.2.tar.gz";
    auto taken = take_wheelhouse(c, rows);
    EXPECT_TRUE(taken) << taken.error().message;
    return rows[0];
  }

  fs::path m_dir;
  std::string m_sha;
};

TEST_F(StackWheelhouse, ThePublishedWheelOfTheSameInputsIsPrebuilt) {
  Row row = decided({"8.6"}, "2.11.0+cu130");
  EXPECT_EQ(row.outcome, Outcome::prebuilt) << row.reason;
  EXPECT_EQ(row.wheel_sha256, m_sha);
  EXPECT_EQ(row.wheel_url,
            "file://" + house() + "/files/sm86/torch_scatter-2.1.2-cp312-cp312-linux_x86_64.whl");
  EXPECT_EQ(row.wheelhouse, house());
  EXPECT_NE(row.reason.find("in the wheelhouse"), std::string::npos) << row.reason;
  EXPECT_NE(row.reason.find("torch_scatter-2.1.2.tar.gz for sm86"), std::string::npos)
      << row.reason;
  // The lock keeps where it came from.
  StackResult r;
  r.rows = {row};
  auto back = read_lock(render_lock(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->rows.at(0).wheelhouse, house());
}

TEST_F(StackWheelhouse, AnyOtherInputStaysABuildAndSaysWhy) {
  Row other_gpu = decided({"9.0"}, "2.11.0+cu130");
  EXPECT_EQ(other_gpu.outcome, Outcome::build);
  EXPECT_NE(other_gpu.reason.find("other targets"), std::string::npos) << other_gpu.reason;
  Row two_gpus = decided({"8.6", "9.0"}, "2.11.0+cu130");
  EXPECT_EQ(two_gpus.outcome, Outcome::build);
  Row other_torch = decided({"8.6"}, "2.10.0+cu128");
  EXPECT_EQ(other_torch.outcome, Outcome::build);
  EXPECT_NE(other_torch.reason.find("torch 2.11.0+cu130 vs 2.10.0+cu128"), std::string::npos)
      << other_torch.reason;
  // The same release without the label (the default index's, the issue's "torch 2.11.0+cu130
  // vs 2.11.0"), CUDA 13.0 read from its metadata: the wheel's pin, torch==2.11.0, takes it;
  // for another CUDA, or none, it is another build.
  Row unlabelled = decided({"8.6"}, "2.11.0", "3.12", cuda::CudaVersion{13, 0});
  EXPECT_EQ(unlabelled.outcome, Outcome::prebuilt) << unlabelled.reason;
  Row other_cuda = decided({"8.6"}, "2.11.0", "3.12", cuda::CudaVersion{12, 8});
  EXPECT_EQ(other_cuda.outcome, Outcome::build);
  EXPECT_NE(other_cuda.reason.find("for CUDA 13.0 vs for 12.8"), std::string::npos)
      << other_cuda.reason;
  Row other_python = decided({"8.6"}, "2.11.0+cu130", "3.11");
  EXPECT_EQ(other_python.outcome, Outcome::build);
  EXPECT_NE(other_python.reason.find("Python"), std::string::npos) << other_python.reason;
}

TEST(StackWheelhouseTargets, OneSassTargetPerGpu) {
  Target t;
  t.gpus = {*cuda::parse_compute_capability("9.0"), *cuda::parse_compute_capability("8.6"),
            *cuda::parse_compute_capability("9.0")};
  EXPECT_EQ(gpu_build_targets(t), (std::vector<std::string>{"sm_86", "sm_90"}));
}

}  // namespace
}  // namespace tailor::stack
