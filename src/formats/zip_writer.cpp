#include "formats/zip_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>

#include "formats/zip.h"

namespace tailor::formats {

namespace {

constexpr uint32_t k_sig_local = 0x04034b50;
constexpr uint32_t k_sig_central = 0x02014b50;
constexpr uint32_t k_sig_eocd = 0x06054b50;
constexpr uint32_t k_sig_zip64_eocd = 0x06064b50;
constexpr uint32_t k_sig_zip64_locator = 0x07064b50;
constexpr uint16_t k_made_by = (3 << 8) | 45;  // Unix, APPNOTE 4.5 (zip64)
constexpr uint16_t k_needs_plain = 20, k_needs_zip64 = 45;
constexpr uint16_t k_flag_utf8 = 0x0800;
constexpr uint32_t k_max32 = 0xffffffff;
constexpr uint16_t k_max16 = 0xffff;
constexpr size_t k_chunk = 1 << 20;
constexpr size_t k_buffer = 1 << 20;
constexpr size_t k_deflate_out = 256 << 10;

void put16(std::vector<std::byte>& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(std::byte(v >> (8 * i)));
}
void put32(std::vector<std::byte>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(std::byte(v >> (8 * i)));
}
void put64(std::vector<std::byte>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(std::byte(v >> (8 * i)));
}
void put_text(std::vector<std::byte>& out, std::string_view s) {
  for (char c : s) out.push_back(std::byte(static_cast<unsigned char>(c)));
}
void set32(std::vector<std::byte>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = std::byte(v >> (8 * i));
}
void set64(std::vector<std::byte>& out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = std::byte(v >> (8 * i));
}

// The most deflate can make of `n` bytes (zlib's compressBound): a member whose bound
// reaches 4 GiB gets zip64 sizes in its local header before its data is written.
uint64_t deflate_bound(uint64_t n) { return n + (n >> 12) + (n >> 14) + (n >> 25) + 13; }

std::string name_problem(std::string_view name) {
  if (name.empty()) return "empty name";
  if (name.size() > k_max16) return "name longer than 65535 bytes";
  if (name.find('\0') != std::string_view::npos) return "NUL in name";
  if (name.find('\\') != std::string_view::npos) return "backslash in name";
  if (name.front() == '/') return "absolute path";
  if (name.back() == '/') return "directory entries are not written";
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    if (part.empty()) return "empty path component";
    if (part == "." || part == "..") return "'.' or '..' in path";
    start = end + 1;
  }
  return {};
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

uint32_t dos_date_time(int64_t t) {
  // 2107-12-31T23:59:58Z, the last time DOS fields hold.
  constexpr int64_t k_latest = 4354819198;
  t = std::clamp<int64_t>(t, k_zip_earliest_time, k_latest);
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  uint32_t date =
      uint32_t(tm.tm_year + 1900 - 1980) << 9 | uint32_t(tm.tm_mon + 1) << 5 | uint32_t(tm.tm_mday);
  uint32_t time = uint32_t(tm.tm_hour) << 11 | uint32_t(tm.tm_min) << 5 | uint32_t(tm.tm_sec / 2);
  return date << 16 | time;
}

std::string zip_writer_compressor(const ZipWriteOptions& options) {
  if (options.level == 0) return "stored";
  return fmt::format("zlib {}, level {}", zlibVersion(), options.level);
}

Expected<ZipWriter> ZipWriter::create(const std::string& path, const ZipWriteOptions& options) {
  if (options.level < 0 || options.level > 9)
    return make_error(fmt::format("{}: zip compression level {} is not 0..9", path, options.level));
  TAILOR_TRY(file, AtomicFile::beside(path));
  ZipWriter w;
  w.m_path = path;
  w.m_file = std::move(file);
  w.m_options = options;
  uint32_t dt = dos_date_time(options.mtime);
  w.m_dos_date = static_cast<uint16_t>(dt >> 16);
  w.m_dos_time = static_cast<uint16_t>(dt & 0xffff);
  w.m_buffer.reserve(k_buffer);
  return w;
}

ZipWriter::ZipWriter(ZipWriter&& o) noexcept
    : m_path(std::move(o.m_path)),
      m_file(std::move(o.m_file)),
      m_options(o.m_options),
      m_dos_time(o.m_dos_time),
      m_dos_date(o.m_dos_date),
      m_offset(o.m_offset),
      m_buffer(std::move(o.m_buffer)),
      m_central(std::move(o.m_central)),
      m_names(std::move(o.m_names)),
      m_deflated(std::move(o.m_deflated)),
      m_failed(o.m_failed),
      m_committed(o.m_committed) {
  o.m_committed = true;
}

ZipWriter::~ZipWriter() { discard(); }

void ZipWriter::discard() { m_file = AtomicFile(); }

Expected<void> ZipWriter::fail(Error error) {
  m_failed = true;
  discard();
  return error;
}

Expected<void> ZipWriter::flush() {
  size_t done = 0;
  while (done < m_buffer.size()) {
    ssize_t n = ::write(m_file.fd(), m_buffer.data() + done, m_buffer.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error(fmt::format("{}: write failed: {}", m_file.path(), errno_text(errno)));
    done += static_cast<size_t>(n);
  }
  m_buffer.clear();
  return {};
}

Expected<void> ZipWriter::write_bytes(Bytes bytes) {
  m_offset += bytes.size();
  while (!bytes.empty()) {
    size_t room = k_buffer - m_buffer.size();
    size_t n = std::min(room, bytes.size());
    m_buffer.insert(m_buffer.end(), bytes.begin(), bytes.begin() + n);
    bytes = bytes.subspan(n);
    if (m_buffer.size() == k_buffer)
      if (auto r = flush(); !r) return r;
  }
  return {};
}

namespace {

// A member's source opened (a file: regular, its size read once), and its size, which
// decides zip64 in the local header before the data is written.
Expected<uint64_t> open_source(const ZipWriteEntry& entry, Fd& file) {
  if (const auto* text = std::get_if<std::string>(&entry.source))
    return static_cast<uint64_t>(text->size());
  if (const auto* f = std::get_if<ZipFileSource>(&entry.source)) {
    file.fd = ::open(f->path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (file.fd < 0 || ::fstat(file.fd, &st) != 0)
      return make_error(fmt::format("{}: cannot read: {}", f->path, errno_text(errno)));
    if (!S_ISREG(st.st_mode)) return make_error(fmt::format("{}: not a regular file", f->path));
    return static_cast<uint64_t>(st.st_size);
  }
  return std::get<ZipStreamSource>(entry.source).size;
}

// A local file header with its CRC and sizes left zero, and where they go.
struct LocalHeader {
  std::vector<std::byte> bytes;
  size_t crc_at = 0;    ///< CRC-32, then the 32-bit compressed size and size
  size_t zip64_at = 0;  ///< the zip64 extra field (its sizes 4 bytes in), when zip64_sizes
};

LocalHeader local_header(const std::string& name, bool zip64_sizes, uint16_t flags, uint16_t method,
                         uint16_t dos_time, uint16_t dos_date) {
  LocalHeader h;
  auto& local = h.bytes;
  put32(local, k_sig_local);
  put16(local, zip64_sizes ? k_needs_zip64 : k_needs_plain);
  put16(local, flags);
  put16(local, method);
  put16(local, dos_time);
  put16(local, dos_date);
  h.crc_at = local.size();
  put32(local, 0);                          // CRC-32, patched after the data
  put32(local, zip64_sizes ? k_max32 : 0);  // compressed size
  put32(local, zip64_sizes ? k_max32 : 0);  // size
  put16(local, static_cast<uint16_t>(name.size()));
  put16(local, zip64_sizes ? 20 : 0);
  put_text(local, name);
  h.zip64_at = local.size();
  if (zip64_sizes) {
    put16(local, 0x0001);
    put16(local, 16);
    put64(local, 0);
    put64(local, 0);
  }
  return h;
}

// One member's data as it comes: CRC-32 and SHA-256 of the plain bytes, deflated (or
// stored) into `write`, never more than the size announced. The first error sticks.
class MemberSink {
 public:
  MemberSink(const std::string& name, uint64_t size, bool stored, std::vector<std::byte>& deflated,
             std::function<Expected<void>(Bytes)> write)
      : m_name(name),
        m_size(size),
        m_stored(stored),
        m_deflated(deflated),
        m_write(std::move(write)) {}
  ~MemberSink() {
    if (m_started) deflateEnd(&m_zs);
  }
  MemberSink(const MemberSink&) = delete;
  MemberSink& operator=(const MemberSink&) = delete;

  Expected<void> start(int level, const std::string& archive) {
    if (m_stored) return {};
    if (deflateInit2(&m_zs, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return make_error(fmt::format("{}: zlib could not start", archive));
    m_started = true;
    if (m_deflated.empty()) m_deflated.resize(k_deflate_out);
    return {};
  }

  void feed(Bytes chunk, bool last) {
    if (!m_error) return;
    m_fed += chunk.size();
    if (m_fed > m_size) {
      m_error =
          make_error(fmt::format("member '{}': more than the {} bytes announced", m_name, m_size));
      return;
    }
    // libdeflate's CRC of a null buffer is the initial value, not `crc` unchanged.
    if (!chunk.empty()) {
      m_crc = zip_crc32(m_crc, chunk);
      m_sha.update(chunk);
    }
    if (m_stored) {
      m_written += chunk.size();
      m_error = m_write(chunk);
      return;
    }
    do {
      size_t n = std::min(chunk.size(), k_chunk);
      m_zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(chunk.data()));
      m_zs.avail_in = static_cast<uInt>(n);
      bool finish = last && n == chunk.size();
      int rc;
      do {
        m_zs.next_out = reinterpret_cast<Bytef*>(m_deflated.data());
        m_zs.avail_out = static_cast<uInt>(m_deflated.size());
        rc = deflate(&m_zs, finish ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR) {
          m_error = make_error(fmt::format("member '{}': zlib failed", m_name));
          return;
        }
        size_t produced = m_deflated.size() - m_zs.avail_out;
        m_written += produced;
        if (produced)
          if (auto r = m_write(Bytes(m_deflated.data(), produced)); !r) {
            m_error = r;
            return;
          }
      } while (m_zs.avail_out == 0 || (finish && rc != Z_STREAM_END));
      chunk = chunk.subspan(n);
    } while (!chunk.empty());
  }

  // The member's end: the size given checked against the size announced, deflate finished.
  Expected<void> finish() {
    if (m_error && m_fed != m_size)
      m_error = make_error(
          fmt::format("member '{}': {} bytes announced, {} given", m_name, m_size, m_fed));
    if (m_error && !m_stored) feed(Bytes(), true);
    return m_error;
  }

  Expected<void>& error() { return m_error; }
  uint64_t fed() const { return m_fed; }
  uint64_t written() const { return m_written; }
  uint32_t crc() const { return m_crc; }
  Sha256& sha() { return m_sha; }

 private:
  const std::string& m_name;
  uint64_t m_size;
  bool m_stored;
  std::vector<std::byte>& m_deflated;
  std::function<Expected<void>(Bytes)> m_write;
  z_stream m_zs{};
  bool m_started = false;
  Sha256 m_sha;
  uint32_t m_crc = 0;
  uint64_t m_fed = 0, m_written = 0;
  Expected<void> m_error;
};

// Feeds the member's bytes from its source: text in chunks, a file read to its end (its
// size must not change), or the producer's chunks.
void stream_source(const ZipWriteEntry& entry, const Fd& file, uint64_t size, MemberSink& sink) {
  if (const auto* text = std::get_if<std::string>(&entry.source)) {
    Bytes all(reinterpret_cast<const std::byte*>(text->data()), text->size());
    for (size_t at = 0; at < all.size(); at += k_chunk)
      sink.feed(all.subspan(at, std::min(k_chunk, all.size() - at)), false);
  } else if (file.fd >= 0) {
    std::vector<std::byte> chunk(k_chunk);
    const std::string& path = std::get<ZipFileSource>(entry.source).path;
    while (sink.error()) {
      ssize_t n = ::read(file.fd, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        sink.error() = make_error(fmt::format("{}: read failed: {}", path, errno_text(errno)));
        break;
      }
      if (n == 0) break;
      sink.feed(Bytes(chunk.data(), static_cast<size_t>(n)), false);
    }
    if (sink.error() && sink.fed() != size)
      sink.error() = make_error(fmt::format("{}: changed while being written ({} bytes, then {})",
                                            path, size, sink.fed()));
  } else {
    const auto& producer = std::get<ZipStreamSource>(entry.source);
    if (!producer.produce) {
      sink.error() = make_error(fmt::format("member '{}': no producer", entry.name));
    } else if (auto r = producer.produce([&](Bytes chunk) { sink.feed(chunk, false); });
               !r && sink.error()) {
      sink.error() = r;
    }
  }
}

}  // namespace

Expected<ZipWrittenMember> ZipWriter::add(const ZipWriteEntry& entry) {
  if (auto r = check_name(entry.name); !r) return r.error();
  Fd file;
  auto opened = open_source(entry, file);
  if (!opened) {
    fail(opened.error());
    return opened.error();
  }
  const uint64_t size = *opened;

  const bool stored = m_options.level == 0;
  const uint64_t header_offset = m_offset;
  const bool zip64_sizes =
      m_options.force_zip64 || (stored ? size : deflate_bound(size)) >= k_max32;
  const bool zip64_offset = m_options.force_zip64 || header_offset >= k_max32;
  const uint16_t flags = is_ascii(entry.name) ? 0 : k_flag_utf8;
  const uint16_t method = stored ? k_zip_stored : k_zip_deflated;
  const LocalHeader local =
      local_header(entry.name, zip64_sizes, flags, method, m_dos_time, m_dos_date);
  if (auto r = write_bytes(local.bytes); !r) {
    fail(r.error());
    return r.error();
  }

  MemberSink sink(entry.name, size, stored, m_deflated, [this](Bytes b) { return write_bytes(b); });
  if (auto r = sink.start(m_options.level, m_path); !r) {
    fail(r.error());
    return r.error();
  }
  stream_source(entry, file, size, sink);
  if (auto r = sink.finish(); !r) {
    Error e = r.error();
    e.message = fmt::format("{}: {}", m_path, e.message);
    fail(e);
    return e;
  }
  ZipWrittenMember out;
  out.name = entry.name;
  out.size = size;
  out.compressed_size = sink.written();
  out.crc32 = sink.crc();
  out.sha256 = sink.sha().finish();

  // Patch CRC and sizes into the local header (already on disk or still buffered).
  std::vector<std::byte> patch(12);
  set32(patch, 0, out.crc32);
  set32(patch, 4, zip64_sizes ? k_max32 : static_cast<uint32_t>(out.compressed_size));
  set32(patch, 8, zip64_sizes ? k_max32 : static_cast<uint32_t>(size));
  TAILOR_TRY_VOID(patch_written(header_offset + local.crc_at, patch));
  if (zip64_sizes) {
    std::vector<std::byte> patch64(16);
    set64(patch64, 0, size);
    set64(patch64, 8, out.compressed_size);
    TAILOR_TRY_VOID(patch_written(header_offset + local.zip64_at + 4, patch64));
  }

  // Its central directory record, written at commit().
  add_central(entry.name, flags, method, out.crc32, size, out.compressed_size, header_offset,
              zip64_sizes, zip64_offset, entry.mode);
  return out;
}

Expected<void> ZipWriter::patch_written(uint64_t at, const std::vector<std::byte>& bytes) {
  uint64_t buffered_from = m_offset - m_buffer.size();
  if (at >= buffered_from) {
    std::copy(bytes.begin(), bytes.end(),
              m_buffer.begin() + static_cast<ptrdiff_t>(at - buffered_from));
    return {};
  }
  if (auto r = flush(); !r) {
    fail(r.error());
    return r.error();
  }
  if (::pwrite(m_file.fd(), bytes.data(), bytes.size(), static_cast<off_t>(at)) !=
      static_cast<ssize_t>(bytes.size())) {
    auto e = make_error(fmt::format("{}: write failed: {}", m_file.path(), errno_text(errno)));
    fail(e);
    return e;
  }
  return {};
}

Expected<void> ZipWriter::check_name(const std::string& name) {
  if (m_failed || m_committed || m_file.fd() < 0)
    return make_error(fmt::format("{}: the zip writer is closed", m_path));
  if (auto why = name_problem(name); !why.empty())
    return fail(make_error(fmt::format("{}: member '{}': {}", m_path, name.substr(0, 200), why)));
  if (m_names.count(name))
    return fail(make_error(fmt::format("{}: member '{}' is added twice", m_path, name)));
  return {};
}

void ZipWriter::add_central(const std::string& name, uint16_t flags, uint16_t method, uint32_t crc,
                            uint64_t size, uint64_t written, uint64_t header_offset,
                            bool zip64_sizes, bool zip64_offset, uint32_t mode) {
  std::vector<std::byte> extra;
  if (zip64_sizes || zip64_offset) {
    put16(extra, 0x0001);
    put16(extra, static_cast<uint16_t>((zip64_sizes ? 16 : 0) + (zip64_offset ? 8 : 0)));
    if (zip64_sizes) {
      put64(extra, size);
      put64(extra, written);
    }
    if (zip64_offset) put64(extra, header_offset);
  }
  std::vector<std::byte> central;
  put32(central, k_sig_central);
  put16(central, k_made_by);
  put16(central, zip64_sizes || zip64_offset ? k_needs_zip64 : k_needs_plain);
  put16(central, flags);
  put16(central, method);
  put16(central, m_dos_time);
  put16(central, m_dos_date);
  put32(central, crc);
  put32(central, zip64_sizes ? k_max32 : static_cast<uint32_t>(written));
  put32(central, zip64_sizes ? k_max32 : static_cast<uint32_t>(size));
  put16(central, static_cast<uint16_t>(name.size()));
  put16(central, static_cast<uint16_t>(extra.size()));
  put16(central, 0);                                   // comment
  put16(central, 0);                                   // disk
  put16(central, 0);                                   // internal attributes
  put32(central, (0100000u | (mode & 07777u)) << 16);  // S_IFREG | permissions
  put32(central, zip64_offset ? k_max32 : static_cast<uint32_t>(header_offset));
  put_text(central, name);
  central.insert(central.end(), extra.begin(), extra.end());
  m_central.push_back(std::move(central));
  m_names.insert(name);
}

Expected<ZipWrittenMember> ZipWriter::add_raw(const ZipRawMember& member) {
  if (auto r = check_name(member.name); !r) return r.error();
  if (member.method != k_zip_stored && member.method != k_zip_deflated)
    return fail(make_error(fmt::format("{}: member '{}': compression method {} is not copied",
                                       m_path, member.name, member.method)))
        .error();
  const uint64_t header_offset = m_offset;
  const uint64_t written = member.compressed.size();
  const bool zip64_sizes = m_options.force_zip64 || member.size >= k_max32 || written >= k_max32;
  const bool zip64_offset = m_options.force_zip64 || header_offset >= k_max32;
  const uint16_t flags = is_ascii(member.name) ? 0 : k_flag_utf8;
  std::vector<std::byte> local;
  put32(local, k_sig_local);
  put16(local, zip64_sizes ? k_needs_zip64 : k_needs_plain);
  put16(local, flags);
  put16(local, member.method);
  put16(local, m_dos_time);
  put16(local, m_dos_date);
  put32(local, member.crc32);
  put32(local, zip64_sizes ? k_max32 : static_cast<uint32_t>(written));
  put32(local, zip64_sizes ? k_max32 : static_cast<uint32_t>(member.size));
  put16(local, static_cast<uint16_t>(member.name.size()));
  put16(local, zip64_sizes ? 20 : 0);
  put_text(local, member.name);
  if (zip64_sizes) {
    put16(local, 0x0001);
    put16(local, 16);
    put64(local, member.size);
    put64(local, written);
  }
  if (auto r = write_bytes(local); !r) return fail(r.error()).error();
  if (auto r = write_bytes(member.compressed); !r) return fail(r.error()).error();
  add_central(member.name, flags, member.method, member.crc32, member.size, written, header_offset,
              zip64_sizes, zip64_offset, member.mode);
  ZipWrittenMember out;
  out.name = member.name;
  out.size = member.size;
  out.compressed_size = written;
  out.crc32 = member.crc32;
  return out;
}

Expected<void> ZipWriter::commit() {
  if (m_failed || m_committed || m_file.fd() < 0)
    return make_error(fmt::format("{}: the zip writer is closed", m_path));
  const uint64_t cd_offset = m_offset;
  for (const auto& c : m_central)
    if (auto r = write_bytes(c); !r) return fail(r.error());
  const uint64_t cd_size = m_offset - cd_offset;
  const uint64_t count = m_central.size();
  const bool zip64 =
      m_options.force_zip64 || count >= k_max16 || cd_size >= k_max32 || cd_offset >= k_max32;
  std::vector<std::byte> end;
  if (zip64) {
    const uint64_t z64_offset = m_offset;
    put32(end, k_sig_zip64_eocd);
    put64(end, 44);  // size of the rest of this record
    put16(end, k_made_by);
    put16(end, k_needs_zip64);
    put32(end, 0);  // this disk
    put32(end, 0);  // disk with the central directory
    put64(end, count);
    put64(end, count);
    put64(end, cd_size);
    put64(end, cd_offset);
    put32(end, k_sig_zip64_locator);
    put32(end, 0);
    put64(end, z64_offset);
    put32(end, 1);  // total disks
  }
  put32(end, k_sig_eocd);
  put16(end, 0);
  put16(end, 0);
  put16(end, zip64 ? k_max16 : static_cast<uint16_t>(count));
  put16(end, zip64 ? k_max16 : static_cast<uint16_t>(count));
  put32(end, zip64 ? k_max32 : static_cast<uint32_t>(cd_size));
  put32(end, zip64 ? k_max32 : static_cast<uint32_t>(cd_offset));
  put16(end, 0);  // comment
  if (auto r = write_bytes(end); !r) return fail(r.error());
  if (auto r = flush(); !r) return fail(r.error());
  if (auto r = m_file.commit(0644); !r) return fail(r.error());
  m_committed = true;
  return {};
}

Expected<std::vector<ZipWrittenMember>> write_zip(const std::string& path,
                                                  const std::vector<ZipWriteEntry>& entries,
                                                  const ZipWriteOptions& options) {
  TAILOR_TRY(writer, ZipWriter::create(path, options));
  std::vector<ZipWrittenMember> written;
  written.reserve(entries.size());
  for (const auto& e : entries) {
    TAILOR_TRY(m, writer.add(e));
    written.push_back(std::move(m));
  }
  if (auto r = writer.commit(); !r) return r.error();
  return written;
}

}  // namespace tailor::formats
