// The Python programs under data/ (the ones tailor runs inside an interpreter) and the build
// driver under driver/ are plain Python: each is embedded whole and compiles as it is.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "data/data_files.h"
#include "data/driver_files.h"
#include "support/fixtures.h"
#include "util/process.h"

using namespace tailor;

TEST(EmbeddedPython, EveryProgramCompiles) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "no python3 on PATH";
  auto dir = test::scratch_dir("embedded_python");
  std::vector<std::string> argv = {
      "python3", "-c",
      "import sys\nfor p in sys.argv[1:]:\n    compile(open(p).read(), p, 'exec')\n"};
  auto add = [&](const std::filesystem::path& root, const data::DataFile& f) {
    if (!f.path.ends_with(".py")) return;
    auto path = root / std::string(f.path);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << f.text;
    argv.push_back(path.string());
  };
  for (const auto& f : data::all_files()) add(dir / "data", f);
  for (const auto& f : data::driver_files()) add(dir / "driver", f);
  // The stack's helpers, the probe's two, the builds' programs; the driver and its modules.
  ASSERT_GE(argv.size(), 3u + 9u + 10u);
  auto r = run_command(argv, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.out << r.err;
}

TEST(EmbeddedPython, TheProgramsTheBuildsRunAreEmbedded) {
  for (const char* p :
       {"probe/python_probe.py", "probe/python_stamp.py", "build/installed_versions.py",
        "build/torch_import_check.py", "build/torch_smoke_test.py", "build/target_site_paths.py",
        "build/venv_add_paths.py", "build/wheel_native_import.py"}) {
    auto text = data::file(p);
    ASSERT_TRUE(text) << p;
    EXPECT_NE(text->find("import "), std::string_view::npos) << p;
  }
}

TEST(EmbeddedPython, TheBuildDriverIsEmbeddedWhole) {
  // driver/: the program a build runs and every module of the package it imports.
  std::vector<std::string> paths;
  for (const auto& f : data::driver_files()) paths.emplace_back(f.path);
  for (const char* p :
       {"tailor-build-wheel.py", "tailor_driver/__init__.py", "tailor_driver/backend.py",
        "tailor_driver/choices.py", "tailor_driver/cmake.py", "tailor_driver/cross.py",
        "tailor_driver/downloads.py", "tailor_driver/jobs.py", "tailor_driver/modules_at_once.py",
        "tailor_driver/ninja_merge.py", "tailor_driver/ninja_syntax.py",
        "tailor_driver/package_ninja.py", "tailor_driver/say.py", "tailor_driver/schedule.py",
        "tailor_driver/stand_in.py", "tailor_driver/targets.py", "tailor_driver/tokens.py"})
    EXPECT_NE(std::find(paths.begin(), paths.end(), p), paths.end()) << p;
  EXPECT_EQ(paths.size(), 17u) << "a driver file that is not listed here";
  EXPECT_FALSE(data::file("build/build_wheel.py")) << "the driver left data/";
}

TEST(EmbeddedPython, AModuleOfADistributionNamedOtherwiseIsDeclared) {
  // SoftRas declares scikit-image and imports skimage: not a missing declaration.
  if (find_in_path("python3").empty()) GTEST_SKIP() << "no python3 on PATH";
  auto dir = test::scratch_dir("native_import_provides");
  auto script = data::file("build/wheel_native_import.py");
  ASSERT_TRUE(script);
  auto wheel = [&](const std::string& requires_dist) {
    auto path = (dir / (requires_dist + ".whl")).string();
    auto r = run_command(
        {"python3", "-c",
         "import sys, zipfile\n"
         "z = zipfile.ZipFile(sys.argv[1], 'w')\n"
         "z.writestr('demo-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: demo\\n"
         "Version: 1.0\\nRequires-Dist: ' + sys.argv[2] + ' >=0.16\\n')\n"
         "z.writestr('demo/__init__.py', 'import skimage\\n')\n",
         path, requires_dist},
        std::chrono::seconds(30));
    EXPECT_TRUE(r.ok()) << r.err;
    return path;
  };
  auto declared =
      run_command({"python3", "-c", std::string(*script), wheel("scikit-image"), "skimage"},
                  std::chrono::seconds(60));
  EXPECT_NE(declared.exit_code, 4) << declared.out << declared.err;
  EXPECT_EQ(declared.out.find("not a declared dependency"), std::string::npos) << declared.out;
  auto undeclared = run_command({"python3", "-c", std::string(*script), wheel("numpy"), "skimage"},
                                std::chrono::seconds(60));
  EXPECT_EQ(undeclared.exit_code, 4) << undeclared.out << undeclared.err;
  EXPECT_NE(undeclared.out.find("skimage is not a declared dependency"), std::string::npos);
}
