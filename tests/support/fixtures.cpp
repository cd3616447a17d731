#include "support/fixtures.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace tailor::test {

std::string fixture(const std::string& name) {
  return std::string(TAILOR_BINARY_DIR) + "/fixtures/" + name + ".so";
}

std::vector<std::byte> slurp(const std::string& path) {
  std::string text = slurp_text(path);
  std::vector<std::byte> out(text.size());
  if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::string slurp_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace tailor::test
