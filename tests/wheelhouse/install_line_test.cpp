// The install line `tailor publish` prints: the wheelhouse and PyTorch's index of the pinned
// torch's CUDA as extra indexes (uv searches those first), the default index last, the
// package at its exact version.
#include "wheelhouse/install_line.h"

#include <gtest/gtest.h>

namespace tailor::wheelhouse {

TEST(InstallLine, AddsTheIndexOfThePinnedTorchsCuda) {
  WheelEntry e;
  e.project = "fused-ops";
  e.version = "0.1.0+cu130torch2.11";
  e.target_set = "sm75";
  e.provenance = {{"toolchain", {{"torch", "2.11.0+cu130 (CUDA 13.0)"}}}};
  EXPECT_EQ(
      install_command(e, "file:///srv/house/", "2.11.0"),
      "pip install --index-url https://pypi.org/simple --extra-index-url "
      "file:///srv/house/sm75/simple --extra-index-url https://download.pytorch.org/whl/cu130 "
      "fused-ops==0.1.0+cu130torch2.11");
  e.provenance = {{"toolchain", {{"torch", "2.9.1+cpu"}}}};
  EXPECT_EQ(
      install_command(e, "https://h/b/p", "2.9.1"),
      "pip install --index-url https://pypi.org/simple --extra-index-url https://h/b/p/sm75/simple "
      "--extra-index-url https://download.pytorch.org/whl/cpu fused-ops==0.1.0+cu130torch2.11");
  // No pin (a wheel that does not link torch, or a foreign one): no PyTorch index.
  EXPECT_EQ(install_command(e, "file:///a b", ""),
            "pip install --index-url https://pypi.org/simple --extra-index-url "
            "'file:///a b/sm75/simple' fused-ops==0.1.0+cu130torch2.11");
}

}  // namespace tailor::wheelhouse
