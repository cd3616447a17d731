#include "slim/slim_output.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "util/interrupt.h"

namespace tailor::slim::surgery {

Expected<void> Writer::copy_from_map(Bytes b) {
  if (m_fd < 0) return bytes(b);
  constexpr size_t k_step = size_t{16} << 20;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < b.size(); at += k_step) {
    if (int sig = interrupt_signal())
      return make_error("interrupted by signal " + std::to_string(sig));
    Bytes part = b.subspan(at, std::min(k_step, b.size() - at));
    TAILOR_TRY_VOID(bytes(part));
    uintptr_t lo = (reinterpret_cast<uintptr_t>(part.data()) + page - 1) / page * page;
    uintptr_t hi = (reinterpret_cast<uintptr_t>(part.data()) + part.size()) / page * page;
    if (m_release && hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }
  return {};
}

Expected<void> Writer::zeros(uint64_t n) {
  if (n == 0) return {};
  m_zero_bytes += n;
  if (n >= k_min_zero_run) {
    if (!m_zero_runs.empty() && m_zero_runs.back().offset + m_zero_runs.back().size == written())
      m_zero_runs.back().size += n;
    else
      m_zero_runs.push_back({written(), n});
  }
  static const std::vector<std::byte> k_zero(1 << 16);
  while (n) {
    uint64_t k = std::min<uint64_t>(n, k_zero.size());
    TAILOR_TRY_VOID(bytes(Bytes(k_zero.data(), k)));
    n -= k;
  }
  return {};
}

Expected<void> Writer::flush() {
  if (int sig = interrupt_signal())
    return make_error("interrupted by signal " + std::to_string(sig));
  if (m_fd < 0) return {};
  auto r = raw(Bytes(m_buf.data(), m_buf.size()));
  m_buf.clear();
  return r;
}

Expected<void> Writer::raw(Bytes b) {
  const std::byte* p = b.data();
  size_t left = b.size();
  while (left) {
    ssize_t n = ::write(m_fd, p, std::min<size_t>(left, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(std::string("writing the slimmed file: ") + std::strerror(errno));
    p += n;
    left -= static_cast<size_t>(n);
    m_written += static_cast<uint64_t>(n);
  }
  return {};
}

Expected<void> pwrite_all(int fd, const Patch& p) {
  size_t done = 0;
  while (done < p.bytes.size()) {
    ssize_t n = ::pwrite(fd, p.bytes.data() + done, p.bytes.size() - done,
                         static_cast<off_t>(p.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(std::string("writing the slimmed file: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

void release_map(Bytes file, uint64_t offset, uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page, end = std::min<uint64_t>(file.size(), offset + size);
  if (end <= begin) return;
  ::madvise(const_cast<std::byte*>(file.data()) + begin, end - begin, MADV_DONTNEED);
}

std::vector<ByteRange> zero_runs_minus(std::vector<ByteRange> runs, std::vector<Patch> patches) {
  std::sort(patches.begin(), patches.end(),
            [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
  std::vector<ByteRange> out;
  size_t first = 0;
  for (const auto& run : runs) {
    uint64_t at = run.offset;
    const uint64_t end = run.offset + run.size;
    while (first < patches.size() &&
           patches[first].offset + patches[first].bytes.size() <= run.offset)
      ++first;
    for (size_t i = first; i < patches.size() && patches[i].offset < end; ++i) {
      const uint64_t lo = patches[i].offset, hi = lo + patches[i].bytes.size();
      if (hi <= at) continue;
      if (lo > at) out.push_back({at, lo - at});
      at = std::max(at, hi);
    }
    if (end > at) out.push_back({at, end - at});
  }
  std::erase_if(out, [](const ByteRange& r) { return r.size < Writer::k_min_zero_run; });
  return out;
}

}  // namespace tailor::slim::surgery
