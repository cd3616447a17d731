// The data:: TOML reader: every embedded file parses, and every failure names the file
// and the key.
#include "data/toml_document.h"

#include <gtest/gtest.h>

#include <functional>

#include "data/data_files.h"

using namespace tailor;
using namespace tailor::data;

namespace {

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* k_gpus = R"(
[[gpus]]
name = "A"
cc = "8.0"
[[gpus]]
name = "B"
cc = 90
extra = { x = "1", y = 2 }
)";

}  // namespace

TEST(TomlDocument, EveryEmbeddedTomlFileParses) {
  size_t n = 0;
  for (const auto& f : all_files()) {
    if (!f.path.ends_with(".toml")) continue;
    ++n;
    EXPECT_NO_THROW(toml_document(f.path)) << f.path;
  }
  EXPECT_GT(n, 10u);
}

TEST(TomlDocument, TypedGettersNameFileAndKey) {
  auto doc = parse_toml(k_gpus, "data/cuda/gpus.toml");
  auto gpus = doc["gpus"].array();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0]["cc"].string(), "8.0");
  EXPECT_EQ(gpus[1]["cc"].integer(), 90);
  EXPECT_EQ(gpus[1]["cc"].number(), 90.0);
  EXPECT_EQ(error_of([&] { (void)gpus[1]["cc"].string(); }),
            "data/cuda/gpus.toml: gpus[1].cc: expected a string, found an integer");
  EXPECT_EQ(error_of([&] { (void)doc["gpus"][1]["cc"].string(); }),
            "data/cuda/gpus.toml: gpus[1].cc: expected a string, found an integer");
  EXPECT_EQ(error_of([&] { (void)gpus[0]["family"].string(); }),
            "data/cuda/gpus.toml: gpus[0].family: missing (expected a string)");
  EXPECT_EQ(error_of([&] { (void)doc["nothing"].array(); }),
            "data/cuda/gpus.toml: nothing: missing (expected an array)");
  EXPECT_EQ(error_of([&] { (void)gpus[1]["extra"].string_table(); }),
            "data/cuda/gpus.toml: gpus[1].extra.y: expected a string, found an integer");
  EXPECT_EQ(error_of([&] { (void)gpus[0]["name"]["x"]; }),
            "data/cuda/gpus.toml: gpus[0].name: expected a table, found a string");
  EXPECT_EQ(error_of([&] { gpus[0].fail("cc 8.0 has no capability entry"); }),
            "data/cuda/gpus.toml: gpus[0]: cc 8.0 has no capability entry");
}

TEST(TomlDocument, ValuesOutliveTheDocumentTheyCameFrom) {
  // The loaders' idiom: the document is a temporary of the range expression.
  std::vector<std::string> names;
  for (const auto& g : parse_toml(k_gpus, "data/cuda/gpus.toml")["gpus"].array())
    names.push_back(g["name"].string());
  EXPECT_EQ(names, (std::vector<std::string>{"A", "B"}));
  auto extra = parse_toml(k_gpus, "x.toml")["gpus"][1]["extra"];
  EXPECT_EQ(extra["x"].string(), "1");
  EXPECT_EQ(error_of([&] { (void)extra["y"].string(); }),
            "x.toml: gpus[1].extra.y: expected a string, found an integer");
}

TEST(TomlDocument, OptionalGettersTakeAbsenceButNotAWrongType) {
  auto doc = parse_toml(k_gpus, "x.toml");
  auto g = doc["gpus"][0];
  EXPECT_EQ(g["family"].string_or("none"), "none");
  EXPECT_EQ(g["n"].integer_or(7), 7);
  EXPECT_TRUE(g["flag"].boolean_or(true));
  EXPECT_TRUE(g["list"].strings_or_empty().empty());
  EXPECT_TRUE(doc["absent"].array_or_empty().empty());
  EXPECT_FALSE(doc["absent"][3].present());
  EXPECT_EQ(error_of([&] { (void)g["name"].integer_or(1); }),
            "x.toml: gpus[0].name: expected an integer, found a string");
  EXPECT_EQ(error_of([&] { (void)g["cc"].strings_or_empty(); }),
            "x.toml: gpus[0].cc: expected an array, found a string");
}

TEST(TomlDocument, SyntaxErrorsAndMissingFilesAreDataErrors) {
  std::string e = error_of([] { (void)parse_toml("a = 1\nb = [\n", "data/x.toml"); });
  EXPECT_EQ(e.rfind("data/x.toml:", 0), 0u) << e;
  e = error_of([] { (void)toml_document("no/such.toml"); });
  EXPECT_NE(e.find("no/such.toml"), std::string::npos) << e;
}

TEST(TomlDocument, ExpectedFromTurnsDataErrorsIntoErrors) {
  auto bad = expected_from([] { return parse_toml("k = 1", "user.toml")["k"].string(); });
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "user.toml: k: expected a string, found an integer");
  auto good = expected_from([] { return parse_toml("k = 'v'", "user.toml")["k"].string(); });
  ASSERT_TRUE(good);
  EXPECT_EQ(*good, "v");
  auto none = expected_from([] { (void)parse_toml("k = 'v'", "user.toml")["k"].integer(); });
  EXPECT_FALSE(none);
}
