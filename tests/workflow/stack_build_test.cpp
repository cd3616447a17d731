// `stack --build` over a fake build: which rows are built, with what options, in what
// order, and where it stops.
#include "workflow/stack_build.h"

#include <gtest/gtest.h>

namespace tailor::workflow {
namespace {

stack::Row row(std::string name, stack::Outcome outcome, stack::Kind kind = stack::Kind::native) {
  stack::Row r;
  r.name = std::move(name);
  r.outcome = outcome;
  r.kind = kind;
  r.sdist_file = "/cache/" + r.name + ".tar.gz";
  return r;
}

TEST(StackBuild, BuildsOnlyTheBuildRowsInOrderWithTheStacksTarget) {
  stack::StackResult s;
  s.target.gpu_text = "T4G";
  s.torch_python = "/envs/t/bin/python";
  s.rows = {row("torch", stack::Outcome::build, stack::Kind::torch),
            row("numpy", stack::Outcome::prebuilt), row("torch-scatter", stack::Outcome::build),
            row("xformers", stack::Outcome::unsupported),
            row("causal-conv1d", stack::Outcome::build)};
  StackBuildOptions o;
  o.out_dir = "/out";
  o.python = "python3";
  std::vector<ExtensionBuildOptions> seen;
  auto built = build_stack_packages(s, o, [&](const ExtensionBuildOptions& b) {
    seen.push_back(b);
    ExtensionBuildResult r;
    r.status = BuildStatus::ok;
    return r;
  });
  ASSERT_EQ(built.size(), 2u);
  EXPECT_EQ(built[0].package, "torch-scatter");
  EXPECT_EQ(built[1].package, "causal-conv1d");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].source, "/cache/torch-scatter.tar.gz");
  EXPECT_EQ(seen[0].gpu, std::vector<std::string>{"T4G"});
  EXPECT_EQ(seen[0].python, "/envs/t/bin/python");  // the stack's torch interpreter wins
  EXPECT_EQ(seen[0].out_dir, "/out");
  EXPECT_EQ(seen[0].tests, ExtensionBuildOptions::Tests::never);
}

TEST(StackBuild, StopsAtTheFirstFailureAndFallsBackToTheResolvedGpus) {
  stack::StackResult s;
  s.target.gpus = {cuda::ComputeCapability{8, 6}, cuda::ComputeCapability{9, 0}};
  s.rows = {row("a", stack::Outcome::build), row("b", stack::Outcome::build)};
  StackBuildOptions o;
  o.python = "/usr/bin/python3.12";
  int calls = 0;
  auto built = build_stack_packages(s, o, [&](const ExtensionBuildOptions& b) {
    ++calls;
    EXPECT_EQ(b.gpu, std::vector<std::string>{"8.6,9.0"});
    EXPECT_EQ(b.python, "/usr/bin/python3.12");
    ExtensionBuildResult r;
    r.status = BuildStatus::build_failed;
    return r;
  });
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(built[0].result.status, BuildStatus::build_failed);
}

}  // namespace
}  // namespace tailor::workflow
