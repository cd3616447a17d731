#include "util/text_escape.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tailor {
namespace {

TEST(TextEscape, ValidUtf8PassesUnchanged) {
  const std::string s = "libc.so.6 \u00e9\u4e2d\U0001F600";
  EXPECT_TRUE(is_valid_utf8(s));
  EXPECT_EQ(escape_invalid_utf8(s), s);
  EXPECT_EQ(terminal_safe(s), s);
}

TEST(TextEscape, InvalidBytesBecomeHexText) {
  EXPECT_EQ(escape_invalid_utf8("lib\xff\xfe.so"), "lib\\xff\\xfe.so");
  EXPECT_EQ(escape_invalid_utf8("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(escape_invalid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
  EXPECT_EQ(escape_invalid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(escape_invalid_utf8("a\xe4\xb8"), "a\\xe4\\xb8");                  // truncated sequence
  EXPECT_FALSE(is_valid_utf8("lib\xff.so"));
  // Controls are valid UTF-8: JSON escapes them itself.
  EXPECT_EQ(escape_invalid_utf8("a\x1b[31m"), "a\x1b[31m");
}

TEST(TextEscape, TerminalControlsAreEscaped) {
  EXPECT_EQ(terminal_safe("x\x1b]0;title\x07y"), "x\\x1b]0;title\\x07y");  // OSC + BEL
  EXPECT_EQ(terminal_safe("a\nb\rc\td\x7f"), "a\\x0ab\\x0dc\td\\x7f");     // TAB stays
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m"),
            "\\xc2\\x9b31m");                        // C1 CSI
  EXPECT_EQ(terminal_safe("\xc2\xa0"), "\xc2\xa0");  // NBSP is not C1
  EXPECT_EQ(terminal_safe(std::string("a\0b", 3)), "a\\x00b");
}

TEST(TextEscape, JsonDocumentsDumpAfterEscaping) {
  nlohmann::json j;
  j["needed"] = {"libok.so", "lib\xff.so"};
  j["nested"] = {{"name", "m\xfe"}};
  j["bad\xff key"] = 1;
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);
  escape_json_strings(j);
  std::string out = j.dump();
  EXPECT_NE(out.find(R"("lib\\xff.so")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("m\\xfe")"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("bad\\xff key")"), std::string::npos) << out;
  EXPECT_NE(out.find("libok.so"), std::string::npos);
}

}  // namespace
}  // namespace tailor
