// The system-libraries variant (plan/system_libraries.h): which vendored libraries a tree
// lacks, the switches and packages the plan takes for them, and doctor's install command.
#include "plan/system_libraries.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "plan/torch_doctor.h"
#include "plan/torch_plan.h"
#include "plan/torch_plan_render.h"
#include "support/fixtures.h"
#include "support/host_reports.h"

namespace fs = std::filesystem;

namespace tailor::plan {
namespace {

// A tree shaped like Debian's pytorch_2.6.0+dfsg: CMake's Dependencies.cmake there, the
// vendored folders gone but sleef's (kept here to show a present one is left alone) and an
// empty cpuinfo (an uninitialised submodule).
struct Tree {
  test::TempDir dir{"systree"};
  Tree() {
    fs::create_directories(dir.path / "cmake");
    std::ofstream(dir.path / "cmake" / "Dependencies.cmake") << "# torch\n";
    fs::create_directories(dir.path / "third_party" / "cpuinfo");
    fs::create_directories(dir.path / "third_party" / "sleef");
    std::ofstream(dir.path / "third_party" / "sleef" / "CMakeLists.txt") << "project(sleef)\n";
  }
  std::string path() const { return dir.path.string(); }
};

TorchVariant variant_for(const std::string& source) {
  TorchVariant v;
  v.torch = "2.9.1";
  v.source_dir = source;
  v.cuda = cuda::CudaVersion{12, 8};
  v.python = "3.13";
  v.arch = {"7.5"};
  v.features["cudnn"] = false;
  return v;
}

const SystemLibraryUse* use_of(const TorchPlan& p, const std::string& name) {
  for (const auto& l : p.system_libraries)
    if (l.name == name) return &l;
  return nullptr;
}

TEST(SystemLibraries, EveryRowHasASystemCopyOrWhatToTurnOff) {
  const auto& libs = system_libraries();
  ASSERT_GE(libs.size(), 20u);
  bool onnx_namespace = false;
  for (const auto& l : libs) {
    EXPECT_EQ(l.folder.rfind("third_party/", 0), 0u) << l.name;
    EXPECT_NE(l.debian.empty(), l.without.empty()) << l.name;
    if (l.name == "onnx") onnx_namespace = l.env.count("ONNX_NAMESPACE") == 1;
  }
  EXPECT_TRUE(onnx_namespace);
}

TEST(SystemLibraries, OnlyAPyTorchShapedTreeIsLookedAt) {
  Tree t;
  auto missing = missing_vendored_folders(t.path());
  auto has = [&](const std::string& f) {
    return std::find(missing.begin(), missing.end(), f) != missing.end();
  };
  EXPECT_TRUE(has("third_party/cpuinfo"));   // empty
  EXPECT_TRUE(has("third_party/pybind11"));  // absent
  EXPECT_FALSE(has("third_party/sleef"));    // there
  // tests/torch_fixture and a folder that is not there are no PyTorch trees.
  EXPECT_TRUE(missing_vendored_folders((t.dir.path / "nowhere").string()).empty());
  fs::remove(t.dir.path / "cmake" / "Dependencies.cmake");
  EXPECT_TRUE(missing_vendored_folders(t.path()).empty());
}

TEST(SystemLibraries, ATreeWithoutItsFoldersTakesTheSystemsCopies) {
  Tree t;
  TorchPlan p = resolve_torch_plan(variant_for(t.path()), testing::x86_cuda128_host());
  for (const auto& pr : p.problems)
    if (pr.severity == ProblemSeverity::error) ADD_FAILURE() << pr.field << ": " << pr.message;
  const auto& e = p.env;
  EXPECT_EQ(e.at("USE_SYSTEM_CPUINFO"), "ON");
  EXPECT_EQ(e.at("USE_SYSTEM_PYBIND11"), "ON");
  EXPECT_EQ(e.at("BUILD_CUSTOM_PROTOBUF"), "OFF");
  EXPECT_EQ(e.at("USE_SYSTEM_ONNX"), "ON");
  EXPECT_EQ(e.at("ONNX_NAMESPACE"), "onnx");
  EXPECT_EQ(e.at("USE_SYSTEM_NCCL"), "ON");    // nccl on in a CUDA build
  EXPECT_EQ(e.count("USE_SYSTEM_SLEEF"), 0u);  // the tree has sleef
  EXPECT_EQ(e.count("USE_SYSTEM_LIBS"), 0u);
  // No system copy: what it serves is turned off, a default feature with a note.
  EXPECT_EQ(e.at("USE_ITT"), "OFF");
  EXPECT_EQ(e.at("USE_NNPACK"), "OFF");
  EXPECT_EQ(e.at("USE_FBGEMM"), "0");
  EXPECT_FALSE(p.features.at("fbgemm"));
  // cudnn is off: its frontend is not needed.
  EXPECT_EQ(use_of(p, "cudnn-frontend"), nullptr);
  ASSERT_NE(use_of(p, "cpuinfo"), nullptr);
  EXPECT_EQ(use_of(p, "cpuinfo")->reason, "third_party/cpuinfo is missing");
  EXPECT_EQ(use_of(p, "cpuinfo")->debian, std::vector<std::string>{"libcpuinfo-dev"});
  // fmt has no switch upstream: taken only as a patched tree does, with a warning.
  ASSERT_NE(use_of(p, "fmt"), nullptr);
  bool warned = false;
  for (const auto& pr : p.problems)
    warned = warned ||
             (pr.field == "third-party" && pr.message.find("third_party/fmt") != std::string::npos);
  EXPECT_TRUE(warned);
  EXPECT_NE(render_plan_text(p).find("system libs  "), std::string::npos);
}

TEST(SystemLibraries, SystemLibsTakesEverySwitchAndAskedFbgemmIsAnError) {
  Tree t;
  TorchVariant v = variant_for(t.path());
  v.system_libs = true;
  TorchPlan p = resolve_torch_plan(v, testing::x86_cuda128_host());
  EXPECT_EQ(p.env.at("USE_SYSTEM_LIBS"), "ON");
  EXPECT_EQ(p.env.at("USE_SYSTEM_SLEEF"), "ON");
  ASSERT_NE(use_of(p, "sleef"), nullptr);
  EXPECT_EQ(use_of(p, "sleef")->reason, "--system-libs");
  EXPECT_NE(plan_command_flags(p).find("--system-libs"), std::string::npos);
  v.features["fbgemm"] = true;
  TorchPlan asked = resolve_torch_plan(v, testing::x86_cuda128_host());
  EXPECT_TRUE(asked.has_errors());
  // A tree with every folder and no --system-libs: nothing changes.
  TorchVariant plain = variant_for((t.dir.path / "not-a-tree").string());
  TorchPlan none = resolve_torch_plan(plain, testing::x86_cuda128_host());
  EXPECT_TRUE(none.system_libraries.empty());
  EXPECT_EQ(none.env.count("USE_SYSTEM_CPUINFO"), 0u);
}

TEST(SystemLibraries, DoctorNamesTheMissingPackagesInOneInstallCommand) {
  Tree t;
  TorchPlan p = resolve_torch_plan(variant_for(t.path()), testing::x86_cuda128_host());
  DoctorFacts facts;
  facts.system_missing = missing_system_libraries(p.system_libraries, [](const std::string& f) {
    return f != "/usr/include/cpuinfo.h" && f != "/usr/bin/protoc";
  });
  ASSERT_EQ(facts.system_missing.missing.size(), 2u);
  EXPECT_EQ(facts.system_missing.install_command,
            "sudo apt-get install -y libcpuinfo-dev libprotobuf-dev protobuf-compiler");
  DoctorReport r = run_torch_doctor(p, testing::x86_cuda128_host(), facts);
  auto it = std::find_if(r.checks.begin(), r.checks.end(),
                         [](const DoctorCheck& c) { return c.name == "system-libs"; });
  ASSERT_NE(it, r.checks.end());
  EXPECT_FALSE(it->ok);
  EXPECT_FALSE(it->warning);
  EXPECT_NE(it->detail.find("cpuinfo (libcpuinfo-dev)"), std::string::npos) << it->detail;
  EXPECT_EQ(it->fix, facts.system_missing.install_command);
  EXPECT_FALSE(r.ok());
  facts.system_missing =
      missing_system_libraries(p.system_libraries, [](const std::string&) { return true; });
  DoctorReport fine = run_torch_doctor(p, testing::x86_cuda128_host(), facts);
  for (const auto& c : fine.checks) {
    if (c.name == "system-libs") {
      EXPECT_TRUE(c.ok) << c.detail;
    }
  }
}

// The plan's BLAS (OpenBLAS) comes from the system in any PyTorch tree: Debian's 2.6.0 tree
// stopped in CMake on "Could not find OpenBLAS" after 25 s, with doctor saying ready.
TEST(SystemLibraries, ThePlansBlasIsCheckedWithItsPackage) {
  Tree t;
  TorchPlan p = resolve_torch_plan(variant_for(t.path()), testing::x86_cuda128_host());
  ASSERT_EQ(p.blas, "OpenBLAS");
  const SystemLibraryUse* blas = use_of(p, "openblas");
  ASSERT_NE(blas, nullptr);
  EXPECT_EQ(blas->reason, "the plan's BLAS (BLAS=OpenBLAS)");
  EXPECT_EQ(blas->debian, std::vector<std::string>{"libopenblas-dev"});
  DoctorFacts facts;
  facts.system_missing = missing_system_libraries(p.system_libraries, [](const std::string& f) {
    return f.find("openblas") == std::string::npos;
  });
  ASSERT_EQ(facts.system_missing.missing.size(), 1u);
  EXPECT_EQ(facts.system_missing.install_command, "sudo apt-get install -y libopenblas-dev");
  DoctorReport r = run_torch_doctor(p, testing::x86_cuda128_host(), facts);
  auto it = std::find_if(r.checks.begin(), r.checks.end(),
                         [](const DoctorCheck& c) { return c.name == "system-libs"; });
  ASSERT_NE(it, r.checks.end());
  EXPECT_FALSE(it->ok);
  EXPECT_NE(it->detail.find("openblas (libopenblas-dev)"), std::string::npos) << it->detail;
  // Debian's layout: the header in the multiarch openblas-pthread folder.
  auto debian = missing_system_libraries(p.system_libraries, [](const std::string& f) {
    return f.find("openblas") == std::string::npos ||
           f == "/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h" ||
           f == "/usr/lib/x86_64-linux-gnu/libopenblas.so";
  });
  EXPECT_TRUE(debian.missing.empty());
  // With MKL no OpenBLAS; a tree that is not PyTorch's (the test fixture) needs none.
  TorchVariant mkl = variant_for(t.path());
  mkl.blas = "mkl";
  EXPECT_EQ(use_of(resolve_torch_plan(mkl, testing::x86_cuda128_host()), "openblas"), nullptr);
  fs::remove(t.dir.path / "cmake" / "Dependencies.cmake");
  EXPECT_EQ(
      use_of(resolve_torch_plan(variant_for(t.path()), testing::x86_cuda128_host()), "openblas"),
      nullptr);
}

}  // namespace
}  // namespace tailor::plan
