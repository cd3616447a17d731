// Needed libraries resolved as the loader does, over real libraries made at build time
// (tests/fixtures: libsibling.so, libmiddle.so, reach_sibling.so, lost_sibling.so,
// rpath_top.so, runpath_top.so, build_machine.so) placed in wheels and folders here.
#include "inspect/library_resolver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "inspect/cuda_providers.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/render.h"
#include "test_wheels.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::inspect;

namespace {

const InspectedLibrary& library(const WheelReport& w, const std::string& path) {
  for (const auto& l : w.libraries)
    if (l.path == path) return l;
  ADD_FAILURE() << "no library " << path;
  static InspectedLibrary none;
  return none;
}

const NeededLibrary& need(const InspectedLibrary& lib, const std::string& soname) {
  for (const auto& n : lib.needed_libraries)
    if (n.soname == soname) return n;
  ADD_FAILURE() << lib.path << " does not need " << soname;
  static NeededLibrary none;
  return none;
}

WheelReport one_wheel(const std::vector<std::pair<std::string, std::string>>& files,
                      const std::string& tag = "cp311-cp311-linux_x86_64") {
  auto report = inspect_paths({make_wheel("1.0", tag, files)});
  EXPECT_TRUE(report) << report.error().message;
  return report ? report->wheels.at(0) : WheelReport{};
}

// A minimal ELF64 x86-64 shared object holding only .dynstr and .dynamic: `needs`
// DT_NEEDED entries libneed<i>.so and one DT_RUNPATH of `entries` entries made by
// `entry_format` (Python %-format with the index).
const char* k_make_elf = R"(
import struct, sys
out, needs, entries, fmt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dynstr = bytearray(b'\0')
def add(s):
    off = len(dynstr); dynstr.extend(s.encode() + b'\0'); return off
dyn = [(1, add('libneed%d.so' % i)) for i in range(needs)]
dyn.append((29, add(':'.join(fmt % i if '%' in fmt else fmt for i in range(entries)))))
dyn.append((0, 0))
dynamic = b''.join(struct.pack('<qQ', t, v) for t, v in dyn)
shstr = b'\0.dynstr\0.dynamic\0.shstrtab\0'
off_dynstr = 64
off_dynamic = (off_dynstr + len(dynstr) + 7) // 8 * 8
off_shstr = off_dynamic + len(dynamic)
off_sh = (off_shstr + len(shstr) + 7) // 8 * 8
ehdr = b'\x7fELF' + bytes([2, 1, 1, 0]) + bytes(8)
ehdr += struct.pack('<HHIQQQIHHHHHH', 3, 62, 1, 0, 0, off_sh, 0, 64, 0, 0, 64, 4, 3)
def sh(name, typ, off, size, link=0, ent=0):
    return struct.pack('<IIQQQQIIQQ', name, typ, 2, 0, off, size, link, 0, 1, ent)
shdrs = bytes(64) + sh(1, 3, off_dynstr, len(dynstr)) + sh(9, 6, off_dynamic, len(dynamic), 1, 16) \
    + sh(18, 3, off_shstr, len(shstr))
img = bytearray(off_sh + len(shdrs))
img[0:64] = ehdr
img[off_dynstr:off_dynstr + len(dynstr)] = dynstr
img[off_dynamic:off_dynamic + len(dynamic)] = dynamic
img[off_shstr:off_shstr + len(shstr)] = shstr
img[off_sh:] = shdrs
open(out, 'wb').write(img)
)";

std::string make_hostile_elf(const std::string& name, int needs, int entries,
                             const std::string& entry_format) {
  fs::path py = temp_dir() / "make_elf.py";
  std::ofstream(py) << k_make_elf;
  fs::path out = temp_dir() / name;
  auto r = run_command({"python3", py.string(), out.string(), std::to_string(needs),
                        std::to_string(entries), entry_format},
                       std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.err;
  return out.string();
}

}  // namespace

TEST(LibraryResolver, RunpathThatReachesTheSiblingFindsItOneThatDoesNotSaysWhereItIs) {
  REQUIRE_FIXTURES("libsibling.so", "reach_sibling.so", "lost_sibling.so");
  auto w = one_wheel({{"pkg/lib/libsibling.so", fixture("libsibling.so")},
                      {"pkg/bin/reach.so", fixture("reach_sibling.so")},
                      {"pkg/bin/lost.so", fixture("lost_sibling.so")}});
  const auto& reach = need(library(w, "pkg/bin/reach.so"), "libsibling.so");
  EXPECT_EQ(reach.kind, NeededKind::bundled);
  EXPECT_EQ(reach.resolved, "pkg/lib/libsibling.so");
  EXPECT_EQ(reach.via, "RUNPATH $ORIGIN/../lib");
  const auto& lost = need(library(w, "pkg/bin/lost.so"), "libsibling.so");
  EXPECT_EQ(lost.kind, NeededKind::not_found);
  EXPECT_EQ(
      lost.note,
      "a file of that name is in the wheel at pkg/lib/libsibling.so, but no RUNPATH reaches it");
  EXPECT_EQ(needed_kind_key(lost.kind), "not-found");
  // A need nothing provides lowers the wheel to linux, and says why.
  EXPECT_EQ(w.manylinux_needed, "linux_" + tailor::test::cxx_fixture_machine());
  bool said = false;
  for (const auto& l : w.manylinux_limiting)
    said |= l.find("pkg/bin/lost.so: needs libsibling.so, not found") == 0;
  EXPECT_TRUE(said) << testing::PrintToString(w.manylinux_limiting);
  auto text = render_text(InspectReport{{}, {w}}, nullptr, TextOptions{false, true});
  EXPECT_NE(text.find("libsibling.so (not found: a file of that name is in the wheel at "
                      "pkg/lib/libsibling.so, but no "
                      "RUNPATH reaches it)"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("libsibling.so (bundled: pkg/lib/libsibling.so through RUNPATH $ORIGIN/../lib)"),
      std::string::npos)
      << text;
}

TEST(LibraryResolver, RpathServesTheLibrariesItLoadsRunpathDoesNot) {
  REQUIRE_FIXTURES("libsibling.so", "libmiddle.so", "rpath_top.so", "runpath_top.so");
  // rpath_top.so (RPATH $ORIGIN/../lib) -> libmiddle.so (no search path) -> libsibling.so
  auto with_rpath = one_wheel({{"pkg/lib/libsibling.so", fixture("libsibling.so")},
                               {"pkg/lib/libmiddle.so", fixture("libmiddle.so")},
                               {"pkg/bin/top.so", fixture("rpath_top.so")}});
  EXPECT_EQ(need(library(with_rpath, "pkg/bin/top.so"), "libmiddle.so").via,
            "RPATH $ORIGIN/../lib");
  const auto& inherited = need(library(with_rpath, "pkg/lib/libmiddle.so"), "libsibling.so");
  EXPECT_EQ(inherited.kind, NeededKind::bundled);
  EXPECT_EQ(inherited.resolved, "pkg/lib/libsibling.so");
  EXPECT_EQ(inherited.via, "RPATH $ORIGIN/../lib of pkg/bin/top.so");
  // The same chain with RUNPATH on the top: libmiddle.so's own need is not served.
  auto with_runpath = one_wheel({{"pkg/lib/libsibling.so", fixture("libsibling.so")},
                                 {"pkg/lib/libmiddle.so", fixture("libmiddle.so")},
                                 {"pkg/bin/top.so", fixture("runpath_top.so")}});
  EXPECT_EQ(need(library(with_runpath, "pkg/bin/top.so"), "libmiddle.so").kind,
            NeededKind::bundled);
  const auto& lost = need(library(with_runpath, "pkg/lib/libmiddle.so"), "libsibling.so");
  EXPECT_EQ(lost.kind, NeededKind::not_found);
  EXPECT_EQ(lost.note,
            "a file of that name is in the wheel at pkg/lib/libsibling.so, but the library has no "
            "RUNPATH or RPATH to "
            "reach it");
}

TEST(LibraryResolver, PurelibAndPlatlibInstallBesideTheTopLevel) {
  REQUIRE_FIXTURES("libsibling.so", "reach_sibling.so");
  auto w = one_wheel({{"demo-1.0.data/platlib/pkg/lib/libsibling.so", fixture("libsibling.so")},
                      {"pkg/bin/reach.so", fixture("reach_sibling.so")}});
  const auto& n = need(library(w, "pkg/bin/reach.so"), "libsibling.so");
  EXPECT_EQ(n.kind, NeededKind::bundled);
  EXPECT_EQ(n.resolved, "demo-1.0.data/platlib/pkg/lib/libsibling.so");
}

TEST(LibraryResolver, BuildMachineFoldersAndLoaderTokensAreWarnings) {
  REQUIRE_FIXTURES("libsibling.so", "build_machine.so");
  auto w = one_wheel({{"pkg/lib/libsibling.so", fixture("libsibling.so")},
                      {"pkg/bin/b.so", fixture("build_machine.so")}});
  const auto& lib = library(w, "pkg/bin/b.so");
  EXPECT_EQ(need(lib, "libsibling.so").kind, NeededKind::bundled);  // $ORIGIN/../lib still works
  ASSERT_EQ(lib.loader_warnings.size(), 2u) << testing::PrintToString(lib.loader_warnings);
  EXPECT_EQ(
      lib.loader_warnings[0].find(
          "RUNPATH entry '/project/build/lib' is a folder of the build machine (/project/...)"),
      0u)
      << lib.loader_warnings[0];
  EXPECT_EQ(lib.loader_warnings[1],
            "RUNPATH entry '$LIB/extra' uses $LIB, which the loading system decides: not searched");
  auto j = to_json(InspectReport{{}, {w}});
  bool found = false;
  for (const auto& l : j["wheels"][0]["libraries"])
    if (l["path"] == "pkg/bin/b.so") found = l["loader_warnings"].size() == 2;
  EXPECT_TRUE(found) << j.dump(1);
  auto text = render_text(InspectReport{{}, {w}}, nullptr, TextOptions{false, true});
  EXPECT_NE(text.find("WARNING    RUNPATH entry '/project/build/lib'"), std::string::npos) << text;
  EXPECT_EQ(LoaderRules::get().build_machine_prefix("/home/runner/work/x/lib"), "/home/");
  EXPECT_EQ(LoaderRules::get().build_machine_prefix("/project"), "/project/");
  EXPECT_EQ(LoaderRules::get().build_machine_prefix("/usr/local/cuda/lib64"), "");
  EXPECT_EQ(LoaderRules::get().build_machine_prefix("$ORIGIN/../lib"), "");
}

TEST(LibraryResolver, InstalledFoldersResolveOnDiskAndSayWhere) {
  REQUIRE_FIXTURES("libsibling.so", "reach_sibling.so", "lost_sibling.so");
  fs::path site = temp_dir() / "resolver_site";
  fs::create_directories(site / "pkg/bin");
  fs::create_directories(site / "pkg/lib");
  fs::copy_file(fixture("libsibling.so"), site / "pkg/lib/libsibling.so",
                fs::copy_options::overwrite_existing);
  fs::copy_file(fixture("reach_sibling.so"), site / "pkg/bin/reach.so",
                fs::copy_options::overwrite_existing);
  fs::copy_file(fixture("lost_sibling.so"), site / "pkg/bin/lost.so",
                fs::copy_options::overwrite_existing);
  // Only bin/ inspected: the sibling is found on disk, outside the inputs.
  auto only_bin = inspect_paths({(site / "pkg/bin").string()});
  ASSERT_TRUE(only_bin) << only_bin.error().message;
  ASSERT_EQ(only_bin->libraries.size(), 2u);
  const auto& lost = need(only_bin->libraries[0], "libsibling.so");  // lost.so sorts first
  EXPECT_EQ(lost.kind, NeededKind::system);  // nothing of that name among the inputs
  const auto& found = need(only_bin->libraries[1], "libsibling.so");
  EXPECT_EQ(found.kind, NeededKind::found);
  EXPECT_EQ(found.resolved, (site / "pkg/lib/libsibling.so").string());
  EXPECT_EQ(found.via, "RUNPATH $ORIGIN/../lib");
  // The whole package: bundled for the one that reaches it, not found for the other.
  auto all = inspect_paths({(site / "pkg").string()});
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->libraries.size(), 3u);
  EXPECT_EQ(need(all->libraries[1], "libsibling.so").kind, NeededKind::bundled);
  const auto& unreached = need(all->libraries[0], "libsibling.so");
  EXPECT_EQ(unreached.kind, NeededKind::not_found);
  EXPECT_EQ(unreached.note, "a file of that name is among the inputs at " +
                                (site / "pkg/lib/libsibling.so").string() +
                                ", but no RUNPATH reaches it");
}

// A RUNPATH of 100,000 entries (1.2 MB) is refused by the ELF reader's cap on one path list
// (64 KiB). Under that cap, 4,000 distinct entries and 2,000 needs would be 8 million
// lookups; the capped search does 512,000 hash lookups. The test asserts the caps, not time.
TEST(LibraryResolver, HostileRunpathIsDeduplicatedAndCapped) {
  auto huge = inspect_paths({make_hostile_elf("huge_runpath.so", 2000, 100000, "$ORIGIN/d%d")});
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("DT_RUNPATH"), std::string::npos) << huge.error().message;

  auto path = make_hostile_elf("hostile_runpath.so", 2000, 4000, "$ORIGIN/%x");
  auto report = inspect_paths({path});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->libraries.size(), 1u);
  const auto& lib = report->libraries[0];
  EXPECT_EQ(lib.needed_libraries.size(), 2000u);
  EXPECT_EQ(lib.runpath.size(), 256u);  // what is kept is what was searched
  ASSERT_EQ(lib.loader_warnings.size(), 1u) << testing::PrintToString(lib.loader_warnings);
  EXPECT_EQ(
      lib.loader_warnings[0],
      "RUNPATH has 4000 entries (4000 distinct); only the first 256 distinct entries are searched");
  // Inside a wheel the same file is looked up in the member index.
  auto w = one_wheel({{"pkg/h.so", path}});
  ASSERT_EQ(w.libraries.size(), 1u);
  EXPECT_EQ(w.libraries[0].loader_warnings, lib.loader_warnings);
  // 6,000 copies of one entry are one directory.
  auto same = inspect_paths({make_hostile_elf("same_runpath.so", 2000, 6000, "$ORIGIN")});
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_EQ(same->libraries[0].loader_warnings,
            std::vector<std::string>{
                "RUNPATH has 6000 entries but only 1 distinct; each is searched once"});
  EXPECT_EQ(same->libraries[0].runpath.size(), 1u);
}

TEST(CudaLibraries, EveryMajorIsACudaLibraryWithItsOwnProvider) {
  const auto& c = CudaProviders::get();
  auto wheels = [&](const std::string& soname) {
    std::vector<std::string> out;
    for (const auto* p : c.lookup(soname)) out.push_back(p->wheel);
    return out;
  };
  EXPECT_EQ(wheels("libcudart.so.11.0"), std::vector<std::string>{"nvidia-cuda-runtime-cu11"});
  EXPECT_EQ(wheels("libcudart.so.12"), std::vector<std::string>{"nvidia-cuda-runtime-cu12"});
  EXPECT_EQ(wheels("libcudart.so.13"), std::vector<std::string>{"nvidia-cuda-runtime"});
  EXPECT_EQ(wheels("libcublasLt.so.11"), std::vector<std::string>{"nvidia-cublas-cu11"});
  EXPECT_EQ(wheels("libcutensor.so.1"), std::vector<std::string>{"cutensor-cu11"});
  EXPECT_EQ(wheels("libcutensor.so.2").size(), 3u);
  // cupy needs both; the multi-GPU one comes from the same cutensor wheels (not "system").
  EXPECT_EQ(wheels("libcutensorMg.so.2"), wheels("libcutensor.so.2"));
  EXPECT_EQ(wheels("libnvinfer.so.10").size(), 3u);
  // A version nobody lists yet is still a CUDA library, with no known provider.
  auto future = c.match("libcudart.so.14");
  ASSERT_TRUE(future);
  EXPECT_EQ(future->family->what, "CUDA runtime");
  EXPECT_EQ(future->major, "14");
  EXPECT_TRUE(future->providers.empty());
  EXPECT_FALSE(c.match("libcudart_static.a"));
  EXPECT_FALSE(c.match("libcudartfoo.so.1"));
  EXPECT_EQ(split_soname("libnvrtc-builtins.so.13.0"),
            (std::pair<std::string, std::string>("libnvrtc-builtins.so", "13.0")));
  EXPECT_FALSE(split_soname("libfoo.so.1a"));
  EXPECT_FALSE(split_soname("libfoo.sox"));

  LibraryReport r;
  r.path = "ext/_C.so";
  r.machine = "x86_64";
  r.needed = {"libcudart.so.11.0", "libcublas.so.11", "libcublasLt.so.11", "libcutensor.so.1",
              "libcutensor.so.2",  "libnvinfer.so.8", "libnvinfer.so.10",  "libcudart.so.12",
              "libcudart.so.14",   "libc10.so",       "libtorch_cuda.so",  "libtorch_python.so"};
  auto lib = classify_library(r, std::set<std::string>{});
  for (size_t i = 0; i < 9; ++i)
    EXPECT_EQ(lib.needed_libraries[i].kind, NeededKind::cuda_runtime) << r.needed[i];
  EXPECT_EQ(lib.needed_libraries[0].wheels, std::vector<std::string>{"nvidia-cuda-runtime-cu11"});
  EXPECT_EQ(lib.needed_libraries[0].systems, std::vector<std::string>{"cuda-cudart-11-*"});
  EXPECT_EQ(lib.needed_libraries[3].what, "cuTENSOR");
  EXPECT_TRUE(lib.needed_libraries[5].wheels.empty());  // TensorRT 8: apt only
  EXPECT_EQ(lib.needed_libraries[5].systems, std::vector<std::string>{"libnvinfer8"});
  for (size_t i = 9; i < 12; ++i)
    EXPECT_EQ(lib.needed_libraries[i].kind, NeededKind::torch) << r.needed[i];
  EXPECT_EQ(needed_kind_key(NeededKind::torch), "torch");
  // Neither CUDA nor torch libraries lower the wheel's tag: they come with their wheels.
  EXPECT_EQ(fit_of_set({lib}).policy.rfind("manylinux", 0), 0u);
  auto text = render_text(InspectReport{{lib}, {}});
  EXPECT_NE(text.find("libc10.so (provided by torch)"), std::string::npos) << text;
  EXPECT_NE(text.find("libcudart.so.11.0 (CUDA runtime: wheel nvidia-cuda-runtime-cu11 or package "
                      "cuda-cudart-11-*)"),
            std::string::npos)
      << text;
}

// The torch list holds every library of the installed torch's lib folder, when there is one.
TEST(TorchLibraries, MatchTheInstalledTorch) {
  // find_spec locates torch without importing it (an import takes many seconds).
  auto r =
      run_command({"python3", "-c",
                   "import importlib.util as u, os; s = u.find_spec('torch'); "
                   "print('\\n'.join(os.listdir(os.path.join(os.path.dirname(s.origin), 'lib'))))"},
                  std::chrono::seconds(60));
  if (!r.ok()) GTEST_SKIP() << "no installed torch: " << r.err.substr(0, 200);
  const auto& torch = TorchLibraries::get();
  size_t checked = 0;
  std::istringstream in(r.out);
  for (std::string name; std::getline(in, name);) {
    if (name.size() < 4 || name.substr(name.size() - 3) != ".so")
      continue;  // libgomp.so.1 is the system's kind
    EXPECT_TRUE(torch.contains(name))
        << name << " is in torch/lib but not in data/manylinux/torch_libraries.toml";
    ++checked;
  }
  EXPECT_GT(checked, 5u);
}

// ${ORIGIN} is $ORIGIN; $PLATFORM is the loading system's and is reported, not guessed.
TEST(LibraryResolver, BracedOriginResolvesAndPlatformIsReported) {
  auto elf = make_hostile_elf("braced_origin.so", 1, 1, "${ORIGIN}/../lib:$PLATFORM/x");
  auto w =
      one_wheel({{"pkg/bin/h.so", elf}, {"pkg/lib/libneed0.so", "text:any file of that name"}});
  const auto& lib = library(w, "pkg/bin/h.so");
  const auto& n = need(lib, "libneed0.so");
  EXPECT_EQ(n.kind, NeededKind::bundled);
  EXPECT_EQ(n.via, "RUNPATH ${ORIGIN}/../lib");
  EXPECT_EQ(lib.loader_warnings,
            std::vector<std::string>{"RUNPATH entry '$PLATFORM/x' uses $PLATFORM, which the "
                                     "loading system decides: not searched"});
}
