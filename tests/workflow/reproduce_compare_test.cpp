// --verify-reproducible's comparison names why each member differs: only its zip time fields
// (the same bytes: a checkout's time taken for SOURCE_DATE_EPOCH), the provenance's keys, or
// its content.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "formats/zip_writer.h"
#include "workflow/reproduce.h"

namespace tailor::workflow {
namespace {

namespace fs = std::filesystem;

std::string wheel_with(const fs::path& path, int64_t mtime, const std::string& provenance,
                       const std::string& library) {
  formats::ZipWriteOptions o;
  o.mtime = mtime;
  auto w = formats::ZipWriter::create(path.string(), o);
  EXPECT_TRUE(w);
  for (auto [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"demo/__init__.py", "x = 1\n"},
           {"demo/_C.so", library},
           {"demo-1.0.dist-info/tailor-provenance.json", provenance}}) {
    formats::ZipWriteEntry e;
    e.name = name;
    e.source = text;
    EXPECT_TRUE(w->add(e));
  }
  EXPECT_TRUE(w->commit());
  return path.string();
}

TEST(ReproduceCompare, NamesTimeFieldsProvenanceKeysAndContent) {
  fs::path dir = fs::temp_directory_path() / ("tailor-reproduce-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto a = wheel_with(dir / "a.whl", 315532800,
                      "{\"package\": \"demo\", \"source_date_epoch\": 315532800, \"toolchain\": "
                      "{\"nvcc\": \"13.0\", \"python\": \"3.11\"}}",
                      "same library");
  auto b = wheel_with(dir / "b.whl", 1764399000,
                      "{\"package\": \"demo\", \"source_date_epoch\": 1764399000, \"toolchain\": "
                      "{\"nvcc\": \"13.1\", \"python\": \"3.11\"}}",
                      "same library");
  size_t total = 0;
  auto d = compare_wheel_members(a, b, 10, total);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(total, 3u);
  EXPECT_EQ((*d)[0].name, "demo/__init__.py");
  EXPECT_EQ((*d)[0].cause, DifferenceCause::time_fields);
  EXPECT_EQ((*d)[0].what,
            "time fields: 1980-01-01 00:00:00 vs 2025-11-29 06:50:00 (the same bytes)");
  EXPECT_EQ((*d)[2].cause, DifferenceCause::provenance_keys);
  EXPECT_EQ((*d)[2].what,
            "provenance keys: source_date_epoch (315532800 vs 1764399000), toolchain.nvcc "
            "(\"13.0\" vs \"13.1\")");
  auto c = wheel_with(dir / "c.whl", 315532800,
                      "{\"package\": \"demo\", \"source_date_epoch\": 315532800, \"toolchain\": "
                      "{\"nvcc\": \"13.0\", \"python\": \"3.11\"}}",
                      "other library");
  auto e = compare_wheel_members(a, c, 10, total);
  ASSERT_TRUE(e);
  ASSERT_EQ(total, 1u);
  EXPECT_EQ((*e)[0].name, "demo/_C.so");
  EXPECT_EQ((*e)[0].cause, DifferenceCause::content);
  EXPECT_EQ((*e)[0].what, "content: 12 vs 13 bytes");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tailor::workflow
