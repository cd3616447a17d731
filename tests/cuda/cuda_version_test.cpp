#include "cuda/cuda_version.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cuda/nvcc_capabilities.h"

using namespace tailor::cuda;

namespace {
CudaVersion parsed(const char* text) {
  auto v = parse_cuda_version(text);
  EXPECT_TRUE(v) << text << ": " << v.error().message;
  return v ? *v : CudaVersion{};
}
}  // namespace

TEST(CudaVersion, EverySpelling) {
  EXPECT_EQ(parsed("13.0"), (CudaVersion{13, 0}));
  EXPECT_EQ(parsed("12.8"), (CudaVersion{12, 8}));
  EXPECT_EQ(parsed("11.8"), (CudaVersion{11, 8}));
  EXPECT_EQ(parsed("13.0.88"), (CudaVersion{13, 0}));  // nvcc's V13.0.88
  EXPECT_EQ(parsed("12.4.1"), (CudaVersion{12, 4}));
  EXPECT_EQ(parsed("cu130"), (CudaVersion{13, 0}));  // torch's labels
  EXPECT_EQ(parsed("cu128"), (CudaVersion{12, 8}));
  EXPECT_EQ(parsed("cu118"), (CudaVersion{11, 8}));
  EXPECT_EQ(parsed("CU126"), (CudaVersion{12, 6}));
  EXPECT_EQ(parsed(" 12.6\n"), (CudaVersion{12, 6}));
}

TEST(CudaVersion, FromTheDriversInteger) {
  EXPECT_EQ(*cuda_version_from_driver(13000), (CudaVersion{13, 0}));
  EXPECT_EQ(*cuda_version_from_driver(12080), (CudaVersion{12, 8}));
  EXPECT_EQ(*cuda_version_from_driver(11080), (CudaVersion{11, 8}));
  EXPECT_EQ(*cuda_version_from_driver(12020), (CudaVersion{12, 2}));
  EXPECT_FALSE(cuda_version_from_driver(0));
  EXPECT_FALSE(cuda_version_from_driver(-1));
}

TEST(CudaVersion, Renders) {
  EXPECT_EQ((CudaVersion{13, 0}).to_string(), "13.0");
  EXPECT_EQ((CudaVersion{12, 8}).to_string(), "12.8");
  EXPECT_EQ((CudaVersion{13, 0}).label(), "cu130");
  EXPECT_EQ((CudaVersion{12, 8}).label(), "cu128");
  EXPECT_EQ((CudaVersion{11, 8}).label(), "cu118");
  // Every spelling round-trips through both renderings.
  for (const auto& v : known_cuda_versions()) {
    EXPECT_EQ(parsed(v.to_string().c_str()), v);
    EXPECT_EQ(parsed(v.label().c_str()), v);
  }
  EXPECT_EQ(to_strings({{12, 6}, {13, 0}}), (std::vector<std::string>{"12.6", "13.0"}));
}

TEST(CudaVersion, BadInputIsOneClearLine) {
  for (const char* bad :
       {"",         "x",     "13",   "12.",   ".8",     "12.x",   "12.8.",   "12.8.x",
        "12.8.1.2", "v12.8", "12,8", "-12.8", "0.0",    "1234.0", "12.1234", "12.8+cu128",
        "cu",       "cu1",   "cu12", "cu92",  "cu1210", "cu12x",  "cu12.8",  "cuda12.8"}) {
    auto v = parse_cuda_version(bad);
    EXPECT_FALSE(v) << "'" << bad << "' parsed as " << (v ? v->to_string() : "");
  }
  auto v = parse_cuda_version("x");
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().message, "not a CUDA version: 'x' (expected e.g. 12.8 or cu128)");
  // Input reaches a terminal: control characters are escaped, the message stays one line.
  auto esc = parse_cuda_version("12\n\x1b[31m");
  ASSERT_FALSE(esc);
  EXPECT_EQ(esc.error().message.find('\n'), std::string::npos) << esc.error().message;
  EXPECT_EQ(esc.error().message.find('\x1b'), std::string::npos) << esc.error().message;
}

TEST(CudaVersion, OrdersAsNumbersNotText) {
  EXPECT_LT((CudaVersion{9, 2}), (CudaVersion{11, 8}));  // "9.2" > "11.8" as text
  EXPECT_LT((CudaVersion{12, 8}), (CudaVersion{12, 10}));
  EXPECT_LT((CudaVersion{12, 9}), (CudaVersion{13, 0}));
  EXPECT_GT(parsed("cu130"), parsed("12.9.1"));
  EXPECT_LT(parsed("9.2"), parsed("cu118"));
  EXPECT_EQ(parsed("cu130"), parsed("13.0.88"));
  std::vector<CudaVersion> vs = {{13, 0}, {11, 8}, {12, 10}, {12, 6}, {9, 2}};
  std::sort(vs.begin(), vs.end());
  EXPECT_EQ(to_strings(vs), (std::vector<std::string>{"9.2", "11.8", "12.6", "12.10", "13.0"}));
}
