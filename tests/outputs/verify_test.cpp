// Verification of a wheel's targets: exactly what was asked, plus what the recipe says
// the package adds by design (named), over the cuda module's types.
#include "outputs/verify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cuda/fatbin_code.h"
#include "formats/synthetic_elf.h"
#include "formats/zip_writer.h"
#include "support/fatbin_writer.h"
#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::outputs;
using namespace tailor::cache;

namespace {

cuda::TargetSet set_of(std::initializer_list<const char*> names) {
  cuda::TargetSet s;
  for (const char* n : names) {
    auto t = cuda::parse_target_name(n);
    EXPECT_TRUE(t) << n;
    if (t) s.add(*t);
  }
  return s;
}

LibraryTargets lib(std::string path, std::initializer_list<const char*> names) {
  LibraryTargets l;
  l.path = std::move(path);
  l.has_device_code = names.size() > 0;
  l.targets = set_of(names);
  for (const char* n : names) l.bytes_per_target[n] = 10;
  return l;
}

using test::fatbin_container;

std::string bytes_text(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A wheel whose members `libs` (name -> .nv_fatbin contents) are ELF libraries.
std::string wheel_with(const std::string& file,
                       const std::vector<std::pair<std::string, std::vector<std::byte>>>& libs) {
  const auto dir = test::scratch_dir("verify_test");
  std::filesystem::create_directories(dir);
  std::vector<formats::ZipWriteEntry> members;
  for (const auto& [name, fatbin] : libs)
    members.push_back({name, bytes_text(testing_elf::with_fatbin(fatbin))});
  members.push_back({"demo-1.0.dist-info/WHEEL",
                     std::string("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
                                 "false\nTag: cp311-cp311-linux_x86_64\n")});
  members.push_back({"demo-1.0.dist-info/METADATA",
                     std::string("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")});
  const std::string path = (dir / file).string();
  auto written = formats::write_zip(path, members);
  EXPECT_TRUE(written) << (written ? "" : written.error().message);
  return path;
}

/// What bitsandbytes' recipe declares for a request.
std::vector<plan::PackageAddition> bnb_additions(const cuda::TargetSet& requested) {
  plan::VerifyPolicy policy;
  policy.ptx_of_highest = true;
  return plan::package_additions("bitsandbytes", policy, requested);
}

}  // namespace

TEST(Verify, ExactTargetsPass) {
  std::vector<LibraryTargets> libs = {
      lib("fused_ops/_C.cpython-311-x86_64-linux-gnu.so", {"sm_75"}),
      {"fused_ops/helper.so", false, {}, {}}};
  auto v = compare_targets(libs, set_of({"sm_75"}));
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.libraries.size(), 1u);  // only libraries with device code are judged
  EXPECT_EQ(v.bytes_per_target.at("sm_75"), 10u);
  EXPECT_EQ(v.summary(), "exactly sm_75 in every library with device code");
}

TEST(Verify, MissingAndExtraTargetsFail) {
  std::vector<LibraryTargets> libs = {lib("a.so", {"sm_80", "sm_90"}),
                                      lib("b.so", {"sm_90", "compute_90"})};
  auto v = compare_targets(libs, set_of({"sm_90"}));
  EXPECT_FALSE(v.ok());
  ASSERT_EQ(v.libraries.size(), 2u);
  EXPECT_EQ(v.libraries[0].unexpected.names(), std::vector<std::string>{"sm_80"});
  EXPECT_EQ(v.libraries[1].unexpected.names(), std::vector<std::string>{"compute_90"});
  EXPECT_EQ(v.bytes_per_target.at("sm_90"), 20u);
  EXPECT_NE(v.describe_problems().find("a.so: unexpected sm_80 (asked for sm_90)"),
            std::string::npos)
      << v.describe_problems();
}

TEST(Verify, MissingTargetSaysHowThatGpuWouldStillRun) {
  // coverage_on: a 9.0 GPU runs compute_80 PTX by JIT; a 10.0 GPU has nothing without it.
  auto v = compare_targets({lib("a.so", {"sm_80", "compute_80"})},
                           set_of({"sm_80", "compute_80", "sm_90"}));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.libraries[0].missing.names(), std::vector<std::string>{"sm_90"});
  EXPECT_NE(v.describe_problems().find("missing sm_90 (9.0: PTX JIT via compute_80)"),
            std::string::npos)
      << v.describe_problems();
  auto none = compare_targets({lib("a.so", {"sm_80"})}, set_of({"sm_80", "sm_100"}));
  EXPECT_NE(none.describe_problems().find("missing sm_100 (10.0: no kernel image)"),
            std::string::npos)
      << none.describe_problems();
}

TEST(Verify, NumericOrderNotTextOrder) {
  // As text "sm_100" < "sm_80"; as targets 8.0 < 10.0. Both the expected list and the
  // differences come out in CC order, and the highest target is 10.0.
  auto asked = set_of({"sm_100", "sm_80", "sm_90"});
  auto v = compare_targets({lib("a.so", {"sm_80"})}, asked);
  EXPECT_EQ(v.expected, (std::vector<std::string>{"sm_80", "sm_90", "sm_100"}));
  EXPECT_EQ(v.libraries[0].missing.names(), (std::vector<std::string>{"sm_90", "sm_100"}));
  auto adds = bnb_additions(asked);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].target.name(), "compute_100");  // not compute_90
}

TEST(Verify, DeclaredPtxOfHighestPassesAndIsNamed) {
  // bitsandbytes asked for 9.0: its CMakeLists.txt adds compute_90.
  auto asked = set_of({"sm_90"});
  auto v =
      compare_targets({lib("bitsandbytes/libbitsandbytes_cuda130.so", {"sm_90", "compute_90"})},
                      asked, bnb_additions(asked));
  EXPECT_TRUE(v.ok()) << v.describe_problems();
  ASSERT_EQ(v.describe_additions().size(), 1u);
  EXPECT_EQ(v.describe_additions()[0].rfind(
                "compute_90 added by bitsandbytes' build (PTX of the highest target)", 0),
            0u)
      << v.describe_additions()[0];
  EXPECT_NE(
      v.summary().find(
          "exactly sm_90 in every library with device code; compute_90 added by bitsandbytes"),
      std::string::npos)
      << v.summary();

  // Several targets: only the highest's PTX is declared.
  auto many = set_of({"sm_75", "sm_80", "sm_100"});
  auto ok = compare_targets({lib("l.so", {"sm_75", "sm_80", "sm_100", "compute_100"})}, many,
                            bnb_additions(many));
  EXPECT_TRUE(ok.ok()) << ok.describe_problems();
}

TEST(Verify, DeclaredAdditionIsNotRequired) {
  // A release that does not add it still passes, and nothing is named.
  auto asked = set_of({"sm_90"});
  auto v = compare_targets({lib("l.so", {"sm_90"})}, asked, bnb_additions(asked));
  EXPECT_TRUE(v.ok());
  EXPECT_TRUE(v.describe_additions().empty());
  EXPECT_EQ(v.summary(), "exactly sm_90 in every library with device code");
}

TEST(Verify, UndeclaredExtraStillFails) {
  auto asked = set_of({"sm_80", "sm_90"});
  // PTX of a lower target is not what bitsandbytes declares.
  auto v =
      compare_targets({lib("l.so", {"sm_80", "sm_90", "compute_80"})}, asked, bnb_additions(asked));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.libraries[0].unexpected.names(), std::vector<std::string>{"compute_80"});
  EXPECT_NE(v.describe_problems().find("the package adds compute_90"), std::string::npos)
      << v.describe_problems();
  // Nor is SASS of a target not asked for.
  auto sass = compare_targets({lib("l.so", {"sm_80", "sm_90", "compute_90", "sm_86"})}, asked,
                              bnb_additions(asked));
  EXPECT_FALSE(sass.ok());
  EXPECT_EQ(sass.libraries[0].unexpected.names(), std::vector<std::string>{"sm_86"});
  EXPECT_EQ(sass.libraries[0].package_added.names(), std::vector<std::string>{"compute_90"});
}

TEST(Verify, MissingTargetFailsEvenWithTheAddition) {
  auto asked = set_of({"sm_80", "sm_90"});
  auto v = compare_targets({lib("l.so", {"sm_80", "compute_90"})}, asked, bnb_additions(asked));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.libraries[0].missing.names(), std::vector<std::string>{"sm_90"});
  EXPECT_TRUE(v.libraries[0].unexpected.empty());
}

TEST(Verify, NoDeviceCodeAtAllFails) {
  auto v = compare_targets({{"a.so", false, {}, {}}}, set_of({"sm_75"}));
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.describe_problems().find("no library"), std::string::npos);
}

TEST(Verify, LtoIrIsNeitherATargetNorAnError) {
  // cuFFT-like: SASS and PTX for the GPUs beside LTO IR (kind 8) that the library links
  // itself through nvJitLink; and a library of LTO IR alone. The wheel verifies on its
  // real targets: the IR is not counted, not unexpected, not "not understood".
  const std::string wheel =
      wheel_with("demo-1.0-cp311-cp311-linux_x86_64.whl",
                 {{"demo/_C.so", fatbin_container({{cuda::k_fatbin_kind_cubin, 90},
                                                   {cuda::k_fatbin_kind_lto_ir, 90},
                                                   {cuda::k_fatbin_kind_ptx, 90},
                                                   {cuda::k_fatbin_kind_lto_ir, 50, 128}})},
                  {"demo/libcallbacks.so", fatbin_container({{cuda::k_fatbin_kind_lto_ir, 75}})}});
  auto v = verify_wheel_targets(wheel, set_of({"sm_90", "compute_90"}));
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_TRUE(v->ok()) << v->describe_problems();
  ASSERT_EQ(v->libraries.size(), 1u);  // the LTO-only library has no target to judge
  EXPECT_EQ(v->libraries[0].path, "demo/_C.so");
  EXPECT_TRUE(v->libraries[0].unexpected.empty());
  EXPECT_EQ(v->bytes_per_target.size(), 2u);
  EXPECT_EQ(v->bytes_per_target.count("lto_90"), 0u);
  EXPECT_EQ(v->bytes_per_target.at("sm_90"), 64u);
  EXPECT_EQ(v->summary(), "exactly sm_90, compute_90 in every library with device code");
  // The real targets still decide: sm_80 asked is missing, not hidden by the IR.
  auto missing = verify_wheel_targets(wheel, set_of({"sm_80", "sm_90", "compute_90"}));
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_FALSE(missing->ok());
  EXPECT_EQ(missing->libraries[0].missing.names(), std::vector<std::string>{"sm_80"});
}

TEST(Verify, LtoIrAloneIsNoDeviceCode) {
  const std::string wheel =
      wheel_with("lto-1.0-cp311-cp311-linux_x86_64.whl",
                 {{"lto/libir.so", fatbin_container({{cuda::k_fatbin_kind_lto_ir, 90}})}});
  auto v = verify_wheel_targets(wheel, set_of({"sm_90"}));
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_FALSE(v->ok());
  EXPECT_EQ(v->describe_problems(), "no library in the wheel carries CUDA device code");
}

TEST(Verify, UnknownEntryKindIsAnErrorNamingTheLibrary) {
  const std::string wheel =
      wheel_with("odd-1.0-cp311-cp311-linux_x86_64.whl",
                 {{"odd/_C.so", fatbin_container({{cuda::k_fatbin_kind_cubin, 90}, {4, 90}})}});
  auto v = verify_wheel_targets(wheel, set_of({"sm_90"}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("odd/_C.so: target 'kind4_90' not understood"),
            std::string::npos)
      << v.error().message;
  EXPECT_EQ(v.error().message.rfind(wheel, 0), 0u) << v.error().message;
}

TEST(Verify, LibraryTargetsReadsTheCodesNotTheNames) {
  inspect::InspectedLibrary lib;
  lib.path = "a.so";
  lib.has_device_code = true;
  auto stats = [](cuda::FatbinCode code, uint64_t stored) {
    inspect::TargetStats t;
    t.code = code;
    t.name = code.name();
    t.entries = 1;
    t.stored_bytes = stored;
    return t;
  };
  lib.targets = {stats({cuda::k_fatbin_kind_cubin, 100, false, true}, 7),
                 stats({cuda::k_fatbin_kind_lto_ir, 100}, 9)};
  auto lt = library_targets(lib);
  ASSERT_TRUE(lt) << lt.error().message;
  EXPECT_TRUE(lt->has_device_code);
  EXPECT_EQ(lt->targets.names(), std::vector<std::string>{"sm_100f"});
  EXPECT_EQ(lt->bytes_per_target, (std::map<std::string, uint64_t>{{"sm_100f", 7}}));
  lib.targets.push_back(stats({cuda::k_fatbin_kind_cubin, 0}, 1));  // arch 0: no CC
  EXPECT_FALSE(library_targets(lib));
}
