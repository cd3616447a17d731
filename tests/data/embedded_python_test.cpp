// The Python programs under data/ (the ones tailor runs inside an interpreter) are plain
// Python: each is embedded whole and compiles as it is.
#include <gtest/gtest.h>

#include <fstream>

#include "data/data_files.h"
#include "support/fixtures.h"
#include "util/process.h"

using namespace tailor;

TEST(EmbeddedPython, EveryProgramCompiles) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "no python3 on PATH";
  auto dir = test::scratch_dir("embedded_python");
  std::vector<std::string> argv = {"python3", "-c",
                                   "import sys\nfor p in sys.argv[1:]:\n    compile(open(p).read(), p, 'exec')\n"};
  for (const auto& f : data::all_files()) {
    if (!f.path.ends_with(".py")) continue;
    auto path = dir / std::string(f.path);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << f.text;
    argv.push_back(path.string());
  }
  // build_wheel.py, the stack's helpers, the probe's two, the builds' programs.
  ASSERT_GE(argv.size(), 3u + 10u);
  auto r = run_command(argv, std::chrono::seconds(60));
  EXPECT_TRUE(r.ok()) << r.out << r.err;
}

TEST(EmbeddedPython, TheProgramsTheBuildsRunAreEmbedded) {
  for (const char* p : {"probe/python_probe.py", "probe/python_stamp.py", "build/installed_versions.py",
                        "build/torch_import_check.py", "build/torch_smoke_test.py", "build/target_site_paths.py",
                        "build/venv_add_paths.py", "build/wheel_native_import.py", "build/build_wheel.py"}) {
    auto text = data::file(p);
    ASSERT_TRUE(text) << p;
    EXPECT_NE(text->find("import "), std::string_view::npos) << p;
  }
}
