#include "inspect/torch_pin.h"

#include <cctype>

#include "formats/wheel.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::inspect {

namespace {
// The word between the label's CUDA part and torch's release: "cu130" "torch" "2.11".
constexpr std::string_view k_label_torch = "torch";
}  // namespace

std::optional<TorchBuild> parse_torch_build(std::string_view text) {
  text = trim(text);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) return std::nullopt;
  TorchBuild t;
  auto space = text.find(' ');
  t.version = std::string(text.substr(0, space));
  if (space == std::string_view::npos) return t;
  auto rest = text.substr(space);
  constexpr std::string_view k_cuda = "(CUDA ";
  if (auto at = rest.find(k_cuda); at != std::string_view::npos) {
    auto end = rest.find(')', at);
    if (end != std::string_view::npos) {
      auto cuda = trim(rest.substr(at + k_cuda.size(), end - at - k_cuda.size()));
      if (cuda != "none") t.cuda = std::string(cuda);
    }
  }
  return t;
}

std::string public_version(std::string_view version) {
  return std::string(version.substr(0, version.find('+')));
}

std::string torch_local_label(const TorchBuild& torch) {
  std::string cuda = "cpu";
  if (!torch.cuda.empty()) {
    cuda = "cu";
    for (char c : torch.cuda)
      if (std::isdigit(static_cast<unsigned char>(c))) cuda += c;
  }
  auto v = parse_version(public_version(torch.version));
  std::string release = v ? v->major_minor() : public_version(torch.version);
  return cuda + std::string(k_label_torch) + release;
}

std::string torch_requirement(const TorchBuild& torch) {
  return "torch==" + public_version(torch.version);
}

std::string version_with_label(std::string_view version, std::string_view label) {
  auto plus = version.find('+');
  if (plus == std::string_view::npos) return std::string(version) + "+" + std::string(label);
  auto local = version.substr(plus + 1);
  if (local == label || local.ends_with("." + std::string(label))) return std::string(version);
  // A package that tags its own build with the CUDA part of the label ("0.0.9+cu130") gets
  // the whole label in that segment's place, not the CUDA tag twice.
  auto dot = local.rfind('.');
  auto last = dot == std::string_view::npos ? local : local.substr(dot + 1);
  if (!last.empty() && label.starts_with(last) &&
      label.substr(last.size()).starts_with(k_label_torch))
    return std::string(version.substr(0, version.size() - last.size())) + std::string(label);
  return std::string(version) + "." + std::string(label);
}

std::string requirement_name(std::string_view requirement) {
  requirement = trim(requirement);
  size_t end = 0;
  while (end < requirement.size()) {
    char c = requirement[end];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) break;
    ++end;
  }
  return formats::normalize_distribution_name(requirement.substr(0, end));
}

namespace {

// The specifier part of a requirement: what follows the name and extras, before markers,
// without the parentheses of the old form ("torch (==2.11.0)").
std::string specifier_of(std::string_view requirement) {
  auto semi = requirement.find(';');
  auto spec = trim(requirement.substr(0, semi));
  size_t at = 0;
  while (at < spec.size() && (std::isalnum(static_cast<unsigned char>(spec[at])) ||
                              spec[at] == '-' || spec[at] == '_' || spec[at] == '.'))
    ++at;
  spec = trim(spec.substr(at));
  if (!spec.empty() && spec.front() == '[') {
    auto close = spec.find(']');
    spec = close == std::string_view::npos ? std::string_view() : trim(spec.substr(close + 1));
  }
  if (!spec.empty() && spec.front() == '(' && spec.back() == ')')
    spec = trim(spec.substr(1, spec.size() - 2));
  std::string out;
  for (char c : spec)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

}  // namespace

std::optional<std::string> pinned_torch(const std::vector<std::string>& requires_dist) {
  for (const auto& r : requires_dist) {
    if (requirement_name(r) != "torch") continue;
    std::string spec = specifier_of(r);
    // One clause that fixes the release: "==2.11.0", "==2.11.*", "===2.11.0+cu130".
    if (spec.find(',') != std::string::npos) continue;
    if (spec.starts_with("===")) return spec.substr(3);
    if (spec.starts_with("==") && spec.size() > 2) return spec.substr(2);
  }
  return std::nullopt;
}

bool torch_matches_pin(std::string_view torch_version, std::string_view pin) {
  if (pin.ends_with(".*")) {
    auto prefix = pin.substr(0, pin.size() - 2);
    auto v = parse_version(public_version(torch_version));
    auto p = parse_version(prefix);
    if (!v || !p || p->parts.size() > v->parts.size()) return false;
    for (size_t i = 0; i < p->parts.size(); ++i)
      if (p->parts[i] != v->parts[i]) return false;
    return true;
  }
  if (pin.find('+') != std::string_view::npos) return torch_version == pin;
  return compare_versions(public_version(torch_version), pin) == 0;
}

std::string pin_torch_in_metadata(std::string_view metadata, std::string_view version,
                                  std::string_view requirement) {
  // Headers end at the first empty line; the body (the description) is kept as it is.
  size_t headers_end = metadata.size();
  size_t body_start = metadata.size();
  for (size_t start = 0; start < metadata.size();) {
    size_t end = metadata.find('\n', start);
    size_t next = end == std::string_view::npos ? metadata.size() : end + 1;
    auto line =
        metadata.substr(start, (end == std::string_view::npos ? metadata.size() : end) - start);
    if (line.empty() || line == "\r") {
      headers_end = start;
      body_start = start;
      break;
    }
    start = next;
  }
  std::vector<std::string> out;
  std::optional<size_t> pin_at, after_requires;
  bool dropping = false;
  for (auto& raw : split_any(metadata.substr(0, headers_end), "\n")) {
    std::string line = raw;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.front() == ' ' || line.front() == '\t') {
      if (!dropping) out.push_back(line);
      continue;
    }
    dropping = false;
    auto colon = line.find(':');
    std::string key = colon == std::string::npos ? "" : to_lower(trim(line.substr(0, colon)));
    std::string value = colon == std::string::npos ? "" : std::string(trim(line.substr(colon + 1)));
    if (key == "version") {
      out.push_back("Version: " + std::string(version));
      continue;
    }
    if (key == "requires-dist" && requirement_name(value) == "torch") {
      if (!pin_at) pin_at = out.size();
      dropping = true;
      continue;
    }
    out.push_back(line);
    if (key == "requires-dist") after_requires = out.size();
  }
  size_t at = pin_at ? *pin_at : after_requires ? *after_requires : out.size();
  out.insert(out.begin() + static_cast<ptrdiff_t>(at),
             "Requires-Dist: " + std::string(requirement));
  std::string text = join(out, "\n") + "\n";
  if (body_start < metadata.size()) text += std::string(metadata.substr(body_start));
  return text;
}

}  // namespace tailor::inspect
