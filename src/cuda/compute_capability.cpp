#include "cuda/compute_capability.h"

#include <charconv>

namespace tailor::cuda {

namespace {
bool parse_int(std::string_view s, int& out) {
  if (s.empty() || s.size() > 3) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

std::string ComputeCapability::str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

int ComputeCapability::number() const { return major * 10 + minor; }

Expected<ComputeCapability> parse_compute_capability(std::string_view text) {
  auto dot = text.find('.');
  ComputeCapability cc;
  if (dot == std::string_view::npos || !parse_int(text.substr(0, dot), cc.major) ||
      !parse_int(text.substr(dot + 1), cc.minor) || text.size() - dot - 1 != 1 || cc.major == 0)
    return make_error("not a compute capability: '" + std::string(text) +
                      "' (expected X.Y, e.g. 9.0)");
  return cc;
}

Expected<ComputeCapability> compute_capability_from_digits(std::string_view digits) {
  int n = 0;
  if (digits.size() < 2 || !parse_int(digits, n) || digits.front() == '0')
    return make_error("not a compute capability number: '" + std::string(digits) +
                      "' (expected e.g. 90)");
  return ComputeCapability{n / 10, n % 10};
}

}  // namespace tailor::cuda
