// Written for GCC 9, whose <vector> brought <memory>, <cstdint> and <stdexcept> along.
#pragma once
#include <vector>

struct Buffer {
  std::unique_ptr<float[]> data;
  uint32_t size = 0;
};

inline void check_size(int64_t n) {
  if (n < 0) throw std::runtime_error("negative size");
}
