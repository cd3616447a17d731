// Which device code files of their own `slim --device-files` keeps (keep_policy.h
// choose_device_file: a file stays when any code in it loads on a kept GPU, by the driver's
// rules; what tailor cannot tell stays), how it reads a fatbin file and PTX text
// (device_files.h), the per-package, per-target tally, and the package facts in
// data/slim/device_file_packages.toml.
#include "slim/device_files.h"

#include <gtest/gtest.h>

#include "slim/keep_policy.h"
#include "support/fatbin_writer.h"

namespace tailor::slim {
namespace {

cuda::FatbinCode file_sass(uint32_t arch, bool a = false, bool f = false) {
  return {cuda::k_fatbin_kind_cubin, arch, a, f};
}
cuda::FatbinCode file_ptx(uint32_t arch, bool a = false, bool f = false) {
  return {cuda::k_fatbin_kind_ptx, arch, a, f};
}

KeepPolicy kept_on(std::vector<cuda::ComputeCapability> devices) {
  KeepPolicy p;
  p.devices = std::move(devices);
  return p;
}

bool file_kept(std::vector<cuda::FatbinCode> codes, const KeepPolicy& p) {
  return choose_device_file(codes, p).keep;
}

TEST(DeviceFileChoice, SassRunsOnItsMajorAtOrAboveItsMinor) {
  const auto t4 = kept_on({{7, 5}});
  EXPECT_TRUE(file_kept({file_sass(75)}, t4));
  EXPECT_FALSE(file_kept({file_sass(90)}, t4));
  EXPECT_FALSE(file_kept({file_sass(80)}, t4));                // another major
  EXPECT_TRUE(file_kept({file_sass(70)}, t4));                 // same major, lower minor
  EXPECT_FALSE(file_kept({file_sass(72)}, t4));                // 7.2 is a Tegra part: exact CC only
  EXPECT_TRUE(file_kept({file_sass(80)}, kept_on({{8, 6}})));  // same major, lower minor
  EXPECT_FALSE(file_kept({file_sass(86)}, kept_on({{8, 0}})));  // a higher minor never runs
  EXPECT_FALSE(file_kept({file_sass(100)}, kept_on({{9, 0}})));
  EXPECT_TRUE(file_kept({file_sass(100)}, kept_on({{10, 3}})));
}

TEST(DeviceFileChoice, ArchSpecificOnlyOnItsOwnCcFamilyAcrossItsFamily) {
  EXPECT_TRUE(file_kept({file_sass(100, true)}, kept_on({{10, 0}})));
  EXPECT_FALSE(file_kept({file_sass(100, true)}, kept_on({{10, 3}})));
  EXPECT_TRUE(file_kept({file_sass(103, true)}, kept_on({{10, 3}})));
  EXPECT_FALSE(file_kept({file_sass(103, true)}, kept_on({{10, 0}})));
  EXPECT_TRUE(file_kept({file_sass(100, false, true)}, kept_on({{10, 3}})));
  EXPECT_FALSE(file_kept({file_sass(100, false, true)}, kept_on({{9, 0}})));
  EXPECT_FALSE(file_kept({file_sass(90, true)}, kept_on({{10, 0}})));
}

TEST(DeviceFileChoice, PtxJitsOnAnyGpuAtOrAboveItsTarget) {
  EXPECT_TRUE(file_kept({file_ptx(75)}, kept_on({{7, 5}})));
  EXPECT_TRUE(file_kept({file_ptx(75)}, kept_on({{9, 0}})));
  EXPECT_FALSE(file_kept({file_ptx(80)}, kept_on({{7, 5}})));
  EXPECT_FALSE(file_kept({file_ptx(90, true)}, kept_on({{10, 0}})));  // `a` PTX: its own CC only
  EXPECT_TRUE(file_kept({file_ptx(90, true)}, kept_on({{9, 0}})));
  // The PTX policy is the driver's choice inside a library, not the package's between files.
  auto p = kept_on({{9, 0}});
  p.ptx = PtxPolicy::drop;
  EXPECT_TRUE(file_kept({file_ptx(75)}, p));
  // PTX named in --keep stays on a GPU below it.
  auto asked = kept_on({{7, 5}});
  asked.ptx_asked.push_back(*file_ptx(90).target());
  EXPECT_TRUE(file_kept({file_ptx(90)}, asked));
  EXPECT_EQ(choose_device_file({file_ptx(90)}, asked).why, "named in --keep");
}

TEST(DeviceFileChoice, AFatbinFileStaysWholeWhenAnyEntryLoads) {
  const auto t4 = kept_on({{7, 5}});
  EXPECT_TRUE(file_kept({file_sass(80), file_ptx(75)}, t4));
  EXPECT_FALSE(file_kept({file_sass(80), file_ptx(80)}, t4));
  EXPECT_FALSE(file_kept({file_sass(90), file_sass(100)}, t4));
  EXPECT_EQ(choose_device_file({file_sass(80), file_ptx(80)}, t4).why,
            "no kept GPU (7.5) loads sm_80 compute_80");
  EXPECT_EQ(choose_device_file({file_sass(75)}, t4).why, "runs on 7.5");
  EXPECT_EQ(choose_device_file({file_ptx(75)}, kept_on({{9, 0}})).why,
            "runs on 9.0 through PTX JIT");
}

TEST(DeviceFileChoice, WhatTheDriverCannotTellStays) {
  const auto t4 = kept_on({{7, 5}});
  EXPECT_TRUE(file_kept({}, t4));                                  // no entry at all
  EXPECT_TRUE(file_kept({{cuda::k_fatbin_kind_lto_ir, 90}}, t4));  // linked by the package
  EXPECT_TRUE(file_kept({file_sass(90), {4, 90}}, t4));            // an unknown kind
  EXPECT_TRUE(file_kept({file_sass(0)}, t4));                      // no CC
}

TEST(DeviceFiles, ReadsAFatbinFileEntryByEntryAndPtxByItsTarget) {
  const auto bin = test::fatbin_container({{2, 80, 128}, {1, 80, 64}, {2, 90, 256}});
  auto codes = read_device_file(bin, formats::DeviceFileKind::fatbin);
  ASSERT_TRUE(codes) << codes.error().message;
  ASSERT_EQ(codes->codes.size(), 3u);
  EXPECT_EQ(codes->codes[0], file_sass(80));
  EXPECT_EQ(codes->codes[1], file_ptx(80));
  EXPECT_EQ(codes->codes[2], file_sass(90));
  EXPECT_EQ(codes->bytes[2], 256u);

  const std::string text = "// nvcc\n.version 9.0\n.target sm_75\n.address_size 64\n";
  auto p = read_device_file(as_bytes(text), formats::DeviceFileKind::ptx);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->codes.size(), 1u);
  EXPECT_EQ(p->codes[0], file_ptx(75));
  EXPECT_EQ(p->bytes[0], text.size());
}

TEST(DeviceFiles, ALyingFatbinFileOrCubinIsAnErrorNamingThePath) {
  auto bin = test::fatbin_container({{2, 80, 128}});
  bin.resize(bin.size() - 64);  // the entry runs past the end
  auto d =
      judge_device_file(bin, formats::DeviceFileKind::fatbin, "pkg/k.fatbin", kept_on({{8, 0}}));
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("pkg/k.fatbin: "), std::string::npos) << d.error().message;
  std::vector<std::byte> elf(64);
  std::memcpy(elf.data(),
              "\x7f"
              "ELF\x02\x01\x01",
              7);
  test::put<uint16_t>(elf, 0x12, 190);
  EXPECT_FALSE(
      judge_device_file(elf, formats::DeviceFileKind::cubin, "x.cubin", kept_on({{8, 0}})));
}

TEST(DeviceFiles, TallyPerPackageAndTarget) {
  DeviceFilePackage p;
  const auto t4 = kept_on({{7, 5}});
  auto decide = [&](std::string path, std::vector<cuda::FatbinCode> codes, uint64_t size) {
    DeviceFileDecision d;
    d.path = std::move(path);
    d.size = size;
    d.codes.codes = codes;
    d.codes.bytes.assign(codes.size(), size);
    d.choice = choose_device_file(codes, t4);
    add_device_file(p, d);
  };
  decide("k/a90.cubin", {file_sass(90)}, 300);
  decide("k/a75.cubin", {file_sass(75)}, 100);
  decide("k/b90.cubin", {file_sass(90)}, 50);
  decide("k/a.ptx", {file_ptx(75)}, 10);
  EXPECT_EQ(p.files_kept, 2u);
  EXPECT_EQ(p.bytes_kept, 110u);
  EXPECT_EQ(p.files_removed, 2u);
  EXPECT_EQ(p.bytes_removed, 350u);
  EXPECT_EQ(p.removed, (std::vector<std::string>{"k/a90.cubin", "k/b90.cubin"}));
  ASSERT_EQ(p.targets.size(), 3u);  // canonical order: sm_75, compute_75, sm_90
  EXPECT_EQ(p.targets[0].code, file_sass(75));
  EXPECT_EQ(p.targets[1].code, file_ptx(75));
  EXPECT_EQ(p.targets[2].code, file_sass(90));
  EXPECT_EQ(p.targets[2].files_removed, 2u);
  EXPECT_EQ(p.targets[2].bytes_removed, 350u);
  EXPECT_EQ(p.kept_reasons,
            (std::vector<std::string>{"runs on 7.5", "runs on 7.5 through PTX JIT"}));
}

TEST(DeviceFiles, PackageFactsAndManifests) {
  const auto* fi = device_file_package_facts("flashinfer_cubin");
  ASSERT_NE(fi, nullptr);
  EXPECT_EQ(fi->name, "flashinfer-cubin");
  EXPECT_NE(fi->picks.find("isSMCompatible"), std::string::npos);
  EXPECT_NE(fi->manifests.find("checksums.txt"), std::string::npos);
  EXPECT_TRUE(is_package_manifest("Flashinfer-Cubin", "flashinfer_cubin/cubins/x/checksums.txt"));
  EXPECT_FALSE(is_package_manifest("flashinfer_cubin", "flashinfer_cubin/cubins/x/k.cubin"));
  EXPECT_FALSE(is_package_manifest("other", "pkg/checksums.txt"));
  EXPECT_EQ(device_file_package_facts("no-such-package"), nullptr);
  EXPECT_EQ(distribution_of_dist_info("/v/lib/site-packages/flashinfer_cubin-0.6.13.dist-info"),
            "flashinfer_cubin");
}

}  // namespace
}  // namespace tailor::slim
