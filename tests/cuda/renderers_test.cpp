#include "cuda/renderers.h"

#include <gtest/gtest.h>

#include "cuda/arch_spec.h"
#include "cuda/torch_wheels.h"
#include "util/strings.h"

using namespace tailor::cuda;

namespace {
TargetSet parse(std::string_view spec) {
  auto s = parse_arch_spec(spec);
  EXPECT_TRUE(s) << spec << ": " << (s ? "" : s.error().message);
  return s ? *s : TargetSet{};
}
constexpr Consumer k_all[] = {Consumer::torch, Consumer::cmake, Consumer::nvcc,
                              Consumer::flash_attn, Consumer::bitsandbytes};
}  // namespace

TEST(Renderers, IssueExample) {
  TargetSet s = parse("8.0;8.6+PTX");
  EXPECT_EQ(render_torch_arch_list(s), "8.0;8.6+PTX");
  EXPECT_EQ(render_cmake_architectures(s), "80-real;86");
  EXPECT_EQ(render_gencode_flags(s),
            (std::vector<std::string>{"-gencode=arch=compute_80,code=sm_80",
                                      "-gencode=arch=compute_86,code=sm_86",
                                      "-gencode=arch=compute_86,code=compute_86"}));
  EXPECT_EQ(render_flash_attn_archs(s), "80;86");
  EXPECT_EQ(render_bnb_compute_capability(s), "80;86");
}

TEST(Renderers, EachConsumerSpelling) {
  struct Case {
    const char* spec;
    const char* torch;
    const char* cmake;
    const char* fa;
  };
  for (auto c :
       {Case{"sm_90a", "9.0a", "90a-real", "90"}, Case{"90a", "9.0a+PTX", "90a", "90"},
        Case{"75;80-real;90-virtual", "7.5+PTX;8.0;9.0+PTX", "75;80-real;90-virtual", "75;80"},
        Case{"Blackwell", "10.0;10.3;12.0;12.1+PTX", "100-real;103-real;120-real;121",
             "100;103;120;121"},
        Case{"sm_100f;sm_100", "10.0", "100-real;100f-real", "100"},
        Case{"T4G", "7.5", "75-real", "75"}}) {
    TargetSet s = parse(c.spec);
    EXPECT_EQ(render_torch_arch_list(s), c.torch) << c.spec;
    EXPECT_EQ(render_cmake_architectures(s), c.cmake) << c.spec;
    EXPECT_EQ(render_flash_attn_archs(s), c.fa) << c.spec;
  }
}

// For every consumer: the rendering read back with that consumer's meaning is the same
// set, exactly when render_losses says nothing was lost.
TEST(Renderers, RoundTripOrDocumentedLoss) {
  for (const char* spec :
       {"8.0;8.6+PTX", "sm_90a", "90a", "75;80-real;90-virtual", "Blackwell", "sm_100f",
        "compute_86", "7.5;8.0;8.6;9.0;10.0;12.0+PTX", "sm_120a;compute_120a", "T4G", "Hopper",
        "sm_75;sm_80;sm_90", "100f;110f-real"}) {
    TargetSet s = parse(spec);
    for (Consumer c : k_all) {
      auto back = parse_for(c, render_for(c, s));
      ASSERT_TRUE(back) << spec << " via " << consumer_variable(c) << ": " << back.error().message;
      bool lossless = render_losses(c, s).empty();
      EXPECT_EQ(*back == s, lossless)
          << spec << " via " << consumer_variable(c) << " -> " << render_for(c, s);
    }
  }
}

TEST(Renderers, LossesSayWhatChanged) {
  auto torch = render_losses(Consumer::torch, parse("compute_86"));
  ASSERT_EQ(torch.size(), 1u);
  EXPECT_EQ(
      torch[0],
      "TORCH_CUDA_ARCH_LIST cannot say PTX only: compute_86 is spelled 8.6+PTX, which adds sm_86");
  EXPECT_EQ(render_torch_arch_list(parse("compute_86")), "8.6+PTX");
  EXPECT_EQ(render_losses(Consumer::torch, parse("sm_100f")).size(), 1u);
  EXPECT_EQ(render_torch_arch_list(parse("sm_100f")), "10.0");
  EXPECT_TRUE(render_losses(Consumer::cmake, parse("sm_100f;compute_86;90a")).empty());
  EXPECT_TRUE(render_losses(Consumer::nvcc, parse("sm_100f;compute_86;90a")).empty());
  EXPECT_EQ(render_losses(Consumer::flash_attn, parse("8.6+PTX;9.0a")).size(), 2u);
  EXPECT_TRUE(render_losses(Consumer::bitsandbytes, parse("7.5;8.0;9.0")).empty());
}

TEST(Renderers, FlashAttnAndBnbReadNumbersAsSass) {
  EXPECT_EQ(tailor::join(parse_for(Consumer::flash_attn, "80;90;100;120")->names(), " "),
            "sm_80 sm_90 sm_100 sm_120");
  EXPECT_EQ(tailor::join(parse_for(Consumer::bitsandbytes, "75;80;90")->names(), " "),
            "sm_75 sm_80 sm_90");
  EXPECT_FALSE(parse_for(Consumer::flash_attn, "80;9.0"));
}

// Every official torch wheel list round-trips through torch, CMake and nvcc spellings.
TEST(Renderers, OfficialTorchListsRoundTrip) {
  ASSERT_FALSE(official_torch_arch_lists().empty());
  for (const auto& w : official_torch_arch_lists()) {
    TargetSet s = parse(w.torch_cuda_arch_list);
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(render_torch_arch_list(s), w.torch_cuda_arch_list)
        << w.cuda.to_string() << " " << w.platform;
    for (Consumer c : {Consumer::torch, Consumer::cmake, Consumer::nvcc}) {
      EXPECT_TRUE(render_losses(c, s).empty());
      auto back = parse_for(c, render_for(c, s));
      ASSERT_TRUE(back) << back.error().message;
      EXPECT_EQ(back->names(), s.names())
          << w.cuda.to_string() << " " << w.platform << " via " << consumer_variable(c);
    }
  }
}
