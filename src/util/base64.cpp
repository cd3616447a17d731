#include "util/base64.h"

#include <openssl/evp.h>

#include <climits>

namespace tailor {

std::string base64url_nopad_encode(std::span<const std::byte> data) {
  if (data.empty() || data.size() > size_t{INT_MAX} / 4 * 3 - 3) return {};
  std::string out((data.size() + 2) / 3 * 4 + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+')
      c = '-';
    else if (c == '/')
      c = '_';
  }
  return out;
}

}  // namespace tailor
