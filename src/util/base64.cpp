#include "util/base64.h"

#include <openssl/evp.h>

#include <climits>

namespace tailor {

namespace {
bool urlsafe_digit(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}
}  // namespace

std::string base64url_nopad_encode(std::span<const std::byte> data) {
  if (data.empty() || data.size() > size_t{INT_MAX} / 4 * 3 - 3) return {};
  std::string out((data.size() + 2) / 3 * 4 + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    else if (c == '/') c = '_';
  }
  return out;
}

std::optional<std::vector<std::byte>> base64url_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1 || text.size() > size_t{INT_MAX} - 4) return std::nullopt;
  // EVP_DecodeBlock takes the standard alphabet, padded, and skips blanks: check the
  // URL-safe alphabet strictly first, then translate.
  std::string standard;
  standard.reserve(text.size() + 3);
  for (char c : text) {
    if (!urlsafe_digit(c)) return std::nullopt;
    standard += c == '-' ? '+' : c == '_' ? '/' : c;
  }
  const size_t pad = (4 - standard.size() % 4) % 4;
  standard.append(pad, '=');
  std::vector<std::byte> out(standard.size() / 4 * 3);
  if (standard.empty()) return out;
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(standard.data()), static_cast<int>(standard.size()));
  if (n < 0 || static_cast<size_t>(n) != out.size()) return std::nullopt;
  out.resize(out.size() - pad);  // EVP_DecodeBlock counts padding as zero bytes
  return out;
}

}  // namespace tailor
