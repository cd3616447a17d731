// The wheel normaliser over wheels made in the test by Python's zipfile, the way
// setuptools' bdist_wheel writes them (its own member order, times and modes): the result
// is checked by tailor's inspect (RECORD), by pip (install --target) and byte for byte
// against the same wheel given in another order with other times.
#include "outputs/wheel_normaliser.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "formats/zip.h"
#include "inspect/inspect_report.h"
#include "support/fixtures.h"
#include "util/mapped_file.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::outputs;
namespace fs = std::filesystem;

namespace {

bool have_python() {
  return run_command({"python3", "-c", "import zipfile, hashlib, csv"}, std::chrono::seconds(30))
      .ok();
}

// A wheel like bdist_wheel's: members in `order` (a Python expression over the list of
// names), each with time `date` and the mode given, RECORD with correct hashes unless
// `damage` names a member whose row lies; plus a directory entry and a ZIP extra field.
fs::path make_wheel(const std::string& name, const std::string& order, const std::string& date,
                    const std::string& damage = "") {
  fs::path out = test::scratch_dir("normaliser_test") / name;
  fs::create_directories(out.parent_path());
  fs::path py = test::scratch_dir("normaliser_test") / (name + ".py");
  std::ofstream(py) << R"(import base64, csv, hashlib, io, sys, zipfile
out, date, damage = sys.argv[1], eval(sys.argv[2]), sys.argv[3]
di = 'demo_pkg-1.0.dist-info'
members = {
    'demo_pkg/__init__.py': (b'from ._C import *\n', 0o644),
    'demo_pkg/bin/tool': (bytes(range(256)) * 400, 0o755),
    'demo_pkg/data, with comma.txt': (b'comma\n', 0o664),
    'demo_pkg-1.0.data/scripts/demo': (b'#!python\nprint(1)\n', 0o755),
    di + '/METADATA': (b'Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n', 0o644),
    di + '/WHEEL': (b'Wheel-Version: 1.0\nGenerator: bdist_wheel (0.45.1)\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n\n', 0o644),
    di + '/top_level.txt': (b'demo_pkg\n', 0o600),
}
names = list(members)
names = )" << order << R"(
buf = io.StringIO()
w = csv.writer(buf, lineterminator='\n')
for n in names:
    data = members[n][0]
    digest = base64.urlsafe_b64encode(hashlib.sha256(data + (b'x' if n == damage else b'')).digest()).rstrip(b'=').decode()
    w.writerow([n, 'sha256=' + digest, len(data)])
w.writerow([di + '/RECORD', '', ''])
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    d = zipfile.ZipInfo('demo_pkg/', date)
    d.external_attr = (0o40755 << 16) | 0x10
    z.writestr(d, b'')
    for n in names:
        i = zipfile.ZipInfo(n, date)
        i.external_attr = (0o100000 | members[n][1]) << 16
        i.compress_type = zipfile.ZIP_DEFLATED
        i.extra = b'\x55\x54\x05\x00\x01\x00\x00\x00\x00'  # an "extended timestamp" field
        z.writestr(i, members[n][0])
    z.writestr(zipfile.ZipInfo(di + '/RECORD', date), buf.getvalue())
)";
  auto r =
      run_command({"python3", py.string(), out.string(), date, damage}, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.err;
  return out;
}

std::string names_in(const fs::path& wheel) {
  auto mapped = MappedFile::open(wheel.string());
  if (!mapped) return mapped.error().message;
  auto archive = formats::parse_zip(mapped->bytes());
  if (!archive) return archive.error().message;
  std::string out;
  for (const auto& e : archive->entries) out += e.name + "\n";
  return out;
}

}  // namespace

TEST(RecordField, QuotesLikePythonsCsv) {
  EXPECT_EQ(record_field("a/b.py"), "a/b.py");
  EXPECT_EQ(record_field("a,b"), "\"a,b\"");
  EXPECT_EQ(record_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(RetagWheelFile, ReplacesTagLinesWhereTheFirstStood) {
  auto t = retag_wheel_file(
      "Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\nTag: cp311-abi3-linux_x86_64\nBuild: "
      "1\n\n",
      "cp311-cp311-manylinux_2_28_x86_64");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(*t, "Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_28_x86_64\nBuild: 1\n\n");
  EXPECT_FALSE(retag_wheel_file("Tag: a-b-c\n", "not a tag"));
  EXPECT_FALSE(retag_wheel_file("Tag: a-b-c\n", "a--c"));
}

TEST(WheelNormaliser, SortsFixesTimesModesAndRebuildsRecord) {
  if (!have_python()) GTEST_SKIP() << "python3 needed to make the input wheel";
  fs::path in = make_wheel("sorts/demo_pkg-1.0-cp311-cp311-linux_x86_64.whl", "names[::-1]",
                           "(2024, 5, 6, 7, 8, 10)");
  auto n = normalise_wheel(in.string(), {1700000000, "{\"x\": 1}\n", "", ""});
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->path, in.string());
  EXPECT_EQ(n->dist_info, "demo_pkg-1.0.dist-info");
  EXPECT_EQ(n->members, 9u);
  // The package by name, then the dist-info by name, RECORD last; no directory entries.
  EXPECT_EQ(names_in(in),
            "demo_pkg-1.0.data/scripts/demo\n"
            "demo_pkg/__init__.py\n"
            "demo_pkg/bin/tool\n"
            "demo_pkg/data, with comma.txt\n"
            "demo_pkg-1.0.dist-info/METADATA\n"
            "demo_pkg-1.0.dist-info/WHEEL\n"
            "demo_pkg-1.0.dist-info/tailor-provenance.json\n"
            "demo_pkg-1.0.dist-info/top_level.txt\n"
            "demo_pkg-1.0.dist-info/RECORD\n");
  auto listing =
      run_command({"python3", "-c",
                   "import sys, zipfile\n"
                   "z = zipfile.ZipFile(sys.argv[1])\n"
                   "assert z.testzip() is None\n"
                   "for i in z.infolist():\n"
                   "    print(oct(i.external_attr >> 16), i.date_time, len(i.extra), i.filename)\n"
                   "print(z.read('demo_pkg-1.0.dist-info/RECORD').decode(), end='')\n",
                   in.string()},
                  std::chrono::seconds(60));
  ASSERT_TRUE(listing.ok()) << listing.err;
  const std::string t = " (2023, 11, 14, 22, 13, 20) 0 ";
  EXPECT_NE(listing.out.find("0o100755" + t + "demo_pkg-1.0.data/scripts/demo\n"),
            std::string::npos)
      << listing.out;
  EXPECT_NE(listing.out.find("0o100755" + t + "demo_pkg/bin/tool\n"), std::string::npos);
  EXPECT_NE(listing.out.find("0o100644" + t + "demo_pkg/data, with comma.txt\n"),
            std::string::npos);  // 0664 -> 0644
  EXPECT_NE(listing.out.find("0o100644" + t + "demo_pkg-1.0.dist-info/top_level.txt\n"),
            std::string::npos);  // 0600 -> 0644
  EXPECT_NE(listing.out.find("\"demo_pkg/data, with comma.txt\",sha256="), std::string::npos)
      << listing.out;
  EXPECT_NE(listing.out.find("demo_pkg-1.0.dist-info/tailor-provenance.json,sha256="),
            std::string::npos);
  EXPECT_TRUE(listing.out.ends_with("demo_pkg-1.0.dist-info/RECORD,,\n")) << listing.out;

  // inspect's RECORD check: every member listed, every hash and size right.
  auto report = inspect::inspect_paths({in.string()});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->wheels.size(), 1u);
  EXPECT_TRUE(report->wheels[0].record.passed());
  EXPECT_EQ(report->wheels[0].record.ok, 8u);

  // pip installs it, with the executable bits where they were.
  fs::path target = test::scratch_dir("normaliser_test") / "sorts" / "site";
  auto pip = run_command({"python3", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                          "--target", target.string(), in.string()},
                         std::chrono::seconds(300));
  if (!pip.started || pip.err.find("No module named pip") != std::string::npos)
    GTEST_SKIP() << "pip not available";
  ASSERT_TRUE(pip.ok()) << pip.out << pip.err;
  EXPECT_EQ(test::slurp_text(target / "demo_pkg" / "__init__.py"), "from ._C import *\n");
  EXPECT_EQ(test::slurp_text(target / "demo_pkg-1.0.dist-info" / "tailor-provenance.json"),
            "{\"x\": 1}\n");
  EXPECT_NE(fs::status(target / "demo_pkg" / "bin" / "tool").permissions() & fs::perms::owner_exec,
            fs::perms::none);
}

// The torch pin: the version relabelled in the file name, the .dist-info and .data folders and
// METADATA, torch's requirement exact, RECORD naming the new folders; pip installs it.
TEST(WheelNormaliser, PinsTorchAndLabelsTheVersion) {
  if (!have_python()) GTEST_SKIP() << "python3 needed to make the input wheel";
  fs::path in = make_wheel("pin/demo_pkg-1.0-cp311-cp311-linux_x86_64.whl", "names",
                           "(2024, 5, 6, 7, 8, 10)");
  WheelNormaliseOptions o{1700000000, "{\"x\": 1}\n", "", "", std::nullopt};
  o.torch_pin = TorchPinEdit{"cu130torch2.11", "torch==2.11.0"};
  auto n = normalise_wheel(in.string(), o);
  ASSERT_TRUE(n) << n.error().message;
  const fs::path out =
      in.parent_path() / "demo_pkg-1.0+cu130torch2.11-cp311-cp311-linux_x86_64.whl";
  EXPECT_EQ(n->path, out.string());
  EXPECT_EQ(n->dist_info, "demo_pkg-1.0+cu130torch2.11.dist-info");
  EXPECT_FALSE(fs::exists(in)) << "the input is replaced under its new name";
  EXPECT_EQ(names_in(out),
            "demo_pkg-1.0+cu130torch2.11.data/scripts/demo\n"
            "demo_pkg/__init__.py\n"
            "demo_pkg/bin/tool\n"
            "demo_pkg/data, with comma.txt\n"
            "demo_pkg-1.0+cu130torch2.11.dist-info/METADATA\n"
            "demo_pkg-1.0+cu130torch2.11.dist-info/WHEEL\n"
            "demo_pkg-1.0+cu130torch2.11.dist-info/tailor-provenance.json\n"
            "demo_pkg-1.0+cu130torch2.11.dist-info/top_level.txt\n"
            "demo_pkg-1.0+cu130torch2.11.dist-info/RECORD\n");
  auto report = inspect::inspect_paths({out.string()});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->wheels[0].record.passed());
  EXPECT_EQ(report->wheels[0].metadata_version, "1.0+cu130torch2.11");
  EXPECT_EQ(report->wheels[0].requires_dist, std::vector<std::string>{"torch==2.11.0"});
  // Again over its own output: nothing changes.
  auto again = normalise_wheel(out.string(), o);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->path, out.string());
  fs::path target = test::scratch_dir("normaliser_test") / "pin" / "site";
  auto pip = run_command({"python3", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                          "--target", target.string(), out.string()},
                         std::chrono::seconds(300));
  if (!pip.started || pip.err.find("No module named pip") != std::string::npos)
    GTEST_SKIP() << "pip not available";
  ASSERT_TRUE(pip.ok()) << pip.out << pip.err;
  EXPECT_TRUE(fs::exists(target / "demo_pkg-1.0+cu130torch2.11.dist-info" / "METADATA"));
}

TEST(WheelNormaliser, SameContentInAnyOrderWithAnyTimesGivesTheSameBytes) {
  if (!have_python()) GTEST_SKIP() << "python3 needed to make the input wheels";
  fs::path a = make_wheel("order/a/demo_pkg-1.0-cp311-cp311-linux_x86_64.whl", "names",
                          "(2021, 1, 2, 3, 4, 6)");
  fs::path b = make_wheel("order/b/demo_pkg-1.0-cp311-cp311-linux_x86_64.whl",
                          "sorted(names, key=lambda n: n[::-1])", "(2025, 12, 31, 23, 59, 58)");
  ASSERT_NE(test::slurp_text(a), test::slurp_text(b));
  WheelNormaliseOptions opts{1600000000, "{}\n", "", ""};
  ASSERT_TRUE(normalise_wheel(a.string(), opts));
  ASSERT_TRUE(normalise_wheel(b.string(), opts));
  EXPECT_EQ(test::slurp_text(a), test::slurp_text(b));
  // Normalising again changes nothing.
  std::string once = test::slurp_text(a);
  ASSERT_TRUE(normalise_wheel(a.string(), opts));
  EXPECT_EQ(test::slurp_text(a), once);
  // Another epoch or provenance does change the bytes.
  ASSERT_TRUE(normalise_wheel(b.string(), {1600000100, "{}\n", "", ""}));
  EXPECT_NE(test::slurp_text(b), once);
  ASSERT_TRUE(normalise_wheel(b.string(), {1600000000, "{\"a\": 2}\n", "", ""}));
  EXPECT_NE(test::slurp_text(b), once);
}

TEST(WheelNormaliser, RetagsIntoANewFileAndLeavesTheInput) {
  if (!have_python()) GTEST_SKIP() << "python3 needed to make the input wheel";
  fs::path in = make_wheel("retag/demo_pkg-1.0-cp311-cp311-linux_x86_64.whl", "names",
                           "(2024, 1, 1, 0, 0, 0)");
  std::string before = test::slurp_text(in);
  fs::path out = test::scratch_dir("normaliser_test") / "retag" /
                 "demo_pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl";
  auto n = normalise_wheel(in.string(),
                           {1700000000, "", "cp311-cp311-manylinux_2_28_x86_64", out.string()});
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(test::slurp_text(in), before);
  auto report = inspect::inspect_paths({out.string()});
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->wheels[0].record.passed());
  EXPECT_TRUE(report->wheels[0].tags_consistent);
  EXPECT_EQ(report->wheels[0].tags_from_wheel_file,
            std::vector<std::string>{"cp311-cp311-manylinux_2_28_x86_64"});
  EXPECT_EQ(names_in(out).find("tailor-provenance.json"), std::string::npos);  // none asked for
}

TEST(WheelNormaliser, RefusesADamagedWheelAndLeavesItAlone) {
  if (!have_python()) GTEST_SKIP() << "python3 needed to make the input wheel";
  fs::path in = make_wheel("damaged/demo_pkg-1.0-cp311-cp311-linux_x86_64.whl", "names",
                           "(2024, 1, 1, 0, 0, 0)", "demo_pkg/__init__.py");
  std::string before = test::slurp_text(in);
  auto n = normalise_wheel(in.string(), {1700000000, "{}\n", "", ""});
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("'demo_pkg/__init__.py' does not match its RECORD row"),
            std::string::npos)
      << n.error().message;
  EXPECT_EQ(test::slurp_text(in), before);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(in.parent_path()))
    files += e.path().extension() != ".py";
  EXPECT_EQ(files, 1u);  // no temporary left beside it

  fs::path not_wheel = test::scratch_dir("normaliser_test") / "damaged" / "plain.whl";
  auto r =
      run_command({"python3", "-c",
                   "import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'w').writestr('a.txt', 'x')",
                   not_wheel.string()},
                  std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.err;
  auto none = normalise_wheel(not_wheel.string(), {0, "", "", ""});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("expected exactly one *.dist-info/WHEEL, found 0"),
            std::string::npos);
  std::ofstream(test::scratch_dir("normaliser_test") / "damaged" / "junk.whl") << "not a zip";
  EXPECT_FALSE(normalise_wheel(
      (test::scratch_dir("normaliser_test") / "damaged" / "junk.whl").string(), {0, "", "", ""}));
}

namespace {

// A wheel holding fixture libraries (tests/fixtures) as members `<member>` = fixture name,
// the way setuptools stores an extension (0755), with a correct RECORD.
fs::path make_library_wheel(const std::string& name,
                            const std::vector<std::pair<std::string, std::string>>& libraries) {
  fs::path out = test::scratch_dir("normaliser_test") / name;
  fs::create_directories(out.parent_path());
  std::vector<std::string> args = {"python3", "-c", R"(import base64, hashlib, sys, zipfile
out, pairs = sys.argv[1], sys.argv[2:]
di = 'ext_pkg-1.0.dist-info'
members = {di + '/WHEEL': b'Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n\n',
           di + '/METADATA': b'Metadata-Version: 2.1\nName: ext-pkg\nVersion: 1.0\n'}
for member, path in zip(pairs[::2], pairs[1::2]):
    members[member] = open(path, 'rb').read()
record = ''.join('%s,sha256=%s,%d\n' % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode(), len(d))
                 for n, d in members.items()) + di + '/RECORD,,\n'
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    for n, d in members.items():
        i = zipfile.ZipInfo(n, (2024, 1, 1, 0, 0, 0))
        i.external_attr = (0o100755 if n.endswith('.so') else 0o100644) << 16
        i.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(i, d)
    z.writestr(di + '/RECORD', record)
)",
                                   out.string()};
  for (const auto& [member, fixture] : libraries) {
    args.push_back(member);
    args.push_back(test::fixture(fixture));
  }
  auto r = run_command(args, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.err;
  return out;
}

// readelf -d of one member of a wheel, extracted beside it.
std::string member_dynamic(const fs::path& wheel, const std::string& member) {
  fs::path at = wheel.parent_path() / "extracted.so";
  auto x = run_command({"python3", "-c",
                        "import sys, zipfile; open(sys.argv[3], "
                        "'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
                        wheel.string(), member, at.string()},
                       std::chrono::seconds(60));
  EXPECT_TRUE(x.ok()) << x.err;
  return run_command({"readelf", "-dW", at.string()}).out;
}

}  // namespace

// The building Python's -Wl,-rpath (/root/.pyenv/.../lib) never reaches the published
// wheel: the normaliser drops every search path entry that is not $ORIGIN-relative, keeps
// the rest, RECORD answers to the new bytes, and the result is the same bytes every time.
TEST(WheelNormaliser, RemovesBuildMachineFoldersFromLibrarySearchPaths) {
  if (!have_python()) GTEST_SKIP() << "python3 needed to make the input wheel";
  for (const char* f : {"runpath_build_machine", "glibc_234", "plain_c"})
    if (!fs::exists(test::fixture(f))) GTEST_SKIP() << "fixture " << f << " not built";
  const std::vector<std::pair<std::string, std::string>> libs = {
      {"ext_pkg/_C.so", "runpath_build_machine"},
      {"ext_pkg/lib/libkeep.so", "glibc_234"},
      {"ext_pkg/libplain.so", "plain_c"}};
  fs::path in = make_library_wheel("runpath/a/ext_pkg-1.0-cp311-cp311-linux_x86_64.whl", libs);
  ASSERT_NE(member_dynamic(in, "ext_pkg/_C.so")
                .find("Library runpath: [/root/.pyenv/versions/3.11.7/lib]"),
            std::string::npos);

  auto n = normalise_wheel(in.string(), {1700000000, "{}\n", "", ""});
  ASSERT_TRUE(n) << n.error().message;
  ASSERT_EQ(n->search_paths.size(), 2u);
  EXPECT_EQ(n->search_paths[0].member, "ext_pkg/_C.so");
  EXPECT_EQ(n->search_paths[0].tag, "RUNPATH");
  EXPECT_EQ(n->search_paths[0].removed,
            (std::vector<std::string>{"/root/.pyenv/versions/3.11.7/lib"}));
  EXPECT_EQ(n->search_paths[0].after, "");
  EXPECT_EQ(n->search_paths[1].member, "ext_pkg/lib/libkeep.so");
  EXPECT_EQ(n->search_paths[1].after, "$ORIGIN/lib");

  std::string c = member_dynamic(in, "ext_pkg/_C.so");
  EXPECT_EQ(c.find("RUNPATH"), std::string::npos) << c;
  EXPECT_NE(c.find("Library soname: [libmachine.so]"), std::string::npos)
      << c;  // the other entries stay
  EXPECT_NE(member_dynamic(in, "ext_pkg/lib/libkeep.so").find("Library runpath: [$ORIGIN/lib]"),
            std::string::npos);

  auto report = inspect::inspect_paths({in.string()});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->wheels.size(), 1u);
  EXPECT_TRUE(report->wheels[0].record.passed());
  for (const auto& lib : report->wheels[0].libraries)
    for (const auto& w : lib.loader_warnings)
      EXPECT_EQ(w.find("build machine"), std::string::npos) << lib.path << ": " << w;

  // Reproducible: the same input again gives the same bytes; the output is a fixed point.
  fs::path again = make_library_wheel("runpath/b/ext_pkg-1.0-cp311-cp311-linux_x86_64.whl", libs);
  ASSERT_TRUE(normalise_wheel(again.string(), {1700000000, "{}\n", "", ""}));
  EXPECT_EQ(test::slurp_text(in), test::slurp_text(again));
  const std::string once = test::slurp_text(in);
  auto twice = normalise_wheel(in.string(), {1700000000, "{}\n", "", ""});
  ASSERT_TRUE(twice);
  EXPECT_TRUE(twice->search_paths.empty());
  EXPECT_EQ(test::slurp_text(in), once);
}

TEST(WheelNormaliser, AnEntryStaysOnlyWhenItIsRelativeToTheLibrary) {
  EXPECT_TRUE(search_path_entry_stays("$ORIGIN"));
  EXPECT_TRUE(search_path_entry_stays("$ORIGIN/../lib"));
  EXPECT_TRUE(search_path_entry_stays("${ORIGIN}/lib"));
  EXPECT_FALSE(search_path_entry_stays("/root/.pyenv/versions/3.11.7/lib"));
  EXPECT_FALSE(search_path_entry_stays("/usr/local/cuda/lib64"));
  EXPECT_FALSE(search_path_entry_stays("lib"));
  EXPECT_FALSE(search_path_entry_stays("$ORIGINAL/lib"));
  EXPECT_FALSE(search_path_entry_stays("$LIB"));
}

TEST(BuildProvenance, LeavesJobsCachesAndPathsOutOfTheWheel) {
  BuildProvenance p;
  fill_provenance_environment(p,
                              {{"TORCH_CUDA_ARCH_LIST", "7.5"},
                               {"FORCE_CUDA", "1"},
                               {"MAX_JOBS", "2"},
                               {"NVCC_THREADS", "4"},
                               {"CUDA_HOME", "/usr/local/cuda"},
                               {"CXX", "/tmp/work/compiler-wrappers/g++"},
                               {"PYTORCH_NVCC", "ccache /usr/local/cuda/bin/nvcc"},
                               {"SOURCE_DATE_EPOCH", "1700000000"}},
                              {"MAX_JOBS", "NVCC_THREADS"});
  EXPECT_EQ(p.environment, (std::map<std::string, std::string>{{"FORCE_CUDA", "1"},
                                                               {"TORCH_CUDA_ARCH_LIST", "7.5"}}));
  EXPECT_EQ(p.left_out, (std::vector<std::string>{"CUDA_HOME", "CXX", "MAX_JOBS", "NVCC_THREADS",
                                                  "PYTORCH_NVCC", "SOURCE_DATE_EPOCH"}));
  fill_provenance_toolchain(p, {{"nvcc", "13.0 (/usr/local/cuda/bin/nvcc)"},
                                {"torch", "2.11.0+cu130 (CUDA 13.0)"},
                                {"ccache", "4.8"},
                                {"gcc", "12.2.0"}});
  EXPECT_EQ(p.toolchain,
            (std::map<std::string, std::string>{
                {"gcc", "12.2.0"}, {"nvcc", "13.0"}, {"torch", "2.11.0+cu130 (CUDA 13.0)"}}));
  p.source_date_epoch = 1700000000;
  std::string text = provenance_file_text(p);
  EXPECT_EQ(text, provenance_file_text(p));
  EXPECT_EQ(text.find("MAX_JOBS"), std::string::npos);
  EXPECT_EQ(text.find("/usr/local"), std::string::npos);
  EXPECT_NE(text.find("\"source_date_epoch\": 1700000000"), std::string::npos) << text;
  EXPECT_EQ(without_credentials("https://user:token@github.com/a/b.git"),
            "https://github.com/a/b.git");
  EXPECT_EQ(without_credentials("https://github.com/a/b.git"), "https://github.com/a/b.git");
  EXPECT_EQ(without_credentials("git@github.com:a/b.git"), "git@github.com:a/b.git");
}
