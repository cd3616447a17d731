// Hostile inputs through inspect_paths and both renderers: shared-string amplification,
// names that are not UTF-8 or carry terminal escapes, FIFOs, unreadable files and empty
// folders. Files are made here (tests/formats/synthetic_elf.h), in a temporary folder.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../formats/synthetic_elf.h"
#include "inspect/inspect_report.h"
#include "inspect/library_report.h"
#include "inspect/render.h"

using namespace tailor;
using namespace tailor::inspect;
namespace te = tailor::testing_elf;
namespace fs = std::filesystem;

namespace {

class InspectHostile : public testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("tailor_inspect_hostile_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    for (auto& p : fs::recursive_directory_iterator(m_dir, ec))
      fs::permissions(p.path(), fs::perms::owner_all, ec);
    fs::remove_all(m_dir, ec);
  }
  std::string write(const std::string& name, const std::vector<std::byte>& bytes) {
    fs::path p = m_dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return p.string();
  }
  fs::path m_dir;
};

}  // namespace

TEST_F(InspectHostile, OverlappingDeviceSectionsAreRefused) {
  // One 64 KiB container listed as 5000 .nv_fatbin sections would be walked 5000 times.
  auto lib = te::with_fatbin(te::fatbin_container(1000, 0), 5000);
  auto r = analyze_library(lib, "x.so");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("device code sections overlap"), std::string::npos)
      << r.error().message;
  auto once = analyze_library(te::with_fatbin(te::fatbin_container(1000, 0), 1), "x.so");
  ASSERT_TRUE(once) << once.error().message;
  EXPECT_EQ(once->target_names(), std::vector<std::string>{"sm_80"});
}

TEST_F(InspectHostile, ThousandsOfDistinctTargetsAreRefused) {
  std::vector<std::byte> section;
  for (uint32_t arch = 0; arch < 2000; ++arch) {
    auto c = te::fatbin_container(1, 0, arch);
    section.insert(section.end(), c.begin(), c.end());
  }
  auto r = analyze_library(te::with_fatbin(section), "x.so");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than 1024 distinct targets"), std::string::npos)
      << r.error().message;
}

TEST_F(InspectHostile, NamesThatAreNotUtf8AreEscapedInJson) {
  std::string p = write("bad.so", te::with_needed({"lib\xff\xfe.so", "libok.so"}, 2));
  auto report = inspect_paths({p});
  ASSERT_TRUE(report) << report.error().message;
  std::string json = to_json(*report).dump(2);  // threw type_error 316 before escaping
  EXPECT_NE(json.find(R"("lib\\xff\\xfe.so")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("libok.so")"), std::string::npos);
}

TEST_F(InspectHostile, TerminalEscapesInNamesAreNeutralised) {
  std::string p =
      write("esc.so", te::with_needed({"lib\x1b]0;owned\x07.so", "lib\x1b[2J\n.so"}, 2));
  auto report = inspect_paths({p});
  ASSERT_TRUE(report) << report.error().message;
  std::string text = render_text(*report);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_NE(text.find("lib\\x1b]0;owned\\x07.so"), std::string::npos) << text;
  EXPECT_NE(text.find("lib\\x1b[2J\\x0a.so"), std::string::npos) << text;
}

TEST_F(InspectHostile, LongNeededListIsCutInText) {
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("libn" + std::to_string(i) + ".so");
  std::string p = write("many.so", te::with_needed(names, names.size()));
  auto report = inspect_paths({p});
  ASSERT_TRUE(report) << report.error().message;
  std::string text = render_text(*report);
  EXPECT_NE(text.find("(36 more needed libraries)"), std::string::npos) << text;
  EXPECT_EQ(to_json(*report)["libraries"][0]["needed"].size(), 100u);
}

TEST_F(InspectHostile, FifoIsRefusedWithoutBlocking) {
  for (std::string name : {"x.so", "x-1.0-py3-none-any.whl"}) {
    std::string fifo = (m_dir / name).string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto r = inspect_paths({fifo});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, fifo + ": not a regular file (a FIFO)");
  }
}

TEST_F(InspectHostile, EmptyFolderIsAnError) {
  fs::create_directories(m_dir / "empty");
  std::ofstream(m_dir / "empty" / "notes.txt") << "not a library\n";
  auto r = inspect_paths({(m_dir / "empty").string()});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no ELF libraries under this folder"), std::string::npos)
      << r.error().message;
}

TEST_F(InspectHostile, UnreadableFilesAreNamed) {
  std::string p = write("dir/locked.so", te::with_needed({"libc.so.6"}, 1));
  fs::permissions(p, fs::perms::none);
  if (::geteuid() == 0)
    GTEST_SKIP() << "running as root: mode 000 files are readable, nothing to check";
  auto single = inspect_paths({p});
  ASSERT_FALSE(single);
  EXPECT_EQ(single.error().message, p + ": permission denied");
  auto only = inspect_paths({(m_dir / "dir").string()});
  ASSERT_FALSE(only);
  EXPECT_NE(only.error().message.find("no ELF library could be read; 1 skipped, the first: " + p +
                                      ": permission denied"),
            std::string::npos)
      << only.error().message;
  write("dir/ok.so", te::with_needed({"libc.so.6"}, 1));
  auto some = inspect_paths({(m_dir / "dir").string()});
  ASSERT_TRUE(some) << some.error().message;
  EXPECT_EQ(some->libraries.size(), 1u);
  EXPECT_EQ(some->skipped, std::vector<std::string>{p + ": permission denied"});
  EXPECT_NE(render_text(*some).find("skipped: " + p + ": permission denied"), std::string::npos);
}
