// The one toolkit decision of an extension build (plan/toolkit_choice): the plan's
// CUDA_HOME/PATH and the build's preflight both take it.
#include "plan/toolkit_choice.h"

#include <gtest/gtest.h>

#include "plan/extension_plan.h"
#include "support/host_reports.h"

namespace tailor::plan {
namespace {

using test::cuda_toolkit;
using test::python_with_torch;

TEST(ToolkitChoice, NewestMinorOfTorchsMajorNotTheFirstFound) {
  probe::HostReport host;
  host.cuda_toolkits = {cuda_toolkit(12, 8), cuda_toolkit(13, 0), cuda_toolkit(13, 1),
                        cuda_toolkit(14, 0)};
  auto py = python_with_torch("13.0");
  auto choice = choose_toolkit(host, &py);
  ASSERT_NE(choice.toolkit, nullptr);
  EXPECT_EQ(choice.toolkit->root, "/usr/local/cuda-13.1");
  EXPECT_EQ(choice.note, "");
}

TEST(ToolkitChoice, WithoutAMatchingMajorTheNewestWithANote) {
  probe::HostReport host;
  host.cuda_toolkits = {cuda_toolkit(13, 0), cuda_toolkit(12, 8)};
  auto py = python_with_torch("11.8");
  auto choice = choose_toolkit(host, &py);
  ASSERT_NE(choice.toolkit, nullptr);
  EXPECT_EQ(choice.toolkit->root, "/usr/local/cuda-13.0");
  EXPECT_EQ(choice.note, "no CUDA 11.x toolkit found for torch's CUDA 11.8; using CUDA 13.0.1");
}

TEST(ToolkitChoice, ACpuTorchTakesTheNewestWithoutANote) {
  probe::HostReport host;
  host.cuda_toolkits = {cuda_toolkit(12, 9), cuda_toolkit(13, 0), cuda_toolkit(12, 10)};
  auto py = python_with_torch("");
  auto choice = choose_toolkit(host, &py);
  ASSERT_NE(choice.toolkit, nullptr);
  EXPECT_EQ(choice.toolkit->root, "/usr/local/cuda-13.0");
  EXPECT_EQ(choice.note, "");
  // Minors compare as numbers: 12.10 is newer than 12.9.
  auto py12 = python_with_torch("12.4");
  EXPECT_EQ(choose_toolkit(host, &py12).toolkit->root, "/usr/local/cuda-12.10");
}

TEST(ToolkitChoice, NoTorchTakesTheNewestAndNoToolkitIsNone) {
  probe::HostReport host;
  EXPECT_EQ(choose_toolkit(host, nullptr).toolkit, nullptr);
  host.cuda_toolkits = {cuda_toolkit(12, 8), cuda_toolkit(12, 9)};
  ASSERT_NE(choose_toolkit(host, nullptr).toolkit, nullptr);
  EXPECT_EQ(choose_toolkit(host, nullptr).toolkit->root, "/usr/local/cuda-12.9");
}

TEST(ToolkitChoice, ThePlanPutsTheChosenNvccFirstOnPathAndInCudaHome) {
  probe::HostReport host;
  host.cpu.logical_cores = 2;
  host.cuda_toolkits = {cuda_toolkit(13, 0), cuda_toolkit(13, 1)};
  host.pythons.push_back(python_with_torch("13.0"));
  ExtensionBuildRequest r;
  r.package_name = "xformers";
  r.source_dir = "/src/pkg";
  r.targets.add(cuda::sass(cuda::ComputeCapability{8, 0}));
  r.python = "/venv/bin/python";
  auto plan = resolve_extension_build(r, host);
  ASSERT_TRUE(plan) << plan.error().message;
  const auto* chosen = choose_toolkit(host, choose_python(host, r.python)).toolkit;
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(plan->env.at("CUDA_HOME"), chosen->root);
  EXPECT_EQ(plan->env.at("CUDA_HOME"), "/usr/local/cuda-13.1");
  EXPECT_EQ(plan->path_prepend, "/usr/local/cuda-13.1/bin");
  EXPECT_NE(render_print_env(*plan).find("export PATH=/usr/local/cuda-13.1/bin:\"$PATH\"\n"),
            std::string::npos)
      << render_print_env(*plan);
}

}  // namespace
}  // namespace tailor::plan
