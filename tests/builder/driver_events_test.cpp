// The C++ side of the build driver's events (data/driver/events.toml): the reader takes the
// lines the driver's own test holds it to write (tests/driver/events.jsonl, written by
// tests/driver/test_events.py's calls) and refuses every line the schema does not allow.
#include "builder/driver_events.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "data/toml_document.h"

using namespace tailor::builder;

namespace {

std::string golden() {
  std::ifstream in(std::string(TAILOR_SOURCE_DIR) + "/tests/driver/events.jsonl");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string refusal(std::string_view line) {
  auto e = parse_driver_event(line);
  return e ? std::string("accepted") : e.error().message;
}

TEST(DriverEvents, TheDriversLinesBecomeTheFacts) {
  DriverFacts facts;
  std::istringstream lines(golden());
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    auto e = parse_driver_event(line);
    ASSERT_TRUE(e) << line << ": " << e.error().message;
    facts.add(*e);
    ++n;
  }
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(facts.refused, 0u);
  EXPECT_EQ(facts.modules, 3);
  EXPECT_EQ(facts.units, 14);
  EXPECT_EQ(facts.cuda_units, 9);
  EXPECT_EQ(facts.split_compile, 2);
  EXPECT_EQ(facts.units_known, 12);
  EXPECT_EQ(facts.unit_order_source, "earlier builds");
  EXPECT_EQ(facts.split_units, (std::map<std::string, int>{{"csrc/k3.cu", 4}}));
  EXPECT_EQ(facts.choices, (std::vector<std::string>{
                               "setup.py:12: MAX_JOBS=1 set by the package; tailor's job count "
                               "stands"}));
  EXPECT_EQ(facts.variants, (std::map<std::string, std::string>{{"sm_90", "sm_90a"}}));
  EXPECT_EQ(facts.compat,
            (std::vector<std::string>{"setup.py:3: -std=c++14 raised to c++17 for torch 2.11"}));
}

TEST(DriverEvents, EveryKindOfTheSchemaIsInTheDriversLines) {
  // The golden lines cover the schema: a kind added to events.toml needs a writer in say.py
  // and a line here (test_events.py checks the driver writes every kind).
  auto doc = tailor::data::toml_document("driver/events.toml");
  EXPECT_EQ(doc["version"].integer(), driver_events_version());
  const std::string text = golden();
  for (const auto& [kind, fields] : doc["kind"].entries())
    EXPECT_NE(text.find("\"kind\": \"" + kind + "\""), std::string::npos) << kind;
}

TEST(DriverEvents, WhatTheSchemaDoesNotAllowIsRefused) {
  EXPECT_EQ(refusal(R"({"v":1,"kind":"choice","text":"x"})"), "accepted");
  EXPECT_EQ(refusal("tailor: package choice: x"), "not a JSON object");
  EXPECT_EQ(refusal("[1,2]"), "not a JSON object");
  EXPECT_EQ(refusal(R"({"kind":"choice","text":"x"})"), "not an event of version 1");
  EXPECT_EQ(refusal(R"({"v":"1","kind":"choice","text":"x"})"), "not an event of version 1");
  EXPECT_EQ(refusal(R"({"v":1,"text":"x"})"), "no kind");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"nonsense"})"), "an unknown kind: nonsense");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"choice","text":"x","extra":1})"),
            "choice: an unknown field extra");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"choice"})"), "choice: no text");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"choice","text":3})"), "choice.text: expected a text");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"split","unit":"a.cu","k":-1,"why":""})"),
            "split.k: expected a count");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"split","unit":"a.cu","k":2.5,"why":""})"),
            "split.k: expected a count");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"split","unit":"a.cu","k":1000001,"why":""})"),
            "split.k: expected a count");
  EXPECT_EQ(refusal(R"({"v":1,"kind":"choice","text":")" + std::string(1001, 'x') + "\"}"),
            "choice.text: expected a text");
  EXPECT_EQ(refusal(std::string(70000, ' ')), "an event line over 64 KiB");
}

TEST(DriverEvents, FactsAreBoundedAndSaidOnce) {
  DriverFacts facts;
  for (int i = 0; i < 100; ++i) {
    auto e = parse_driver_event(R"({"v":1,"kind":"choice","text":"c)" + std::to_string(i) + "\"}");
    ASSERT_TRUE(e);
    facts.add(*e);
    facts.add(*e);
  }
  EXPECT_EQ(facts.choices.size(), 64u);
  EXPECT_EQ(facts.choices[1], "c1");
  auto split = parse_driver_event(R"({"v":1,"kind":"split","unit":"a.cu","k":1,"why":"x"})");
  ASSERT_TRUE(split);
  facts.add(*split);
  EXPECT_TRUE(facts.split_units.empty()) << "K below 2 splits nothing";
  for (const char* pair :
       {R"("target":"sm_90","variant":"sm_80a")", R"("target":"sm_90","variant":"sm_90")",
        R"("target":"sm_90","variant":"compute_90a")", R"("target":"x","variant":"sm_90a")"}) {
    auto v = parse_driver_event(std::string(R"({"v":1,"kind":"variant",)") + pair + "}");
    ASSERT_TRUE(v) << pair;
    facts.add(*v);
  }
  EXPECT_TRUE(facts.variants.empty()) << "only the target's own arch-specific variant counts";
}

TEST(DriverEventReader, ReadsCompleteLinesUpToWhatWasWrittenAndBoundsTheRest) {
  char name[] = "/tmp/tailor-events-XXXXXX";
  int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  ::unlink(name);
  DriverEventReader reader(fd, 200);
  DriverFacts facts;
  auto put = [&](const std::string& s) {
    ASSERT_EQ(::write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  };
  put(R"({"v":1,"kind":"choice","text":"one"})"
      "\n"
      R"({"v":1,"kind":"choice",)");
  EXPECT_EQ(reader.poll(facts).size(), 1u);  // the half line waits
  put(R"("text":"two"})"
      "\nnot json\n");
  EXPECT_EQ(reader.poll(facts).size(), 1u);
  EXPECT_EQ(facts.choices, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(facts.refused, 1u);
  put(std::string(300, 'x') + "\n" + R"({"v":1,"kind":"choice","text":"late"})" + "\n");
  EXPECT_TRUE(reader.poll(facts).empty()) << "past the 200-byte bound nothing is read";
  EXPECT_EQ(facts.choices.size(), 2u);
  ::close(fd);
}

}  // namespace
