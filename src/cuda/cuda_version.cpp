#include "cuda/cuda_version.h"

#include <charconv>

#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::cuda {

namespace {
/// 1 to `max_digits` decimal digits, nothing else.
bool parse_number(std::string_view s, size_t max_digits, int& out) {
  if (s.empty() || s.size() > max_digits) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

/// "cu130", "cu128", "cu118": "cu", a two-digit major and a one-digit minor, as torch
/// labels its wheels. Exactly three digits: NVIDIA's package suffix "cu12" names a major
/// alone (nvidia-cudnn-cu12) and must not read as 1.2, and "cu1210" could not tell
/// 121.0 from 12.10.
bool parse_label(std::string_view t, CudaVersion& v) {
  if (!starts_with_icase(t, "cu")) return false;
  std::string_view digits = t.substr(2);
  if (digits.size() != 3) return false;
  return parse_number(digits.substr(0, 2), 2, v.major) &&
         parse_number(digits.substr(2), 1, v.minor);
}

/// "13.0", "13.0.88": two or three dotted numbers; the patch level is checked, then dropped.
bool parse_dotted(std::string_view t, CudaVersion& v) {
  auto dot = t.find('.');
  if (dot == std::string_view::npos) return false;
  std::string_view rest = t.substr(dot + 1);
  auto second = rest.find('.');
  int patch = 0;
  if (second != std::string_view::npos && !parse_number(rest.substr(second + 1), 6, patch))
    return false;
  return parse_number(t.substr(0, dot), 3, v.major) &&
         parse_number(rest.substr(0, second), 3, v.minor);
}
}  // namespace

std::string CudaVersion::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string CudaVersion::label() const {
  return "cu" + std::to_string(major) + std::to_string(minor);
}

Expected<CudaVersion> parse_cuda_version(std::string_view text) {
  const std::string_view t = trim(text);
  CudaVersion v;
  if ((parse_dotted(t, v) || parse_label(t, v)) && v.major > 0) return v;
  return make_error("not a CUDA version: '" + terminal_safe(text) +
                    "' (expected e.g. 12.8 or cu128)");
}

Expected<CudaVersion> cuda_version_from_driver(int value) {
  if (value <= 0)
    return make_error("not a CUDA driver version: " + std::to_string(value) +
                      " (expected e.g. 12080 for 12.8)");
  return CudaVersion{value / 1000, value % 1000 / 10};
}

std::vector<std::string> to_strings(const std::vector<CudaVersion>& versions) {
  std::vector<std::string> out;
  out.reserve(versions.size());
  for (const auto& v : versions) out.push_back(v.to_string());
  return out;
}

}  // namespace tailor::cuda
