#include "cuda/nvcc_capabilities.h"

#include <gtest/gtest.h>

#include <map>

#include "cuda/arch_spec.h"
#include "util/process.h"
#include "util/strings.h"

using namespace tailor;
using namespace tailor::cuda;

namespace {
class FakeNvcc : public CommandRunner {
 public:
  std::map<std::string, CommandResult> answers;
  CommandResult run(const CommandSpec& spec) override {
    auto it = answers.find(spec.argv.at(1));
    if (it == answers.end()) return {};
    return it->second;
  }
};

CommandResult ok(std::string out) {
  CommandResult r;
  r.started = true;
  r.exit_code = 0;
  r.out = std::move(out);
  return r;
}

std::string problems(const char* spec, const char* cuda) {
  auto caps = nvcc_capabilities_from_table(cuda);
  if (!caps) return "error: " + caps.error().message;
  return join(unsupported_by(*parse_arch_spec(spec), *caps), " | ");
}
}  // namespace

TEST(NvccTable, VersionsAndTargets) {
  EXPECT_EQ(join(to_strings(known_cuda_versions()), " "),
            "11.8 12.0 12.1 12.2 12.3 12.4 12.5 12.6 12.8 12.9 13.0 13.2");
  auto c130 = nvcc_capabilities_from_table("13.0.88");
  ASSERT_TRUE(c130);
  EXPECT_EQ(c130->cuda_version, (CudaVersion{13, 0}));
  EXPECT_EQ(c130->source, "table");
  EXPECT_TRUE(c130->can_produce(sass({11, 0}, ArchVariant::f)));
  EXPECT_TRUE(c130->can_produce(ptx({12, 1})));
  EXPECT_FALSE(c130->can_produce(sass({7, 0})));
  EXPECT_FALSE(c130->can_produce(sass({10, 1})));
  auto c126 = nvcc_capabilities_from_table("12.6");
  EXPECT_TRUE(c126->can_produce(sass({9, 0}, ArchVariant::a)));
  EXPECT_FALSE(c126->can_produce(sass({10, 0})));
  EXPECT_TRUE(nvcc_capabilities_from_table("11.8")->can_produce(sass({3, 5})));
  EXPECT_FALSE(nvcc_capabilities_from_table("12.0")->can_produce(sass({3, 7})));
  EXPECT_TRUE(nvcc_capabilities_from_table("12.8")->can_produce(sass({10, 1}, ArchVariant::a)));
  EXPECT_FALSE(nvcc_capabilities_from_table("12.8")->can_produce(sass({10, 0}, ArchVariant::f)));
  EXPECT_TRUE(nvcc_capabilities_from_table("12.9")->can_produce(sass({10, 0}, ArchVariant::f)));
  EXPECT_FALSE(nvcc_capabilities_from_table("12.7"));
  EXPECT_FALSE(nvcc_capabilities_from_table("thirteen"));
  EXPECT_FALSE(nvcc_capabilities_from_table("13"));
}

TEST(NvccTable, UnsupportedMessages) {
  EXPECT_EQ(problems("6.0", "13.0"), "CUDA 13.0 cannot target sm_60; its lowest is 7.5 (sm_75)");
  EXPECT_EQ(problems("10.0", "12.6"), "CUDA 12.6 cannot target sm_100; its highest is 9.0 (sm_90)");
  EXPECT_EQ(problems("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "13.0"), "");
  EXPECT_EQ(problems("sm_100f", "12.8"), "CUDA 12.8 cannot target sm_100f");
  EXPECT_EQ(problems("Volta", "13.0"),
            "CUDA 13.0 cannot target sm_70; its lowest is 7.5 (sm_75) | "
            "CUDA 13.0 cannot target compute_70; its lowest is 7.5 (compute_75)");
}

TEST(NvccCapabilities, FromFakeNvccAddsVariantsFromTable) {
  FakeNvcc nvcc;
  nvcc.answers["--version"] =
      ok("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n");
  nvcc.answers["--list-gpu-code"] = ok("sm_75\nsm_80\nsm_90\nsm_120\n");
  nvcc.answers["--list-gpu-arch"] = ok("compute_75\ncompute_80\ncompute_90\ncompute_120\n");
  auto caps = nvcc_capabilities_from_nvcc("nvcc", nvcc);
  ASSERT_TRUE(caps) << caps.error().message;
  EXPECT_EQ(caps->cuda_version, (CudaVersion{13, 0}));
  EXPECT_EQ(caps->source, "nvcc --list-gpu-code + table for a/f variants");
  std::vector<std::string> sass_names;
  for (auto& t : caps->sass) sass_names.push_back(t.name());
  EXPECT_EQ(join(sass_names, " "), "sm_75 sm_80 sm_90 sm_90a sm_120 sm_120a sm_120f");
  EXPECT_FALSE(caps->can_produce(sass({8, 6})));
}

TEST(NvccCapabilities, FakeNvccFailures) {
  FakeNvcc missing;
  EXPECT_FALSE(nvcc_capabilities_from_nvcc("nvcc", missing));
  FakeNvcc garbled;
  garbled.answers["--version"] = ok("something else\n");
  EXPECT_FALSE(nvcc_capabilities_from_nvcc("nvcc", garbled));
  FakeNvcc empty;
  empty.answers["--version"] = ok("Cuda compilation tools, release 12.4, V12.4.131\n");
  empty.answers["--list-gpu-code"] = ok("");
  empty.answers["--list-gpu-arch"] = ok("");
  EXPECT_FALSE(nvcc_capabilities_from_nvcc("nvcc", empty));
}

// The table row for the installed nvcc must agree with what it says about itself.
TEST(NvccCapabilities, RealNvccAgreesWithTable) {
  std::string nvcc = find_in_path("nvcc");
  if (nvcc.empty()) GTEST_SKIP() << "no nvcc on PATH";
  SystemCommandRunner runner;
  auto real = nvcc_capabilities_from_nvcc(nvcc, runner);
  ASSERT_TRUE(real) << real.error().message;
  auto table = nvcc_capabilities_from_table(real->cuda_version);
  if (!table) GTEST_SKIP() << "CUDA " << real->cuda_version.to_string() << " not in the table";
  EXPECT_EQ(real->sass, table->sass);
  EXPECT_EQ(real->ptx, table->ptx);
}
