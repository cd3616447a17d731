// What the import check imports: names read from the built wheel (top_level.txt, else its
// top-level packages and modules), never guessed from the distribution's name.
#include "outputs/wheel_modules.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "formats/zip_writer.h"

using namespace tailor;
using namespace tailor::outputs;
namespace fs = std::filesystem;

namespace {

fs::path wheel_of(const std::string& name,
                  const std::vector<std::pair<std::string, std::string>>& members) {
  fs::path dir = fs::temp_directory_path() / ("tailor-wheel-modules-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::vector<formats::ZipWriteEntry> entries;
  for (const auto& [n, text] : members) entries.push_back({n, text});
  auto written = formats::write_zip(p.string(), entries);
  EXPECT_TRUE(written) << (written ? "" : written.error().message);
  return p;
}

}  // namespace

TEST(WheelModules, TopLevelTxtWins) {
  auto p = wheel_of("a-1.0-py3-none-any.whl",
                    {{"OwnChoices/__init__.py", ""},
                     {"OwnChoices/_kernels.cpython-311-x86_64-linux-gnu.so", "x"},
                     {"helper/__init__.py", ""},
                     {"own_choices-1.0.dist-info/top_level.txt", "OwnChoices\n"},
                     {"own_choices-1.0.dist-info/RECORD", ""}});
  auto names = wheel_top_level_names(p.string());
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"OwnChoices"}));
}

TEST(WheelModules, PackagesAndExtensionModulesWithoutTopLevelTxt) {
  auto p = wheel_of("b-1.0-py3-none-any.whl", {{"FooBar/__init__.py", ""},
                                               {"FooBar/sub/x.py", ""},
                                               {"_foo_cuda.cpython-311-x86_64-linux-gnu.so", "x"},
                                               {"tests/__init__.py", ""},
                                               {"nsonly/deeper/mod.py", ""},
                                               {"foobar-1.0.data/scripts/run", ""},
                                               {"foobar-1.0.dist-info/RECORD", ""}});
  auto names = wheel_top_level_names(p.string());
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"FooBar", "_foo_cuda", "tests"}));
  // The distribution's own name, compared without case or separators.
  EXPECT_EQ(import_names_to_check(*names, "foobar"), (std::vector<std::string>{"FooBar"}));
  EXPECT_EQ(import_names_to_check(*names, "Foo-Bar"), (std::vector<std::string>{"FooBar"}));
  // Another name: every public package but tests.
  EXPECT_EQ(import_names_to_check(*names, "torch-foo"), (std::vector<std::string>{"FooBar"}));
  // Only private modules: those.
  EXPECT_EQ(import_names_to_check({"_C", "tests"}, "x"), (std::vector<std::string>{"_C"}));
}

TEST(WheelModules, NamespacePackageWhenNothingElse) {
  auto p = wheel_of("c-1.0-py3-none-any.whl",
                    {{"nvx/kernels/mod.py", ""}, {"c-1.0.dist-info/RECORD", ""}});
  auto names = wheel_top_level_names(p.string());
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"nvx"}));
}

TEST(WheelModules, HostileNamesNeverReachTheCheck) {
  // Names are written into the check's Python code: only identifiers pass.
  auto p = wheel_of("d-1.0-py3-none-any.whl",
                    {{"d-1.0.dist-info/top_level.txt", "os; import evil\nok_name\n9lives\n"},
                     {"bad name/__init__.py", ""},
                     {"d-1.0.dist-info/RECORD", ""}});
  auto names = wheel_top_level_names(p.string());
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"ok_name"}));
  EXPECT_FALSE(is_python_identifier("a.b"));
  EXPECT_FALSE(is_python_identifier(""));
  EXPECT_TRUE(is_python_identifier("_kernels2"));
}

TEST(WheelModules, NotAWheelIsAnError) {
  fs::path p =
      fs::temp_directory_path() / ("tailor-not-a-wheel-" + std::to_string(getpid()) + ".whl");
  { std::ofstream(p) << "not a zip"; }
  EXPECT_FALSE(wheel_top_level_names(p.string()));
  fs::remove(p);
}
