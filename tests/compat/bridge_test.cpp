// The compatibility layer over files in memory, against the real table
// (data/compat/removals.toml): each rewrite where the source uses the removed API, none in
// comments, literals, members or a package that bridges the API itself, none before the
// release that removed it, and the package's line numbers kept.
#include "compat/bridge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "compat/removals.h"
#include "compat/source_tokens.h"

namespace tailor::compat {
namespace {

const StackVersions k_today{"2.11.0+cu130", "13.0"};

struct Run {
  std::vector<SourceFile> files;
  std::vector<SourceFile> added;
  Bridged result;
};

Run bridge(std::vector<SourceFile> files, const StackVersions& stack = k_today) {
  Run r{std::move(files), {}, {}};
  r.result = bridge_files(r.files, r.added, stack, removals());
  return r;
}

TEST(CompatRemovals, TheTableLoads) {
  const auto& t = removals();
  EXPECT_FALSE(t.dispatch_types.empty());
  EXPECT_GE(t.renames.size(), 4u);
  ASSERT_EQ(t.shims.size(), 2u);
  EXPECT_EQ(t.shims[0].header, "THC/THC.h");
  EXPECT_GE(t.std_headers.size(), 5u);
  for (const auto& r : t.renames) EXPECT_FALSE(r.info.removed_in.empty()) << r.info.id;
  auto bad = parse_removals("[[rename]]\nid = 'x'\nlibrary = 'gcc'\n", "t.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("library"), std::string::npos) << bad.error().message;
}

TEST(CompatTokens, CommentsAndLiteralsAreNotTokensToRewrite) {
  std::string text =
      "a /* AT_CHECK */ b // AT_CHECK\n\"AT_CHECK\" R\"x(AT_CHECK)x\" 'c' 1'000\n#include "
      "<THC/THC.h>\n";
  auto tokens = tokenize(text);
  std::vector<std::string> seen;
  for (const auto& t : tokens) seen.emplace_back(token_text(text, t));
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "\"AT_CHECK\"", "R\"x(AT_CHECK)x\"", "'c'",
                                            "1'000", "#", "include", "<THC/THC.h>"}));
  EXPECT_EQ(tokens.back().line, 3u);
  EXPECT_EQ(tokens.back().kind, TokenKind::header_name);
}

TEST(CompatBridge, DispatchTypeBecomesScalarType) {
  auto r = bridge(
      {{"k.cu",
        "void f(at::Tensor x) {\n"
        "  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.type(), \"f\", ([&] {\n"
        "    AT_DISPATCH_FLOATING_TYPES_AND(at::ScalarType::Half, ins[0]->type(), \"g\", [&] {});\n"
        "  }));\n"
        "  auto t = x.type();  // not a dispatch: left\n"
        "}\n"}});
  const std::string& out = r.files[0].text;
  EXPECT_NE(out.find("AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), \"f\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ins[0]->scalar_type(), \"g\""), std::string::npos) << out;
  EXPECT_NE(out.find("auto t = x.type();"), std::string::npos) << out;
  ASSERT_EQ(r.result.changes.size(), 2u);
  EXPECT_EQ(r.result.changes[0].text(),
            "k.cu:2: AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.type(), ...) -> x.scalar_type() "
            "(removed in torch 2.6)");
  EXPECT_EQ(r.result.changes[1].line, 3u);
}

TEST(CompatBridge, NothingBeforeTheReleaseThatRemovedIt) {
  auto r = bridge(
      {{"k.cpp",
        "void f() { AT_DISPATCH_ALL_TYPES(x.type(), \"f\", [&]{}); AT_CHECK(x, \"m\"); }\n"}},
      StackVersions{"2.5.1", "12.4"});
  EXPECT_EQ(r.result.changes.size(), 1u);  // AT_CHECK went in 1.5; .type() still worked in 2.5
  EXPECT_EQ(r.result.changes[0].removal, "torch-at-check");
  auto none = bridge({{"k.cpp", "void f() { AT_CHECK(x, \"m\"); }\n"}}, StackVersions{"", ""});
  EXPECT_TRUE(none.result.changes.empty());  // no torch known: nothing of torch's
}

TEST(CompatBridge, AtCheckRenamedOutsideCommentsStringsAndMembers) {
  auto r = bridge({{"a.cpp",
                    "// AT_CHECK in a comment\n"
                    "void f() { AT_CHECK(x > 0, \"AT_CHECK failed\"); s.AT_CHECK(); }\n"}});
  EXPECT_EQ(r.files[0].text,
            "// AT_CHECK in a comment\n"
            "void f() { TORCH_CHECK(x > 0, \"AT_CHECK failed\"); s.AT_CHECK(); }\n");
  ASSERT_EQ(r.result.changes.size(), 1u);
  EXPECT_EQ(r.result.changes[0].text(), "a.cpp:2: AT_CHECK -> TORCH_CHECK (removed in torch 1.5)");
}

TEST(CompatBridge, C10CheckOpsBecomeTheirTorchNames) {
  // PyTorchEMD's emd_kernel.cu: CHECK_EQ(xyz2.size(0), b); torch 1.13 renamed c10's CHECK_*.
  auto r =
      bridge({{"e.cu",
               "void f() {\n  CHECK_EQ(a.size(0), b);\n  CHECK_GT(n, 0); TORCH_CHECK_EQ(c, d);\n"
               "  log.CHECK_EQ(1); // CHECK_LT(x)\n}\n"}});
  EXPECT_EQ(r.files[0].text,
            "void f() {\n  TORCH_CHECK_EQ(a.size(0), b);\n  TORCH_CHECK_GT(n, 0); "
            "TORCH_CHECK_EQ(c, d);\n  log.CHECK_EQ(1); // CHECK_LT(x)\n}\n");
  ASSERT_EQ(r.result.changes.size(), 2u);
  EXPECT_EQ(r.result.changes[0].text(),
            "e.cu:2: CHECK_EQ -> TORCH_CHECK_EQ (removed in torch 1.13)");
  EXPECT_EQ(r.result.changes[1].removal, "torch-check-gt");
  auto old = bridge({{"e.cu", "void f() { CHECK_EQ(a, b); }\n"}}, StackVersions{"1.12.1", "11.6"});
  EXPECT_TRUE(old.result.changes.empty());  // torch 1.12 still had it
  auto own = bridge(
      {{"e.cu", "#define CHECK_EQ(a, b) assert((a) == (b))\nvoid f() { CHECK_EQ(a, b); }\n"}});
  EXPECT_TRUE(own.result.changes.empty());  // the package's own CHECK_EQ
}

TEST(CompatBridge, APackageThatDefinesTheNameItselfIsLeftAlone) {
  auto r = bridge({{"compat.h", "#ifndef AT_CHECK\n#define AT_CHECK TORCH_CHECK\n#endif\n"},
                   {"a.cpp", "#include \"compat.h\"\nvoid f() { AT_CHECK(x, \"m\"); }\n"}});
  EXPECT_TRUE(r.result.changes.empty());
  ASSERT_EQ(r.result.left_alone.size(), 1u);
  EXPECT_EQ(r.result.left_alone[0], "torch-at-check: the package defines AT_CHECK itself");
}

TEST(CompatBridge, CubOperatorsBecomeCcclsAndTheHeaderIsAddedKeepingLines) {
  auto r = bridge({{"r.cu",
                    "#include <cub/cub.cuh>\n"
                    "void f() { BlockReduce(t).Reduce(v, cub::Max()); x = ::cub::Sum()(a, b); }\n"
                    "int g() { return mine::cub::Min(); }\n"}});
  const std::string& out = r.files[0].text;
  EXPECT_EQ(out,
            "#include <cuda/std/functional>\n#include <cuda/functional>\n#line 1\n"
            "#include <cub/cub.cuh>\n"
            "void f() { BlockReduce(t).Reduce(v, ::cuda::maximum<>()); x = "
            "::cuda::std::plus<>()(a, b); }\n"
            "int g() { return mine::cub::Min(); }\n");
  ASSERT_EQ(r.result.changes.size(), 2u);
  EXPECT_EQ(r.result.changes[0].removed_in, "CUDA 13.0");
  // A package with its own CUB keeps its own operators.
  auto own = bridge({{"third_party/cub/thread/thread_operators.cuh", "struct Sum {};\n"},
                     {"r.cu", "void f() { Reduce(v, cub::Sum()); }\n"}});
  EXPECT_TRUE(own.result.changes.empty());
}

TEST(CompatBridge, LazyInitCudaAsAValueStillInitialises) {
  auto r = bridge({{"a.cu",
                    "THCState *state = at::globalContext().lazyInitCUDA();\n"
                    "void f() { at::globalContext().lazyInitCUDA(); }\n"}});
  EXPECT_EQ(r.files[0].text,
            "THCState *state = (at::globalContext().lazyInitCUDA(), "
            "static_cast<THCState*>(nullptr));\n"
            "void f() { at::globalContext().lazyInitCUDA(); }\n");
}

TEST(CompatBridge, ThcIncludePointsAtTheShim) {
  auto r = bridge({{"src/cuda/dcn.cu", "#include <THC/THC.h>\nextern THCState *state;\n"}});
  EXPECT_EQ(r.files[0].text,
            "#include \"../../tailor_compat/THC/THC.h\"\nextern THCState *state;\n");
  ASSERT_EQ(r.added.size(), 2u);  // THC's stand-in includes TH's, as THC included TH
  EXPECT_EQ(r.added[0].path, "tailor_compat/THC/THC.h");
  EXPECT_EQ(r.added[1].path, "tailor_compat/TH/TH.h");
  EXPECT_NE(r.added[0].text.find("#include \"../TH/TH.h\""), std::string::npos);
  EXPECT_NE(r.added[0].text.find("#define THCudaCheck(err) C10_CUDA_CHECK(err)"),
            std::string::npos);
  ASSERT_EQ(r.result.changes.size(), 1u);
  EXPECT_EQ(r.result.changes[0].removed_in, "torch 1.11");
  // Before torch 1.11 the header is torch's own.
  EXPECT_TRUE(bridge({{"a.cu", "#include <THC/THC.h>\n"}}, StackVersions{"1.10.2", "11.3"})
                  .result.changes.empty());
}

TEST(CompatBridge, MissingStandardHeadersAreAddedWhereNothingBringsThem) {
  auto r = bridge({{"csrc/util.h",
                    "#pragma once\n#include <vector>\n"
                    "struct S { std::unique_ptr<int> p; uint32_t n; };\n"
                    "inline void fail() { throw std::runtime_error(\"x\"); }\n"},
                   {"csrc/ext.cpp",  // torch's headers bring all of them
                    "#include <torch/extension.h>\nstd::unique_ptr<int> q; uint32_t m;\n"},
                   {"csrc/own.h", "#include <memory>\n#include <cstdint>\n"},
                   {"csrc/user.cpp",  // its own header brings them
                    "#include \"own.h\"\nstd::unique_ptr<int> q; std::uint32_t m;\n"},
                   {"csrc/c.c", "uint32_t n;\n"},
                   {"csrc/m.cpp", "void f(S* s, T t) { s->uint32_t = 1; t.uint32_t = 2; }\n"}});
  EXPECT_EQ(r.files[0].text,
            "#include <stdint.h>\n#include <memory>\n#include <stdexcept>\n#line 1\n"
            "#pragma once\n#include <vector>\n"
            "struct S { std::unique_ptr<int> p; uint32_t n; };\n"
            "inline void fail() { throw std::runtime_error(\"x\"); }\n");
  for (size_t f = 1; f < r.files.size(); ++f)
    EXPECT_EQ(r.files[f].text.find("#line"), std::string::npos) << r.files[f].path;
  ASSERT_EQ(r.result.changes.size(), 3u);
  EXPECT_EQ(r.result.changes[0].text(),
            "csrc/util.h:3: uint32_t without #include <stdint.h> -> #include added "
            "(GCC 13's libstdc++ no longer includes it from other headers)");
}

}  // namespace
}  // namespace tailor::compat

namespace tailor::compat {
namespace {

TEST(CompatBridge, CubsDebugSynchronousArgumentIsDroppedKeepingLines) {
  // megablocks 0.7.0's csrc/cumsum.h, in short: the flag on a line of its own.
  auto r =
      bridge({{"cumsum.h",
               "void run(cudaStream_t stream, bool debug_synchronous = false) {\n"
               "  cub::DeviceScan::ExclusiveSum(t, bytes, in, out, n,\n"
               "                                stream,\n"
               "                                debug_synchronous);\n"
               "  ::cub::DeviceRadixSort::SortPairs<K, V>(t, b, k, k2, v, v2, n, 0, 8, s, false);\n"
               "  cub::DeviceScan::InclusiveSum(t, bytes, in, out, n, stream);\n"
               "  cub::DeviceScan::InclusiveSum(t, bytes, in, out, n, stream, sync(x));\n"
               "  mine::cub::DeviceScan::ExclusiveSum(t, bytes, in, out, n, s, false);\n"
               "  cub::BlockScan<int, 128>(tmp).ExclusiveSum(a, b, false);\n"
               "}\n"}});
  const std::string& out = r.files[0].text;
  EXPECT_EQ(out,
            "void run(cudaStream_t stream, bool debug_synchronous = false) {\n"
            "  cub::DeviceScan::ExclusiveSum(t, bytes, in, out, n,\n"
            "                                stream\n"
            "                                );\n"
            "  ::cub::DeviceRadixSort::SortPairs<K, V>(t, b, k, k2, v, v2, n, 0, 8, s);\n"
            "  cub::DeviceScan::InclusiveSum(t, bytes, in, out, n, stream);\n"
            "  cub::DeviceScan::InclusiveSum(t, bytes, in, out, n, stream, sync(x));\n"
            "  mine::cub::DeviceScan::ExclusiveSum(t, bytes, in, out, n, s, false);\n"
            "  cub::BlockScan<int, 128>(tmp).ExclusiveSum(a, b, false);\n"
            "}\n");
  ASSERT_EQ(r.result.changes.size(), 2u);
  EXPECT_EQ(r.result.changes[0].removal, "cccl-cub-debug-synchronous");
  EXPECT_EQ(r.result.changes[0].line, 4u);
  EXPECT_EQ(r.result.changes[1].line, 5u);
  EXPECT_EQ(r.result.changes[0].removed_in, "CUDA 13.0");
  // Before CUDA 13 the overload is there: nothing changes.
  auto old =
      bridge({{"c.cu", "void f() { cub::DeviceScan::ExclusiveSum(t, b, i, o, n, s, false); }\n"}},
             {"2.11.0+cu126", "12.6"});
  EXPECT_TRUE(old.result.changes.empty());
}

TEST(CompatCxxStandard, TorchTwoRaisesThePackagesOlderStandards) {
  auto r = bridge({{"a.cu", "int f() { return 1000; }\n"}});
  ASSERT_TRUE(r.result.cxx_raise);
  EXPECT_EQ(r.result.cxx_raise->id, "torch-cxx17");
  EXPECT_EQ(r.result.cxx_raise->standard, "17");
  EXPECT_EQ(r.result.cxx_raise->removed_in, "torch 2.1");
  EXPECT_EQ(r.result.cxx_raise->from,
            (std::vector<std::string>{"c++11", "c++0x", "c++14", "c++1y", "gnu++11", "gnu++0x",
                                      "gnu++14", "gnu++1y"}));
  EXPECT_TRUE(r.result.left_alone.empty());
  // torch 2.0 still took C++14: nothing to raise.
  EXPECT_FALSE(bridge({{"a.cu", "int f();\n"}}, {"2.0.1", "11.8"}).result.cxx_raise);
}

TEST(CompatCxxStandard, NotWhereAFileWouldReadOtherwise) {
  // A trigraph (here in a comment, where `??/` continues the line under a strict C++14):
  // the strict standards stay, the GNU ones (which never convert them) are raised.
  auto tri = bridge({{"a.h", "int a;\n"}, {"k/b.cu", "int x;\n// end ?\?/\nint y;\n"}});
  ASSERT_TRUE(tri.result.cxx_raise);
  EXPECT_EQ(tri.result.cxx_raise->from,
            (std::vector<std::string>{"gnu++11", "gnu++0x", "gnu++14", "gnu++1y"}));
  ASSERT_EQ(tri.result.left_alone.size(), 1u);
  EXPECT_NE(tri.result.left_alone[0].find("k/b.cu:2: ?\?/"), std::string::npos)
      << tri.result.left_alone[0];
  EXPECT_NE(tri.result.left_alone[0].find("-std=c++14"), std::string::npos);
  // A digit separator: C++11 read it otherwise, C++14 is raised.
  auto sep = bridge({{"a.cpp", "const long n = 1'000'000;\n"}});
  ASSERT_TRUE(sep.result.cxx_raise);
  EXPECT_EQ(sep.result.cxx_raise->from,
            (std::vector<std::string>{"c++14", "c++1y", "gnu++14", "gnu++1y"}));
  ASSERT_EQ(sep.result.left_alone.size(), 1u);
  EXPECT_NE(sep.result.left_alone[0].find("a.cpp:1: 1'000'000"), std::string::npos);
  // std::set_unexpected: a violated throw() calls terminate under C++17, the handler before.
  auto unexpected = bridge({{"a.cpp", "void h();\nint i = (std::set_unexpected(h), 0);\n"}});
  EXPECT_FALSE(unexpected.result.cxx_raise);
  ASSERT_EQ(unexpected.result.left_alone.size(), 1u);
  EXPECT_NE(unexpected.result.left_alone[0].find("a.cpp:2: set_unexpected"), std::string::npos);
  // The same words in a string are still a trigraph (the preprocessor converts them first);
  // `??` followed by anything else is not one.
  EXPECT_EQ(bridge({{"a.cpp", "const char* s = \"what??\";\n"}}).result.cxx_raise->from.size(), 8u);
  EXPECT_EQ(bridge({{"a.cpp", "const char* s = \"what?\?!\";\n"}}).result.cxx_raise->from.size(),
            4u);
}

// marlin's cp_async4_stream (marlin_cuda_kernel.cu:69): ptxas 12.8/13.0 leave the policy's
// register unset in Marlin<256,1,8,8,4,8> and the kernel faults; the hint goes, the copy stays.
const char* k_marlin_stream =
    "#include <cstdint>\n"
    "__device__ inline void cp_async4_stream(void* smem_ptr, const void* glob_ptr) {\n"
    "  const int BYTES = 16;\n"
    "  uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));\n"
    "  asm volatile(\n"
    "    \"{\\n\"\n"
    "    \"   .reg .b64 p;\\n\"\n"
    "    \"   createpolicy.fractional.L2::evict_first.b64 p, 1.0;\"\n"
    "    \"   cp.async.cg.shared.global.L2::cache_hint [%0], [%1], %2, p;\\n\"\n"
    "    \"}\\n\" :: \"r\"(smem), \"l\"(glob_ptr), \"n\"(BYTES)\n"
    "  );\n"
    "}\n"
    "// createpolicy.fractional.L2::evict_first.b64 p, 1.0; in a comment stays\n";

TEST(CompatAsmCacheHint, MarlinsStreamCopyLosesOnlyTheHint) {
  auto r = bridge({{"marlin/k.cu", k_marlin_stream}});
  const std::string& out = r.files[0].text;
  EXPECT_EQ(out.find("createpolicy.fractional.L2::evict_first.b64 p, 1.0;\""), std::string::npos)
      << out;
  EXPECT_NE(out.find("    \"   \"\n"), std::string::npos) << out;  // the literal stays, empty
  EXPECT_NE(out.find("\"   cp.async.cg.shared.global [%0], [%1], %2;\\n\""), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"   .reg .b64 p;\\n\""), std::string::npos) << out;
  EXPECT_NE(out.find("// createpolicy.fractional.L2::evict_first.b64 p, 1.0; in a comment"),
            std::string::npos);
  // the lines keep their numbers
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'),
            std::count(k_marlin_stream, k_marlin_stream + strlen(k_marlin_stream), '\n'));
  ASSERT_EQ(r.result.changes.size(), 1u);
  EXPECT_EQ(r.result.changes[0].text(),
            "marlin/k.cu:8: createpolicy.fractional.L2::evict_first.b64 p, 1.0; + "
            ".L2::cache_hint on 1 cp.async -> the cp.async without the hint (ptxas of CUDA 12.8 "
            "and later leaves the policy register unset in some kernels)");
  // before the ptxas that miscompiles it: left as it is
  auto old = bridge({{"k.cu", k_marlin_stream}}, StackVersions{"2.11.0", "12.6"});
  EXPECT_TRUE(old.result.changes.empty());
  EXPECT_EQ(old.files[0].text, k_marlin_stream);
}

TEST(CompatAsmCacheHint, OtherUsesOfTheRegisterLeaveTheStatementAlone) {
  const std::vector<std::string> kept = {
      // the policy is an operand from C++: not the statement's own register
      "asm volatile(\"cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\\n\" :: "
      "\"r\"(s), \"l\"(g), \"l\"(pol));\n",
      // the register also goes to a load
      "asm volatile(\"{ .reg .b64 p;\\n createpolicy.fractional.L2::evict_last.b64 p, 1.0;\\n"
      " cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, p;\\n"
      " ld.global.L2::cache_hint.b32 %2, [%1], p;\\n}\" : : \"r\"(s), \"l\"(g), \"r\"(x));\n",
      // an instruction split over two literals
      "asm volatile(\"{ .reg .b64 p;\\n createpolicy.fractional.L2::evict_first.b64 p, \"\n"
      "             \"1.0;\\n cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, p;\\n}\" :: "
      "\"r\"(s), \"l\"(g));\n",
  };
  for (const auto& text : kept) {
    auto r = bridge({{"k.cu", text}});
    EXPECT_EQ(r.files[0].text, text);
    EXPECT_TRUE(r.result.changes.empty()) << text;
  }
  auto r = bridge({{"k.cu", kept[1]}});
  ASSERT_EQ(r.result.left_alone.size(), 1u);
  EXPECT_NE(r.result.left_alone[0].find("ptxas-cache-policy: k.cu:1: the cache-policy register p"),
            std::string::npos)
      << r.result.left_alone[0];
  auto split = bridge({{"k.cu", kept[2]}});
  ASSERT_EQ(split.result.left_alone.size(), 1u);
  EXPECT_NE(split.result.left_alone[0].find("not read whole"), std::string::npos)
      << split.result.left_alone[0];
}

TEST(CompatAsmCacheHint, TwoCopiesAndASourceSizeOperand) {
  const std::string text =
      "asm volatile(\"{\\n .reg .b64 q$1;\\n"
      " createpolicy.fractional.L2::evict_first.L2::evict_unchanged.b64 q$1;\\n"
      " cp.async.ca.shared.global.L2::128B.L2::cache_hint [%0], [%1], 4, %2, q$1;\\n"
      " cp.async.cg.shared.global.L2::cache_hint [%0+16], [%1+16], 16, q$1;\\n}\\n\""
      " :: \"r\"(s), \"l\"(g), \"r\"(n));\n";
  auto r = bridge({{"k.cu", text}});
  const std::string& out = r.files[0].text;
  EXPECT_EQ(out.find("createpolicy"), std::string::npos) << out;
  EXPECT_EQ(out.find("cache_hint"), std::string::npos) << out;
  EXPECT_NE(out.find("cp.async.ca.shared.global.L2::128B [%0], [%1], 4, %2;"), std::string::npos)
      << out;
  EXPECT_NE(out.find("cp.async.cg.shared.global [%0+16], [%1+16], 16;"), std::string::npos) << out;
  ASSERT_EQ(r.result.changes.size(), 1u);
  EXPECT_NE(r.result.changes[0].from.find("on 2 cp.async"), std::string::npos);
}

TEST(CompatAsmCacheHint, LongTemplatesStayBounded) {
  // the longest template it reads (8 KiB), all whitespace inside the instructions: bridged
  std::string pad(2500, ' ');
  std::string text =
      "asm volatile(\"{ .reg .b64 p;\\n createpolicy.fractional.L2::evict_first.b64 p," + pad +
      "1.0" + pad + ";\\n cp.async.cg.shared.global.L2::cache_hint [%0]," + pad +
      "[%1], 16, p;\\n}\" :: \"r\"(s), \"l\"(g));\n";
  auto r = bridge({{"k.cu", text}});
  EXPECT_EQ(r.result.changes.size(), 1u);
  EXPECT_EQ(r.files[0].text.find("createpolicy"), std::string::npos);
  // blanks where a backtracking matcher would try every split (a hostile template): read once
  std::string hostile =
      "asm volatile(\"{ .reg .b64 p;\\n createpolicy.fractional.L2::evict_first.b64 "
      "p, 1.0;\\n cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16," +
      std::string(7000, ' ') + "x p\" :: \"r\"(s), \"l\"(g));\n";
  auto h = bridge({{"k.cu", hostile}});
  EXPECT_TRUE(h.result.changes.empty());  // the copy never ends (no `;`): p has another use
  EXPECT_EQ(h.files[0].text, hostile);
  // a longer one is not a copy helper: left as it is
  std::string big = text;
  big.insert(big.find("1.0"), std::string(9000, ' '));
  auto b = bridge({{"k.cu", big}});
  EXPECT_TRUE(b.result.changes.empty());
  EXPECT_EQ(b.files[0].text, big);
}

TEST(CompatErrors, ACompilerErrorNamesTheRemoval) {
  const auto& t = removals();
  struct Case {
    const char* line;
    const char* id;
  };
  // g++ 12's and nvcc 13's own words, from builds of this machine.
  for (const auto& c : std::vector<Case>{
           {"csrc/ops.cpp:10:3: error: ‘AT_CHECK’ was not declared in this scope; did you mean "
            "‘TORCH_CHECK’?",
            "torch-at-check"},
           {"csrc/k.cu(3): error: identifier \"AT_CHECK\" is undefined", "torch-at-check"},
           {"emd_kernel.cu(178): error: identifier \"CHECK_EQ\" is undefined", "torch-check-eq"},
           {"k.cu(9): error: namespace \"cub\" has no member \"Sum\"", "cccl-cub-sum"},
           {"t.cu(4): error: no instance of overloaded function "
            "\"cub::CUB_300001_SM_750::DeviceScan::ExclusiveSum\" matches the argument list",
            "cccl-cub-debug-synchronous"},
           {"src/dcn.cu:9:10: fatal error: THC/THC.h: No such file or directory", "torch-thc"},
           {"k.cu(5): error: no suitable conversion function from \"const "
            "at::DeprecatedTypeProperties\" to \"c10::ScalarType\" exists",
            "torch-dispatch-type"},
           {"a.cpp:2:6: error: ‘unique_ptr’ in namespace ‘std’ does not name a template type",
            "std-header-memory"},
           {"a.cu(2): error: namespace \"std\" has no member \"unique_ptr\"", "std-header-memory"},
           {"c.cpp:2:1: error: ‘uint32_t’ does not name a type", "std-header-cstdint"},
           {"c.cu(2): error: identifier \"uint32_t\" is undefined", "std-header-cstdint"},
           {"d.cpp:2:23: error: ‘runtime_error’ is not a member of ‘std’", "std-header-stdexcept"},
           {"torch/include/torch/csrc/api/include/torch/all.h:5:2: error: #error C++17 or later "
            "compatible compiler is required to use PyTorch.",
            "torch-cxx17"}}) {
    auto hit = removal_in_error(c.line, t);
    ASSERT_TRUE(hit) << c.line;
    EXPECT_EQ(hit->id, c.id) << c.line;
  }
  EXPECT_FALSE(removal_in_error("x.cu(3): error: identifier \"foo\" is undefined", t));
  EXPECT_FALSE(removal_in_error("note: ‘AT_CHECK’ mentioned in a note", t));  // not an error line
  auto found = removal_in_log(
      "[1/2] nvcc ...\nwarning: x\nk.cu(9): error: namespace \"cub\" has no member \"Max\"\n", t);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->line_number, 3u);
  EXPECT_EQ(found->hit.id, "cccl-cub-max");
  EXPECT_EQ(found->hit.removed_in, "CUDA 13.0");
  EXPECT_FALSE(removal_in_log("all fine\n", t));
}

}  // namespace
}  // namespace tailor::compat
