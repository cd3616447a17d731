// The reproducible build environment (builder/reproducible_env.h).
#include "builder/reproducible_env.h"

#include <gtest/gtest.h>

using namespace tailor;
using namespace tailor::builder;

namespace {

TEST(ReproducibleBuildEnv, EpochObjtempAndPrefixMapsAppended) {
  std::map<std::string, std::string> env = {{"NVCC_APPEND_FLAGS", "-lineinfo"},
                                            {"TORCH_CUDA_ARCH_LIST", "7.5"}};
  const std::map<std::string, std::string> caller = {{"CXXFLAGS", "-O3"}};
  add_reproducible_build_env(env, caller, 1700000000, "/w/pkg-abc/src");
  EXPECT_EQ(env["SOURCE_DATE_EPOCH"], "1700000000");
  EXPECT_EQ(env["NVCC_APPEND_FLAGS"],
            "-lineinfo -objtemp -Xcompiler=-ffile-prefix-map=/w/pkg-abc/src=.");
  EXPECT_EQ(env["CFLAGS"], "-ffile-prefix-map=/w/pkg-abc/src=.");
  EXPECT_EQ(env["CXXFLAGS"], "-O3 -ffile-prefix-map=/w/pkg-abc/src=.");  // the caller's flags kept
  EXPECT_EQ(env["TORCH_CUDA_ARCH_LIST"], "7.5");
  auto again = env;
  add_reproducible_build_env(again, caller, 1700000000, "/w/pkg-abc/src");
  EXPECT_EQ(again, env);  // idempotent
  std::map<std::string, std::string> spaced;
  add_reproducible_build_env(spaced, {}, 5, "/w/with space/src");
  EXPECT_EQ(spaced["NVCC_APPEND_FLAGS"], "-objtemp");
  EXPECT_EQ(spaced.count("CFLAGS"), 0u);
}

TEST(ReproducibleBuildEnv, NvccRandomSeedFromTheDataForNvccThatTakesIt) {
  // cudafe++ puts its process id in a unit's module id unless given a seed
  // (data/build/reproducible.toml).
  EXPECT_EQ(nvcc_reproducible_flags(cuda::CudaVersion{13, 0}), "-Xcudafe --frandom-seed=tailor");
  EXPECT_EQ(nvcc_reproducible_flags(cuda::CudaVersion{12, 9}), "-Xcudafe --frandom-seed=tailor");
  EXPECT_EQ(nvcc_reproducible_flags(cuda::CudaVersion{12, 8}), "");
  EXPECT_EQ(nvcc_reproducible_flags(std::nullopt), "");
  std::map<std::string, std::string> env;
  add_reproducible_build_env(env, {}, 5, "/w/src", true, cuda::CudaVersion{13, 0});
  EXPECT_EQ(env["NVCC_APPEND_FLAGS"],
            "-objtemp -Xcudafe --frandom-seed=tailor -Xcompiler=-ffile-prefix-map=/w/src=.");
  auto again = env;
  add_reproducible_build_env(again, {}, 5, "/w/src", true, cuda::CudaVersion{13, 0});
  EXPECT_EQ(again, env);  // idempotent
  std::map<std::string, std::string> old;
  add_reproducible_build_env(old, {}, 5, "/w/src", false, cuda::CudaVersion{12, 4});
  EXPECT_EQ(old["NVCC_APPEND_FLAGS"], "-Xcompiler=-ffile-prefix-map=/w/src=.");
}

}  // namespace
