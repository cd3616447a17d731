// inspect_wheel / inspect_paths / verdicts over wheels built in the test by Python's
// zipfile from the nvcc and g++ fixture libraries (tests/fixtures/README.md): a correct
// wheel, a tampered RECORD, a false manylinux claim, a hostile member name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "inspect/inspect_report.h"
#include "inspect/render.h"
#include "inspect/verdicts.h"
#include "util/process.h"
#include "test_wheels.h"

using namespace tailor;
using namespace tailor::inspect;
namespace fs = std::filesystem;

namespace {

std::string good_wheel() {
  return make_wheel("1.0+cu130", "cp311-cp311-linux_x86_64",
                    {{"demo/lib/kernels.so", fixture("sass_75_80.so")},
                     {"demo/lib/plain.so", fixture("plain_c.so")},
                     {"demo/__init__.py", "text:print('demo')\n"}});
}

}  // namespace

TEST(WheelInspect, ReadsNameTagsRecordAndTargets) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto report = inspect_paths({good_wheel()});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->wheels.size(), 1u);
  const auto& w = report->wheels[0];
  EXPECT_EQ(w.name, "demo");
  EXPECT_EQ(w.version, "1.0+cu130");
  EXPECT_EQ(w.local_label, "cu130");
  EXPECT_EQ(w.tags_from_name, std::vector<std::string>{"cp311-cp311-linux_x86_64"});
  EXPECT_TRUE(w.tags_consistent);
  EXPECT_EQ(w.metadata_name, "demo");
  EXPECT_TRUE(w.record.passed());
  EXPECT_EQ(w.record.ok, 5u);  // 3 files + WHEEL + METADATA (RECORD is not hashed)
  ASSERT_EQ(w.libraries.size(), 2u);
  EXPECT_EQ(w.libraries[0].path, "demo/lib/kernels.so");
  EXPECT_TRUE(w.libraries[0].has_device_code);
  EXPECT_FALSE(w.libraries[1].has_device_code);
  EXPECT_EQ(w.target_names(), (std::vector<std::string>{"sm_75", "sm_80"}));
  ASSERT_EQ(w.targets.size(), 2u);
  EXPECT_EQ(w.targets[0].entries, 2u);  // two containers, one cubin each (README)
  EXPECT_GT(w.targets[0].share, 0.0);
  EXPECT_LT(w.targets[0].share + w.targets[1].share, 1.0);
  EXPECT_EQ(report->targets_union(), (std::vector<std::string>{"sm_75", "sm_80"}));
  EXPECT_TRUE(w.claim_ok);  // linux_x86_64 claims nothing
  // nvcc's host code calls GLIBC_2.34 symbols (readelf -V on the fixture).
  EXPECT_EQ(w.manylinux_needed, "manylinux_2_34_x86_64");
  EXPECT_EQ(w.libraries[0].manylinux.policy, "manylinux_2_34");
  // The nvcc library needs the C++ runtime and the loader: whitelisted, not "system".
  bool saw_libstdcxx = false;
  for (const auto& n : w.libraries[0].needed_libraries) {
    EXPECT_NE(n.kind, NeededKind::system) << n.soname;
    if (n.soname == "libstdc++.so.6") {
      saw_libstdcxx = true;
      EXPECT_EQ(n.kind, NeededKind::whitelisted);
    }
  }
  EXPECT_TRUE(saw_libstdcxx);
}

TEST(WheelInspect, OneThreadAndManyThreadsAgree) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto path = good_wheel();
  InspectOptions one, many;
  one.threads = 1;
  many.threads = 8;
  auto a = inspect_paths({path}, one), b = inspect_paths({path}, many);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(to_json(*a).dump(), to_json(*b).dump());
}

TEST(WheelInspect, TamperedRecordIsReported) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto path = make_wheel("1.0", "py3-none-linux_x86_64",
                         {{"demo/lib/kernels.so", fixture("sass_75_80.so")},
                          {"demo/lib/plain.so", fixture("plain_c.so")}},
                         {"hash", "size", "missing", "unlisted"});
  auto report = inspect_paths({path});
  ASSERT_TRUE(report) << report.error().message;
  const auto& r = report->wheels[0].record;
  EXPECT_FALSE(r.passed());
  ASSERT_EQ(r.mismatches.size(), 2u);
  EXPECT_EQ(r.mismatches[0].path, "demo/lib/kernels.so");
  EXPECT_NE(r.mismatches[0].what.find("sha256 differs"), std::string::npos) << r.mismatches[0].what;
  EXPECT_EQ(r.mismatches[1].path, "demo/lib/plain.so");
  EXPECT_NE(r.mismatches[1].what.find("size"), std::string::npos) << r.mismatches[1].what;
  EXPECT_EQ(r.missing, std::vector<std::string>{"demo/ghost.py"});
  EXPECT_EQ(r.unlisted, std::vector<std::string>{"demo/extra.txt"});
  auto text = render_text(*report);
  EXPECT_NE(text.find("RECORD     FAILED"), std::string::npos) << text;
}

TEST(WheelInspect, FalseManylinuxClaimIsFlagged) {
  REQUIRE_FIXTURES("glibc_234.so");
  auto path = make_wheel("1.0", "cp311-cp311-manylinux_2_17_x86_64", {{"demo/fast.so", fixture("glibc_234.so")}});
  auto report = inspect_paths({path});
  ASSERT_TRUE(report) << report.error().message;
  const auto& w = report->wheels[0];
  EXPECT_EQ(w.manylinux_needed, "manylinux_2_34_x86_64");
  EXPECT_FALSE(w.claim_ok);
  EXPECT_NE(w.claim_problem.find("manylinux_2_17_x86_64"), std::string::npos) << w.claim_problem;
  EXPECT_NE(w.claim_problem.find("GLIBC_2.34"), std::string::npos) << w.claim_problem;
  // The same library under an honest tag passes.
  auto honest = inspect_paths({make_wheel("1.0", "cp311-cp311-manylinux_2_34_x86_64",
                                          {{"demo/fast.so", fixture("glibc_234.so")}})});
  ASSERT_TRUE(honest);
  EXPECT_TRUE(honest->wheels[0].claim_ok) << honest->wheels[0].claim_problem;
}

TEST(WheelInspect, WheelFileTagsThatDifferFromTheNameAreNoticed) {
  REQUIRE_FIXTURES("plain_c.so");
  auto path = make_wheel("1.0", "cp311-cp311-manylinux_2_28_x86_64", {{"demo/p.so", fixture("plain_c.so")}}, {},
                         "cp311-cp311-linux_x86_64");
  auto report = inspect_paths({path});
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->wheels[0].tags_consistent);
}

TEST(WheelInspect, HostileMemberNameIsAnErrorNamingWheelAndOffset) {
  REQUIRE_FIXTURES("plain_c.so");
  auto path = make_wheel("1.0", "py3-none-any", {{"../evil.so", fixture("plain_c.so")}});
  auto report = inspect_paths({path});
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find(path), std::string::npos) << report.error().message;
  EXPECT_NE(report.error().message.find("offset 0x"), std::string::npos) << report.error().message;
  EXPECT_NE(report.error().message.find("../evil.so"), std::string::npos) << report.error().message;
}

TEST(Verdicts, GpuRequireExactOverAWheel) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto report = inspect_paths({good_wheel()});
  ASSERT_TRUE(report) << report.error().message;
  auto gpu = [&](const std::string& spec) {
    VerdictSpecs s;
    s.gpu = spec;
    auto v = evaluate(*report, s);
    EXPECT_TRUE(v) << v.error().message;
    return *v;
  };
  auto t4g = gpu("T4G");
  ASSERT_EQ(t4g.items.size(), 1u);  // only the library with device code is judged
  EXPECT_TRUE(t4g.pass());
  EXPECT_EQ(t4g.items[0].mode, "native");
  EXPECT_EQ(t4g.items[0].via, "sm_75");
  auto a10 = gpu("8.6");
  EXPECT_TRUE(a10.pass());
  EXPECT_EQ(a10.items[0].mode, "compatible_sass");
  EXPECT_EQ(a10.items[0].via, "sm_80");
  auto h100 = gpu("H100");
  EXPECT_FALSE(h100.pass());
  EXPECT_EQ(h100.items[0].mode, "none");

  VerdictSpecs req;
  req.require = "7.5";
  EXPECT_TRUE(evaluate(*report, req)->pass());
  req.require = "7.5;9.0";
  auto missing = *evaluate(*report, req);
  EXPECT_FALSE(missing.pass());
  EXPECT_EQ(missing.items[0].missing, std::vector<std::string>{"sm_90"});

  VerdictSpecs exact;
  exact.exact = "7.5;8.0";
  EXPECT_TRUE(evaluate(*report, exact)->pass());
  exact.exact = "8.0;8.0+PTX";
  auto diff = *evaluate(*report, exact);
  EXPECT_FALSE(diff.pass());
  EXPECT_EQ(diff.items[0].missing, std::vector<std::string>{"compute_80"});
  EXPECT_EQ(diff.items[0].extra, std::vector<std::string>{"sm_75"});

  VerdictSpecs bad;
  bad.gpu = "not-a-gpu-xyz";
  EXPECT_FALSE(evaluate(*report, bad));
}

TEST(Verdicts, NoDeviceCodeFailsRequire) {
  REQUIRE_FIXTURES("plain_c.so");
  auto report = inspect_paths({fixture("plain_c.so")});
  ASSERT_TRUE(report) << report.error().message;
  VerdictSpecs s;
  s.require = "8.0";
  auto v = evaluate(*report, s);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->pass());
  EXPECT_FALSE(v->problems.empty());
}

TEST(InspectPaths, DirectoryFindsLibrariesAndSkipsSymlinksAndOtherFiles) {
  REQUIRE_FIXTURES("sass_75_80.so", "glibc_234.so");
  fs::path dir = temp_dir() / "site";
  fs::create_directories(dir / "lib");
  fs::copy_file(fixture("sass_75_80.so"), dir / "lib/libk.so.1", fs::copy_options::overwrite_existing);
  fs::copy_file(fixture("glibc_234.so"), dir / "g.so", fs::copy_options::overwrite_existing);
  std::error_code ec;
  fs::create_symlink("libk.so.1", dir / "lib/libk.so", ec);
  std::ofstream(dir / "README.txt") << "not a library\n";
  auto report = inspect_paths({dir.string()});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->libraries.size(), 2u);
  EXPECT_EQ(report->libraries[0].path, (dir / "g.so").string());
  EXPECT_EQ(report->libraries[0].manylinux.tag, "manylinux_2_34_x86_64");
  EXPECT_EQ(report->targets_union(), (std::vector<std::string>{"sm_75", "sm_80"}));
}

TEST(InspectPaths, BadInputsAreErrors) {
  auto missing = inspect_paths({"/nonexistent/x.so"});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/nonexistent/x.so"), std::string::npos);
  fs::path txt = temp_dir() / "notes.txt";
  std::ofstream(txt) << "hello";
  auto not_elf = inspect_paths({txt.string()});
  ASSERT_FALSE(not_elf);
  EXPECT_NE(not_elf.error().message.find("neither an ELF"), std::string::npos);
  fs::path fake = temp_dir() / "fake-1.0-py3-none-any.whl";
  std::ofstream(fake) << "PK but not really a zip";
  auto bad_zip = inspect_paths({fake.string()});
  ASSERT_FALSE(bad_zip);
  EXPECT_NE(bad_zip.error().message.find("end of central directory"), std::string::npos) << bad_zip.error().message;
}

TEST(Render, JsonHasTheStableFields) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto report = inspect_paths({good_wheel()});
  ASSERT_TRUE(report);
  VerdictSpecs s;
  s.gpu = "T4G";
  auto v = evaluate(*report, s);
  auto j = to_json(*report, &*v);
  const auto& w = j["wheels"][0];
  EXPECT_EQ(w["targets"], nlohmann::json({"sm_75", "sm_80"}));
  EXPECT_TRUE(w["manylinux"].is_string());
  EXPECT_EQ(w["local_label"], "cu130");
  EXPECT_EQ(w["record"]["passed"], true);
  EXPECT_EQ(w["libraries"][0]["path"], "demo/lib/kernels.so");
  EXPECT_EQ(w["libraries"][0]["targets"], nlohmann::json({"sm_75", "sm_80"}));
  EXPECT_EQ(j["verdicts"]["pass"], true);
  EXPECT_EQ(j["verdicts"]["items"][0]["mode"], "native");
  auto text = render_text(*report, &*v);
  EXPECT_NE(text.find("sm_75"), std::string::npos);
  EXPECT_NE(text.find("\u2588"), std::string::npos);  // the share bar
  EXPECT_NE(text.find("verdict PASS: gpu 7.5"), std::string::npos) << text;
}

TEST(Render, ShareBar) {
  EXPECT_EQ(share_bar(0.0, 4), "\u2591\u2591\u2591\u2591");
  EXPECT_EQ(share_bar(0.5, 4), "\u2588\u2588\u2591\u2591");
  EXPECT_EQ(share_bar(0.01, 4), "\u2588\u2591\u2591\u2591");
  EXPECT_EQ(share_bar(2.0, 2), "\u2588\u2588");
}
