// How stack judges an inspected wheel whose device code ships as files of its own (cubins
// the package loads at run time, as flashinfer-cubin does): covered on the target's GPUs
// like library code, per folder, and a folder without code for a GPU names itself.
#include <gtest/gtest.h>

#include "cuda/compute_capability.h"
#include "cuda/fatbin_code.h"
#include "inspect/library_classifier.h"
#include "stack/stack_cache.h"
#include "stack/stack_context.h"
#include "support/fake_host.h"

namespace tailor::stack {
namespace {

inspect::DeviceFile cubin(const std::string& path, uint32_t arch, bool a) {
  inspect::DeviceFile f;
  f.path = path;
  f.kind = formats::DeviceFileKind::cubin;
  inspect::TargetStats t;
  t.code = {cuda::k_fatbin_kind_cubin, arch, a, false};
  t.name = t.code.name();
  t.entries = 1;
  f.targets.push_back(t);
  return f;
}

std::string judged(const std::vector<std::string>& gpus, Row& row) {
  StackRequest request;
  test::FakeCommandRunner runner;
  Context c{request, runner, {}, {}, {}, {}, {}, {}, {}};
  for (const auto& g : gpus) c.target.gpus.push_back(*cuda::parse_compute_capability(g));
  inspect::WheelReport w;
  w.path = "/cache/kernels-1.0-py3-none-any.whl";
  w.device_files = {cubin("kernels/cubins/k_sm100a.cubin", 100, true),
                    cubin("kernels/cubins/k_sm90.cubin", 90, false)};
  w.targets = inspect::target_totals({}, w.device_files, 0);
  return judge_wheel(c, row, w);
}

TEST(WheelJudgement, DeviceFilesCountLikeLibraryCode) {
  Row row;
  EXPECT_EQ(judged({"10.0", "9.0"}, row), "");
  EXPECT_EQ(row.kind, Kind::cuda);
  EXPECT_EQ(row.covers, "yes");
  EXPECT_EQ(row.reason.rfind("has sm_90 sm_100a; runs on", 0), 0u) << row.reason;

  Row on_ampere;
  const std::string why = judged({"8.0"}, on_ampere);
  EXPECT_EQ(on_ampere.covers, "no");
  EXPECT_EQ(why.rfind("kernels/cubins/ has sm_90 sm_100a; 8.0 needs", 0), 0u) << why;
}

TEST(WheelJudgement, StoredInspectionKeepsDeviceFiles) {
  inspect::WheelReport w;
  w.device_files = {cubin("kernels/cubins/k_sm100a.cubin", 100, true)};
  auto back = inspection_from_json(inspection_to_json(w, "build-id 01"), "build-id 01", "w.whl");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->device_files.size(), 1u);
  EXPECT_EQ(back->device_files[0].path, "kernels/cubins/k_sm100a.cubin");
  EXPECT_EQ(back->device_files[0].kind, formats::DeviceFileKind::cubin);
  ASSERT_EQ(back->device_files[0].targets.size(), 1u);
  EXPECT_EQ(back->device_files[0].targets[0].code, w.device_files[0].targets[0].code);
}

}  // namespace
}  // namespace tailor::stack
