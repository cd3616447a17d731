// inspect_wheel / inspect_paths / verdicts over wheels built in the test by Python's
// zipfile from the nvcc and g++ fixture libraries (tests/fixtures/README.md): a correct
// wheel, a tampered RECORD, a false manylinux claim, a hostile member name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "inspect/inspect_outcome.h"
#include "inspect/inspect_report.h"
#include "inspect/render.h"
#include "inspect/verdicts.h"
#include "inspect/wheel_pass.h"
#include "test_wheels.h"
#include "util/mapped_file.h"
#include "util/process.h"

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
  // nvcc's host code calls GLIBC_2.34 symbols (readelf -V on the fixture). In a cross build
  // plain.so is the target's and kernels.so nvcc's host's: a wheel of two machines is plain
  // linux of the first library's machine, and says why.
  const std::string m = tailor::test::nvcc_fixture_machine();
  if (tailor::test::cxx_fixture_machine() == m) {
    EXPECT_EQ(w.manylinux_needed, "manylinux_2_34_" + m);
  } else {
    EXPECT_EQ(w.manylinux_needed, "linux_" + m);
    bool said = false;
    for (const auto& l : w.manylinux_limiting) said |= l.find("demo/lib/plain.so: machine ") == 0;
    EXPECT_TRUE(said) << testing::PrintToString(w.manylinux_limiting);
  }
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
  const std::string m =
      tailor::test::cxx_fixture_machine();  // the tags name the library's own machine
  auto path = make_wheel("1.0", "cp311-cp311-manylinux_2_17_" + m,
                         {{"demo/fast.so", fixture("glibc_234.so")}});
  auto report = inspect_paths({path});
  ASSERT_TRUE(report) << report.error().message;
  const auto& w = report->wheels[0];
  EXPECT_EQ(w.manylinux_needed, "manylinux_2_34_" + m);
  EXPECT_FALSE(w.claim_ok);
  EXPECT_NE(w.claim_problem.find("manylinux_2_17_" + m), std::string::npos) << w.claim_problem;
  EXPECT_NE(w.claim_problem.find("GLIBC_2.34"), std::string::npos) << w.claim_problem;
  // The same library under an honest tag passes.
  auto honest = inspect_paths({make_wheel("1.0", "cp311-cp311-manylinux_2_34_" + m,
                                          {{"demo/fast.so", fixture("glibc_234.so")}})});
  ASSERT_TRUE(honest);
  EXPECT_TRUE(honest->wheels[0].claim_ok) << honest->wheels[0].claim_problem;
}

// Issue 27: a backend for another GPU platform (here a library needing ROCm's
// libhipblas.so.2 from the system) breaks the manylinux claim; the claim is judged again
// without it, and only a CUDA or CPU library that breaks it fails the run.
TEST(WheelInspect, ManylinuxClaimIsJudgedWithoutAnotherGpuPlatformsLibraries) {
  REQUIRE_FIXTURES("plain_c.so", "rocm_backend.so", "glibc_234.so");
  const std::string m = tailor::test::cxx_fixture_machine();
  auto path = make_wheel(
      "1.0", "cp311-cp311-manylinux_2_17_" + m,
      {{"demo/plain.so", fixture("plain_c.so")}, {"demo/librocm.so", fixture("rocm_backend.so")}});
  auto report = inspect_paths({path});
  ASSERT_TRUE(report) << report.error().message;
  const auto& w = report->wheels[0];
  EXPECT_FALSE(w.claim_ok);
  EXPECT_NE(w.claim_problem.find("libhipblas.so.2 from the system"), std::string::npos)
      << w.claim_problem;
  ASSERT_EQ(w.other_gpu_libraries.size(), 1u);
  EXPECT_EQ(w.other_gpu_libraries[0].path, "demo/librocm.so");
  EXPECT_EQ(w.other_gpu_libraries[0].platform, "ROCm");
  EXPECT_TRUE(w.claim_ok_without_other_gpu) << w.claim_problem_without_other_gpu;
  auto outcome = judge(*report, nullptr);
  EXPECT_FALSE(outcome.failed()) << outcome.failure_line();
  ASSERT_EQ(outcome.warnings.size(), 1u);
  EXPECT_NE(outcome.warnings[0].find("not for the ROCm library (demo/librocm.so)"),
            std::string::npos)
      << outcome.warnings[0];
  EXPECT_NE(render_text(*report).find("WRONG for the ROCm libraries only (a warning"),
            std::string::npos);

  // A CPU library that needs a newer glibc than the tag fails the run, whatever the ROCm one does.
  auto mixed = inspect_paths({make_wheel("1.0", "cp311-cp311-manylinux_2_17_" + m,
                                         {{"demo/fast.so", fixture("glibc_234.so")},
                                          {"demo/librocm.so", fixture("rocm_backend.so")}})});
  ASSERT_TRUE(mixed) << mixed.error().message;
  EXPECT_FALSE(mixed->wheels[0].claim_ok_without_other_gpu);
  auto failed = judge(*mixed, nullptr);
  ASSERT_TRUE(failed.failed());
  EXPECT_NE(failed.failure_line().find("its manylinux tag is wrong: claims manylinux_2_17_" + m),
            std::string::npos)
      << failed.failure_line();
  EXPECT_NE(failed.failure_line().find("GLIBC_2.34"), std::string::npos) << failed.failure_line();
  EXPECT_EQ(failed.failure_line().find("libhipblas"), std::string::npos) << failed.failure_line();
}

TEST(WheelInspect, WheelFileTagsThatDifferFromTheNameAreNoticed) {
  REQUIRE_FIXTURES("plain_c.so");
  auto path = make_wheel("1.0", "cp311-cp311-manylinux_2_28_x86_64",
                         {{"demo/p.so", fixture("plain_c.so")}}, {}, "cp311-cp311-linux_x86_64");
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
    s.gpu = {spec};
    auto v = evaluate(*report, s);
    EXPECT_TRUE(v) << v.error().message;
    return *v;
  };
  auto t4 = gpu("T4");             // not T4G: it exists only on aarch64 (verdicts_test.cpp)
  ASSERT_EQ(t4.items.size(), 1u);  // only the library with device code is judged
  EXPECT_TRUE(t4.pass());
  EXPECT_EQ(t4.items[0].mode, "native");
  EXPECT_EQ(t4.items[0].via, "sm_75");
  auto a10 = gpu("8.6");
  EXPECT_TRUE(a10.pass());
  EXPECT_EQ(a10.items[0].mode, "compatible_sass");
  EXPECT_EQ(a10.items[0].via, "sm_80");
  auto h100 = gpu("H100");
  EXPECT_FALSE(h100.pass());
  EXPECT_EQ(h100.items[0].mode, "none");

  VerdictSpecs req;
  req.require = {"7.5"};
  EXPECT_TRUE(evaluate(*report, req)->pass());
  req.require = {"7.5;9.0"};
  auto missing = *evaluate(*report, req);
  EXPECT_FALSE(missing.pass());
  EXPECT_EQ(missing.items[0].missing, std::vector<std::string>{"sm_90"});

  VerdictSpecs exact;
  exact.exact = {"7.5;8.0"};
  EXPECT_TRUE(evaluate(*report, exact)->pass());
  exact.exact = {"8.0;8.0+PTX"};
  auto diff = *evaluate(*report, exact);
  EXPECT_FALSE(diff.pass());
  EXPECT_EQ(diff.items[0].missing, std::vector<std::string>{"compute_80"});
  EXPECT_EQ(diff.items[0].extra, std::vector<std::string>{"sm_75"});

  VerdictSpecs bad;
  bad.gpu = {"not-a-gpu-xyz"};
  EXPECT_FALSE(evaluate(*report, bad));
}

TEST(Verdicts, NoDeviceCodeFailsRequire) {
  REQUIRE_FIXTURES("plain_c.so");
  auto report = inspect_paths({fixture("plain_c.so")});
  ASSERT_TRUE(report) << report.error().message;
  VerdictSpecs s;
  s.require = {"8.0"};
  auto v = evaluate(*report, s);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->pass());
  EXPECT_FALSE(v->problems.empty());
}

TEST(InspectPaths, DirectoryFindsLibrariesAndSkipsSymlinksAndOtherFiles) {
  REQUIRE_FIXTURES("sass_75_80.so", "glibc_234.so");
  fs::path dir = temp_dir() / "site";
  fs::create_directories(dir / "lib");
  fs::copy_file(fixture("sass_75_80.so"), dir / "lib/libk.so.1",
                fs::copy_options::overwrite_existing);
  fs::copy_file(fixture("glibc_234.so"), dir / "g.so", fs::copy_options::overwrite_existing);
  std::error_code ec;
  fs::create_symlink("libk.so.1", dir / "lib/libk.so", ec);
  std::ofstream(dir / "README.txt") << "not a library\n";
  auto report = inspect_paths({dir.string()});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->libraries.size(), 2u);
  EXPECT_EQ(report->libraries[0].path, (dir / "g.so").string());
  EXPECT_EQ(report->libraries[0].manylinux.tag,
            "manylinux_2_34_" + tailor::test::cxx_fixture_machine());
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
  EXPECT_NE(bad_zip.error().message.find("end of central directory"), std::string::npos)
      << bad_zip.error().message;
}

TEST(Render, JsonHasTheStableFields) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto report = inspect_paths({good_wheel()});
  ASSERT_TRUE(report);
  VerdictSpecs s;
  s.gpu = {"T4"};
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
  EXPECT_NE(text.find("verdict PASS: gpu T4 (7.5)"), std::string::npos) << text;
}

TEST(Render, ShareBar) {
  EXPECT_EQ(share_bar(0.0, 4), "\u2591\u2591\u2591\u2591");
  EXPECT_EQ(share_bar(0.5, 4), "\u2588\u2588\u2591\u2591");
  EXPECT_EQ(share_bar(0.01, 4), "\u258F\u2591\u2591\u2591");  // a sliver, not a whole block
  EXPECT_EQ(share_bar(0.003, 10), "\u258F\u2591\u2591\u2591\u2591\u2591\u2591\u2591\u2591\u2591");
  EXPECT_EQ(share_bar(0.3125, 4), "\u2588\u258E\u2591\u2591");  // 1.25 cells: a block and a quarter
  EXPECT_EQ(share_bar(1.0, 3), "\u2588\u2588\u2588");
  EXPECT_EQ(share_bar(2.0, 2), "\u2588\u2588");
}

namespace {

// inspect_wheel over a mapped wheel with the given memory plan.
Expected<WheelReport> inspect_with(const std::string& path, uint64_t whole_member_bytes,
                                   unsigned threads = 0) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  InspectOptions o;
  o.threads = threads;
  WheelPassOptions pass;
  pass.whole_member_bytes = whole_member_bytes;
  pass.release_file_pages = true;
  return inspect_wheel(mapped->bytes(), path, o, pass);
}

// The facts of a library that must not depend on how its bytes reached the analysis.
std::string library_facts(const LibraryReport& l) {
  std::string s = l.machine + " size=" + std::to_string(l.file_size) +
                  " dev=" + std::to_string(l.device_code_bytes) + " soname=" + l.soname +
                  " cxx11=" + (l.cxx11_abi ? (*l.cxx11_abi ? "1" : "0") : "?") +
                  " isa=" + l.x86_isa_level.value_or("-") + "\n";
  for (const auto& t : l.targets) {
    s += t.name + " entries=" + std::to_string(t.entries) +
         " stored=" + std::to_string(t.stored_bytes) +
         " uncompressed=" + std::to_string(t.uncompressed_bytes) + " [";
    for (const auto& c : t.compression) s += c + " ";
    s += "]\n";
  }
  for (const auto& n : l.needed) s += "needed " + n + "\n";
  for (const auto& r : l.runpath) s += "runpath " + r + "\n";
  for (const auto& r : l.rpath) s += "rpath " + r + "\n";
  for (const auto& v : l.version_needs) {
    s += "verneed " + v.file + ":";
    for (const auto& x : v.versions) s += " " + x;
    s += "\n";
  }
  return s;
}

// A copy of a fixture with a section of `pad` pseudo-random bytes added by objcopy, which
// puts the new section and then the section header table at the end of the file.
std::string padded_library(const char* name, size_t pad) {
  fs::path blob = temp_dir() / "pad.bin", out = temp_dir() / (std::string("padded_") + name);
  auto r = run_command(
      {"python3", "-c",
       "import random,sys; r=random.Random(3); open(sys.argv[1],'wb').write(bytes(r.getrandbits(8) "
       "for _ in range(int(sys.argv[2]))))",
       blob.string(), std::to_string(pad)},
      std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.err;
  auto o = run_command(
      {"objcopy", "--add-section", ".tailor_pad=" + blob.string(), fixture(name), out.string()},
      std::chrono::seconds(60));
  EXPECT_TRUE(o.ok()) << o.err;
  return out.string();
}

}  // namespace

TEST(WheelStreaming, StreamedAndWholeMembersGiveTheSameReport) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so", "sass_ptx_80.so", "rdc.so", "isa_v3.so",
                   "cxx11_abi.so");
  auto path = make_wheel("1.0", "cp311-cp311-linux_x86_64",
                         {{"demo/lib/kernels.so", fixture("sass_75_80.so")},
                          {"demo/lib/ptx.so", fixture("sass_ptx_80.so")},
                          {"demo/lib/rdc.so", fixture("rdc.so")},
                          {"demo/lib/isa.so", fixture("isa_v3.so")},
                          {"demo/lib/cxx.so", fixture("cxx11_abi.so")},
                          {"demo/lib/plain.so", fixture("plain_c.so")},
                          {"demo/__init__.py", "text:print('demo')\n"}},
                         {}, "", "demo", {"demo/lib/ptx.so", "demo/lib/plain.so"});
  auto a = inspect_with(path, WheelPassOptions{}.whole_member_bytes);
  auto b = inspect_with(path, 0);  // every member streamed, every library spilled
  auto c = inspect_with(path, 0, 1);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_TRUE(c) << c.error().message;
  InspectReport ra, rb, rc;
  ra.wheels.push_back(*a);
  rb.wheels.push_back(*b);
  rc.wheels.push_back(*c);
  EXPECT_EQ(to_json(ra).dump(), to_json(rb).dump());
  EXPECT_EQ(to_json(rb).dump(), to_json(rc).dump());
  EXPECT_TRUE(b->record.passed());
  // And both equal the library reader on the fixture files themselves.
  const std::map<std::string, std::string> source = {{"demo/lib/kernels.so", "sass_75_80.so"},
                                                     {"demo/lib/ptx.so", "sass_ptx_80.so"},
                                                     {"demo/lib/rdc.so", "rdc.so"},
                                                     {"demo/lib/isa.so", "isa_v3.so"},
                                                     {"demo/lib/cxx.so", "cxx11_abi.so"},
                                                     {"demo/lib/plain.so", "plain_c.so"}};
  ASSERT_EQ(b->libraries.size(), source.size());
  for (const auto& lib : b->libraries) {
    auto direct = analyze_library_file(fixture(source.at(lib.path).c_str()));
    ASSERT_TRUE(direct) << direct.error().message;
    EXPECT_EQ(library_facts(lib), library_facts(*direct)) << lib.path;
  }
}

TEST(WheelStreaming, SectionHeadersAtTheEndOfALargeStreamedMember) {
  REQUIRE_FIXTURES("sass_ptx_80.so");
  const std::string big = padded_library("sass_ptx_80.so", 3u << 20);
  ASSERT_GT(fs::file_size(big), 3u << 20);
  auto direct = analyze_library_file(big);
  ASSERT_TRUE(direct) << direct.error().message;
  ASSERT_EQ(direct->target_names(), (std::vector<std::string>{"sm_80", "compute_80"}));
  for (bool stored : {false, true}) {
    auto path =
        make_wheel("1.0", "cp311-cp311-linux_x86_64", {{"demo/big.so", big}}, {}, "", "demo",
                   stored ? std::vector<std::string>{"demo/big.so"} : std::vector<std::string>{});
    auto r = inspect_with(path, 1u << 20);  // the 3 MiB library is streamed in 256 KiB chunks
    ASSERT_TRUE(r) << r.error().message;
    const auto& w = *r;
    EXPECT_TRUE(w.record.passed());
    ASSERT_EQ(w.libraries.size(), 1u);
    EXPECT_EQ(w.libraries[0].path, "demo/big.so");
    EXPECT_EQ(library_facts(w.libraries[0]), library_facts(*direct))
        << (stored ? "stored" : "deflated");
  }
}

TEST(WheelStreaming, RecordHashMismatchOfAStreamedMemberIsReported) {
  REQUIRE_FIXTURES("sass_75_80.so", "plain_c.so");
  auto path = make_wheel("1.0", "py3-none-linux_x86_64",
                         {{"demo/lib/kernels.so", fixture("sass_75_80.so")},
                          {"demo/lib/plain.so", fixture("plain_c.so")}},
                         {"hash"});
  auto report = inspect_with(path, 0);
  ASSERT_TRUE(report) << report.error().message;
  const auto& r = report->record;
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].path, "demo/lib/kernels.so");
  EXPECT_NE(r.mismatches[0].what.find("sha256 differs"), std::string::npos) << r.mismatches[0].what;
  // The library is still analyzed.
  EXPECT_EQ(report->target_names(), (std::vector<std::string>{"sm_75", "sm_80"}));
}

namespace {

// Writes a hostile wheel (see each test) and returns its path.
std::string hostile_wheel(const std::string& kind) {
  fs::path out = temp_dir() / kind / "demo-1.0-py3-none-any.whl";
  fs::create_directories(out.parent_path());
  const char* script = R"(
import sys, zipfile, zlib, struct
out, kind = sys.argv[1], sys.argv[2]
di = 'demo-1.0.dist-info'
wheel = b'Wheel-Version: 1.0\nTag: py3-none-any\n'
meta = b'Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n'
record = b''
if kind == 'wheel_newlines': wheel = b'\n' * (16 << 20)
if kind == 'metadata_lines': meta += b'X: y\n' * 3000000  # under the ratio floor: the cap answers
if kind == 'record_rows': record = b'a,,\n' * 4000000
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr(di + '/WHEEL', wheel)
    z.writestr(di + '/METADATA', meta)
    z.writestr(di + '/RECORD', record)
)";
  fs::path py = temp_dir() / "hostile_wheel.py";
  std::ofstream(py) << script;
  auto r = run_command({"python3", py.string(), out.string(), kind}, std::chrono::seconds(120));
  EXPECT_TRUE(r.ok()) << r.err;
  return out.string();
}

}  // namespace

TEST(WheelCaps, OversizedMetadataFilesAreRefusedBeforeTheyAreInflated) {
  const std::pair<const char*, const char*> cases[] = {
      {"wheel_newlines", "demo-1.0.dist-info/WHEEL: 16777216 bytes, over the limit of 1048576"},
      {"metadata_lines", "demo-1.0.dist-info/METADATA: 15000046 bytes, over the limit of 8388608"},
      {"record_rows", "demo-1.0.dist-info/RECORD: 16000000 bytes, over the limit of"},
  };
  for (auto [kind, want] : cases) {
    auto path = hostile_wheel(kind);
    auto r = inspect_paths({path});
    ASSERT_FALSE(r) << kind;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << "one line";
  }
}
