// Device code files as inspect counts and judges them (inspect/device_file_report.h): a
// fatbin file's entries and a PTX file's target, the per-folder sums the text summary and
// the verdicts use, and a folder judged as one unit (the package picks one file per GPU).
#include "inspect/device_file_report.h"

#include <gtest/gtest.h>

#include "inspect/inspect_outcome.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/render.h"
#include "inspect/verdicts.h"
#include "support/fatbin_writer.h"
#include "target_codes.h"

using namespace tailor;
using namespace tailor::inspect;

namespace {

DeviceFile file_with(const std::string& path, formats::DeviceFileKind kind,
                     std::vector<TargetStats> targets) {
  DeviceFile f;
  f.path = path;
  f.kind = kind;
  f.targets = with_codes(std::move(targets));
  for (const auto& t : f.targets) f.file_size += t.stored_bytes;
  return f;
}

constexpr auto k_cubin = formats::DeviceFileKind::cubin;

}  // namespace

TEST(DeviceFileReport, FatbinFileCountsItsEntries) {
  auto bytes = test::fatbin_container(
      {{2, 80, 64, 0}, {1, 80, 64, 0}, {2, 90, 128, test::k_entry_arch_specific}});
  auto f = analyze_device_file(bytes, "pkg/k.fatbin", formats::DeviceFileKind::fatbin);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->targets.size(), 3u);
  EXPECT_EQ(f->targets[0].name, "sm_80");
  EXPECT_EQ(f->targets[1].name, "compute_80");
  EXPECT_EQ(f->targets[2].name, "sm_90a");
  EXPECT_EQ(f->targets[2].stored_bytes, 128u);
  // A fatbin that lies about its size is an error naming the file and an offset.
  bytes.resize(bytes.size() - 40);
  auto bad = analyze_device_file(bytes, "pkg/k.fatbin", formats::DeviceFileKind::fatbin);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("pkg/k.fatbin: ", 0), 0u) << bad.error().message;
  EXPECT_NE(bad.error().message.find("0x"), std::string::npos) << bad.error().message;
}

TEST(DeviceFileReport, PtxFileIsOneEntryOfItsComputeTarget) {
  const std::string ptx = "//\n// Generated\n//\n\n.version 9.0\n.target sm_86\n.address_size 64\n";
  auto f = analyze_ptx_head(as_bytes(ptx), "k.ptx", 100000);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->targets.size(), 1u);
  EXPECT_EQ(f->targets[0].name, "compute_86");
  EXPECT_EQ(f->targets[0].entries, 1u);
  EXPECT_EQ(f->targets[0].stored_bytes, 100000u);
  EXPECT_EQ(f->file_size, 100000u);
}

TEST(DeviceFileReport, FoldersSumTheirFilesPerTarget) {
  std::vector<DeviceFile> files = {
      file_with("p/cubins/a_100.cubin", k_cubin, {{"sm_100", 1, 1000, 1000, {"none"}}}),
      file_with("p/cubins/b_100.cubin", k_cubin, {{"sm_100", 1, 3000, 3000, {"none"}}}),
      file_with("p/cubins/b_103a.cubin", k_cubin, {{"sm_103a", 1, 500, 500, {"none"}}}),
      file_with("top.cubin", k_cubin, {{"sm_90", 1, 10, 10, {"none"}}}),
  };
  auto folders = device_folders(files);
  ASSERT_EQ(folders.size(), 2u);
  EXPECT_EQ(device_folder_label(folders[0]), "./");
  EXPECT_EQ(device_folder_label(folders[1]), "p/cubins/");
  EXPECT_EQ(folders[1].files, 3u);
  EXPECT_EQ(folders[1].cubins, 3u);
  ASSERT_EQ(folders[1].targets.size(), 2u);
  EXPECT_EQ(folders[1].targets[0].name, "sm_100");
  EXPECT_EQ(folders[1].targets[0].files, 2u);
  EXPECT_EQ(folders[1].targets[0].stored_bytes, 4000u);
  EXPECT_EQ(folders[1].targets[1].name, "sm_103a");
  // The wheel's totals count device files with the libraries.
  auto totals = target_totals({}, files, 0);
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[1].name, "sm_100");
  EXPECT_EQ(totals[1].libraries, 2u);
}

TEST(DeviceFileReport, AFolderIsJudgedAsOneUnit) {
  WheelReport w;
  w.path = "k-1.0-py3-none-any.whl";
  w.device_files = {
      file_with("k/bin/a_75.cubin", k_cubin, {{"sm_75", 1, 10, 10, {"none"}}}),
      file_with("k/bin/a_90.cubin", k_cubin, {{"sm_90", 1, 10, 10, {"none"}}}),
  };
  InspectReport r;
  r.wheels.push_back(w);
  VerdictSpecs specs;
  specs.gpu = {"T4"};
  specs.exact = {"sm_75,sm_90"};
  auto v = evaluate(r, specs);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 2u);
  EXPECT_TRUE(v->pass());
  EXPECT_EQ(v->items[0].library, "k-1.0-py3-none-any.whl!k/bin/");
  EXPECT_EQ(v->items[0].via, "sm_75");
  // A GPU no file runs on fails the folder; the text names it once, not per file.
  specs.gpu = {"A100"};
  specs.exact.clear();
  v = evaluate(r, specs);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->pass());
  auto text = render_text(r, &*v);
  EXPECT_NE(text.find("device code files  2 (2 cubin, 0 PTX, 0 fatbin"), std::string::npos) << text;
  auto outcome = judge(r, &*v);
  // (The other failure: this hand-made wheel has no RECORD.)
  EXPECT_NE(outcome.failure_line().find("1 of 1 folder of device code files does not run on it "
                                        "(k/bin/)"),
            std::string::npos)
      << outcome.failure_line();
  auto j = to_json(r, &*v);
  EXPECT_EQ(j["wheels"][0]["device_files"][0]["manylinux"], "not a host library");
  EXPECT_EQ(j["wheels"][0]["device_folders"][0]["files"], 2);
}
