// `inspect --html`: the page is made from the same result as --json, and every name from
// the input is text, never markup.
#include <gtest/gtest.h>

#include "inspect/render.h"
#include "inspect/verdicts.h"
#include "target_codes.h"

using namespace tailor::inspect;

namespace {

size_t occurrences_in_html(const std::string& s, std::string_view needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

InspectedLibrary html_library(std::string path, std::vector<TargetStats> targets) {
  InspectedLibrary l;
  l.path = std::move(path);
  l.machine = "x86_64";
  l.file_size = 1 << 20;
  l.has_device_code = !targets.empty();
  for (const auto& t : targets) l.device_code_bytes += t.stored_bytes;
  l.targets = with_codes(std::move(targets));
  l.manylinux.tag = "manylinux_2_28_x86_64";
  return l;
}

InspectReport html_sample() {
  InspectReport r;
  r.libraries.push_back(html_library(
      "pkg/<script>alert(1)</script>.so",
      {{"sm_80", 10, 300000, 300000, {"none"}}, {"compute_80", 1, 20000, 90000, {"zstd"}}}));
  r.libraries.push_back(html_library("pkg/_small.so", {{"sm_90", 4, 50000, 50000, {"none"}}}));
  r.libraries.push_back(html_library("pkg/\"quoted\" & 'plain'.so", {}));
  return r;
}

}  // namespace

TEST(InspectHtml, NamesFromTheInputAreEscaped) {
  std::string page = render_html(html_sample(), nullptr, {"dir/<b>in</b>"});
  EXPECT_EQ(page.find("<script"), std::string::npos) << "no script element anywhere";
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<b>in</b>"), std::string::npos);
  EXPECT_NE(page.find("&lt;b&gt;in&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(page.find("&quot;quoted&quot; &amp; &#39;plain&#39;.so"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos)
      << "and scripts are forbidden anyway";
}

TEST(InspectHtml, BarsPerTargetAndPerLibraryWithTotals) {
  std::string page = render_html(html_sample(), nullptr, {"dir"});
  // Totals: SASS 350000 B, PTX 20000 B.
  EXPECT_NE(page.find("341.8 KiB"), std::string::npos) << "SASS total";
  EXPECT_NE(page.find("19.5 KiB"), std::string::npos) << "PTX total";
  EXPECT_NE(page.find("3</div><div class=\"k\">ELF libraries"), std::string::npos);
  EXPECT_NE(page.find("2</div><div class=\"k\">with CUDA device code"), std::string::npos);
  // One bar row per target in the totals chart and one per library with code.
  EXPECT_EQ(occurrences_in_html(page, "<svg class=\"bars\""), 2u);
  // The largest library is drawn first.
  auto per_lib = page.substr(page.find("Device code per library"));
  EXPECT_LT(per_lib.find("alert(1)"), per_lib.find("_small.so"));
  // Compression: PTX stored at 22.2% of its size, zstd.
  EXPECT_NE(page.find("22.2%"), std::string::npos);
  EXPECT_NE(page.find("zstd"), std::string::npos);
  EXPECT_NE(page.find("1 library without device code"), std::string::npos);
  EXPECT_NE(page.find("No verdicts asked for"), std::string::npos);
}

TEST(InspectHtml, GpuVerdictsAsAGrid) {
  InspectReport r = html_sample();
  VerdictSpecs specs;
  specs.gpu = {"8.0,9.0,7.5"};
  specs.require = {"sm_80"};
  auto v = evaluate(r, specs);
  ASSERT_TRUE(v) << v.error().message;
  std::string page = render_html(r, &*v, {"dir"});
  for (const char* header : {"<th>GPU 7.5</th>", "<th>GPU 8.0</th>", "<th>GPU 9.0</th>"})
    EXPECT_EQ(occurrences_in_html(page, header), 1u) << header;
  EXPECT_NE(page.find("runs · sm_80"), std::string::npos);
  EXPECT_NE(page.find("JIT-only · compute_80"), std::string::npos) << "9.0 runs the PTX of 8.0";
  EXPECT_NE(page.find("runs · sm_90"), std::string::npos);
  EXPECT_GE(occurrences_in_html(page, ">missing<"), 2u) << "7.5 runs neither; 8.0 cannot run sm_90";
  EXPECT_NE(page.find("lacks sm_80"), std::string::npos) << "the --require row of _small.so";
}

// Where the user typed a GPU name, the grid's column says it and its CC (issue 27).
TEST(InspectHtml, GridHeadersNameTheTypedGpu) {
  InspectReport r = html_sample();
  VerdictSpecs specs;
  specs.gpu = {"H100;8.0"};
  auto v = evaluate(r, specs);
  ASSERT_TRUE(v) << v.error().message;
  std::string page = render_html(r, &*v, {"dir"});
  EXPECT_EQ(occurrences_in_html(page, "<th>H100 (9.0)</th>"), 1u);
  EXPECT_EQ(occurrences_in_html(page, "<th>GPU 8.0</th>"), 1u);
  EXPECT_EQ(occurrences_in_html(page, "<th>GPU 9.0</th>"), 0u);
}
