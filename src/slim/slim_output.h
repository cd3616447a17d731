// Internal to src/slim: the output side of elf_slim's surgery. Sequential writes through a
// buffer (or only counted, for a dry run), the freed runs of zeros they leave, and the small
// patches written over the result afterwards.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "slim/elf_slim.h"
#include "util/expected.h"

namespace tailor::slim::surgery {

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
inline uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }

// One change to the output, at an output offset.
struct Patch {
  uint64_t offset = 0;
  std::vector<std::byte> bytes;
};

template <typename T>
Patch patch_of(uint64_t offset, T value) {
  Patch p{offset, std::vector<std::byte>(sizeof(T))};
  std::memcpy(p.bytes.data(), &value, sizeof(T));
  return p;
}

// Sequential writes through a 1 MiB buffer. With fd -1 nothing is written, only counted
// (a dry run learns the same zero runs as a real one).
class Writer {
 public:
  Writer(int fd, bool release_pages) : m_fd(fd), m_release(release_pages) {
    if (m_fd >= 0) m_buf.reserve(1 << 20);
  }
  Expected<void> bytes(Bytes b) {
    if (m_fd < 0) {
      m_written += b.size();
      return {};
    }
    if (m_buf.size() + b.size() > m_buf.capacity()) TAILOR_TRY_VOID(flush());
    if (b.size() >= m_buf.capacity()) return raw(b);
    m_buf.insert(m_buf.end(), b.begin(), b.end());
    return {};
  }
  // A large span of the input map: written in 16 MiB steps, each step's pages handed back
  // to the kernel afterwards, so a 1 GB library does not stay resident.
  Expected<void> copy_from_map(Bytes b);
  // Freed bytes: zeros, and the run remembered (ByteRange) when it is at least a page.
  Expected<void> zeros(uint64_t n);
  Expected<void> flush();
  uint64_t written() const { return m_written + m_buf.size(); }
  std::vector<ByteRange>& zero_runs() { return m_zero_runs; }
  uint64_t zero_bytes() const { return m_zero_bytes; }
  static constexpr uint64_t k_min_zero_run = 4096;

 private:
  Expected<void> raw(Bytes b);
  int m_fd;
  bool m_release;
  std::vector<std::byte> m_buf;
  uint64_t m_written = 0;
  std::vector<ByteRange> m_zero_runs;
  uint64_t m_zero_bytes = 0;
};

/// Writes one patch at its offset.
Expected<void> pwrite_all(int fd, const Patch& p);
/// Hands the pages of [offset, offset + size) of a read-only file map back to the kernel.
void release_map(Bytes file, uint64_t offset, uint64_t size);
/// The zero runs minus the bytes patches overwrite (the program header table moves into
/// .nv_fatbin's freed range), runs shorter than a page dropped.
std::vector<ByteRange> zero_runs_minus(std::vector<ByteRange> runs, std::vector<Patch> patches);

}  // namespace tailor::slim::surgery
