#include "builder/driver_events.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "cuda/cuda_target.h"
#include "data/toml_document.h"

namespace tailor::builder {
namespace {

constexpr const char* k_schema = "driver/events.toml";
constexpr int64_t k_max_count = 1000000;
constexpr size_t k_max_text = 1000;
constexpr size_t k_max_line = 64 * 1024;
constexpr size_t k_max_choices = 64;
constexpr size_t k_max_splits = 256;

enum class FieldType { count, text };

struct Schema {
  int version = 0;
  std::map<std::string, std::map<std::string, FieldType>> kinds;
};

/// data/driver/events.toml, read once.
const Schema& schema() {
  static const Schema s = [] {
    auto doc = data::toml_document(k_schema);
    Schema out;
    out.version = static_cast<int>(doc["version"].integer());
    for (const auto& [kind, fields] : doc["kind"].entries()) {
      auto& types = out.kinds[kind];
      for (const auto& [name, type] : fields.string_table()) {
        if (type == "count")
          types[name] = FieldType::count;
        else if (type == "text")
          types[name] = FieldType::text;
        else
          fields[name].fail("expected \"count\" or \"text\"");
      }
    }
    if (out.kinds.empty()) doc["kind"].fail("expected at least one kind");
    return out;
  }();
  return s;
}

}  // namespace

int driver_events_version() { return schema().version; }

int64_t DriverEvent::count(const std::string& name) const {
  auto it = fields.find(name);
  if (it == fields.end() || !std::holds_alternative<int64_t>(it->second)) return 0;
  return std::get<int64_t>(it->second);
}

std::string DriverEvent::text(const std::string& name) const {
  auto it = fields.find(name);
  if (it == fields.end() || !std::holds_alternative<std::string>(it->second)) return {};
  return std::get<std::string>(it->second);
}

Expected<DriverEvent> parse_driver_event(std::string_view line) {
  if (line.size() > k_max_line) return make_error("an event line over 64 KiB");
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("not a JSON object");
  const Schema& s = schema();
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != s.version)
    return make_error(fmt::format("not an event of version {}", s.version));
  auto k = j.find("kind");
  if (k == j.end() || !k->is_string()) return make_error("no kind");
  DriverEvent e;
  e.kind = k->get<std::string>();
  auto kind = s.kinds.find(e.kind);
  if (kind == s.kinds.end()) return make_error("an unknown kind: " + e.kind.substr(0, 40));
  for (const auto& [name, value] : j.items()) {
    if (name == "v" || name == "kind") continue;
    auto type = kind->second.find(name);
    if (type == kind->second.end())
      return make_error(fmt::format("{}: an unknown field {}", e.kind, name.substr(0, 40)));
    if (type->second == FieldType::count) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() > k_max_count)
        return make_error(fmt::format("{}.{}: expected a count", e.kind, name));
      e.fields[name] = value.get<int64_t>();
    } else {
      if (!value.is_string() || value.get_ref<const std::string&>().size() > k_max_text)
        return make_error(fmt::format("{}.{}: expected a text", e.kind, name));
      e.fields[name] = value.get<std::string>();
    }
  }
  for (const auto& [name, type] : kind->second)
    if (!e.fields.contains(name)) return make_error(fmt::format("{}: no {}", e.kind, name));
  return e;
}

void DriverFacts::add(const DriverEvent& e) {
  auto once = [](std::vector<std::string>& list, std::string text) {
    if (list.size() < k_max_choices && std::find(list.begin(), list.end(), text) == list.end())
      list.push_back(std::move(text));
  };
  if (e.kind == "modules") {
    modules = static_cast<int>(e.count("modules"));
    units = static_cast<int>(e.count("units"));
    cuda_units = static_cast<int>(e.count("cuda_units"));
    split_compile = static_cast<int>(e.count("split_compile"));
  } else if (e.kind == "unit_order") {
    units_known = static_cast<int>(e.count("known"));
    unit_order_source = e.text("source");
  } else if (e.kind == "split") {
    const int64_t k = e.count("k");
    if (k >= 2 && k <= 64 && split_units.size() < k_max_splits)
      split_units[e.text("unit")] = static_cast<int>(k);
  } else if (e.kind == "choice") {
    once(choices, e.text("text"));
  } else if (e.kind == "compat") {
    once(compat, e.text("text"));
  } else if (e.kind == "variant") {
    // Only an arch-specific variant of the target's own capability: sm_90 as sm_90a.
    auto target = cuda::parse_target_name(e.text("target"));
    auto variant = cuda::parse_target_name(e.text("variant"));
    if (target && variant && variant->variant != cuda::ArchVariant::none &&
        variant->cc == target->cc && variant->kind == target->kind &&
        variants.size() < k_max_choices)
      variants[target->name()] = variant->name();
  }
}

std::vector<DriverEvent> DriverEventReader::poll(DriverFacts& facts) {
  std::vector<DriverEvent> out;
  // The writers share the descriptor's file offset: it ends what they have written (the
  // memory file beyond it is unwritten).
  const off_t written = ::lseek(m_fd, 0, SEEK_CUR);
  const uint64_t end =
      written < 0 ? m_max : std::min<uint64_t>(m_max, static_cast<uint64_t>(written));
  char buf[16384];
  while (m_offset < end) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buf, end - m_offset));
    ssize_t n = ::pread(m_fd, buf, want, static_cast<off_t>(m_offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    m_offset += static_cast<uint64_t>(n);
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        if (m_partial.size() < k_max_line)
          m_partial.push_back(buf[i]);
        else
          m_overlong = true;
        continue;
      }
      if (m_overlong) {
        ++facts.refused;
        if (facts.first_refusal.empty()) facts.first_refusal = "an event line over 64 KiB";
      } else if (auto e = parse_driver_event(m_partial)) {
        facts.add(*e);
        out.push_back(std::move(*e));
      } else {
        ++facts.refused;
        if (facts.first_refusal.empty()) facts.first_refusal = e.error().message;
      }
      m_partial.clear();
      m_overlong = false;
    }
  }
  return out;
}

}  // namespace tailor::builder
