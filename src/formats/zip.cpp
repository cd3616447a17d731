#include "formats/zip.h"

#include <fmt/format.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>

namespace tailor::formats {

namespace {

constexpr uint32_t k_sig_eocd = 0x06054b50;
constexpr uint32_t k_sig_zip64_locator = 0x07064b50;
constexpr uint32_t k_sig_zip64_eocd = 0x06064b50;
constexpr uint32_t k_sig_central = 0x02014b50;
constexpr uint32_t k_sig_local = 0x04034b50;
constexpr uint64_t k_eocd_size = 22;
constexpr uint64_t k_central_size = 46;
constexpr uint64_t k_local_size = 30;
constexpr uint16_t k_flag_encrypted = 0x1;

Error zip_error(uint64_t offset, const std::string& what) {
  return make_error(fmt::format("offset 0x{:x}: {}", offset, what));
}

// Shown in errors: printable, bounded, so a hostile name cannot flood the terminal.
std::string printable(std::string_view name) {
  std::string s;
  for (char c : name.substr(0, 200)) {
    auto u = static_cast<unsigned char>(c);
    s += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (name.size() > 200) s += "...";
  return s;
}

// Why a member name is refused, or empty when it is a plain relative path.
std::string unsafe_name_reason(std::string_view name) {
  if (name.empty()) return "empty name";
  if (name.find('\0') != std::string_view::npos) return "NUL in name";
  if (name.find('\\') != std::string_view::npos) return "backslash in name";
  if (name.front() == '/') return "absolute path";
  if (name.size() >= 2 && name[1] == ':') return "drive letter in name";
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return "'..' in path";
    start = end + 1;
  }
  return {};
}

struct EndRecord {
  uint64_t eocd_offset = 0;
  uint64_t entries = 0, cd_size = 0, cd_offset = 0;
  bool zip64 = false;
};

Expected<EndRecord> find_end(Bytes file) {
  if (file.size() < k_eocd_size)
    return zip_error(0,
                     fmt::format("file of {} bytes is too small to be a zip archive", file.size()));
  // The record sits in the last 22 + 65535 bytes (its comment is at most 64 KiB); the last
  // signature whose comment ends exactly at the end of the file wins.
  uint64_t lowest = file.size() > k_eocd_size + 0xffff ? file.size() - k_eocd_size - 0xffff : 0;
  std::optional<uint64_t> found;
  for (uint64_t pos = file.size() - k_eocd_size + 1; pos-- > lowest;) {
    if (read_le<uint32_t>(file, pos) != k_sig_eocd) continue;
    auto comment = read_le<uint16_t>(file, pos + 20);
    if (pos + k_eocd_size + *comment == file.size()) {
      found = pos;
      break;
    }
  }
  if (!found)
    return zip_error(file.size(),
                     "no end of central directory record (not a zip archive, or truncated)");
  uint64_t pos = *found;
  EndRecord end;
  end.eocd_offset = pos;
  uint16_t disk = *read_le<uint16_t>(file, pos + 4), cd_disk = *read_le<uint16_t>(file, pos + 6);
  uint16_t n_disk = *read_le<uint16_t>(file, pos + 8), n_total = *read_le<uint16_t>(file, pos + 10);
  uint32_t cd_size = *read_le<uint32_t>(file, pos + 12),
           cd_offset = *read_le<uint32_t>(file, pos + 16);
  end.entries = n_total;
  end.cd_size = cd_size;
  end.cd_offset = cd_offset;
  bool wants_zip64 = n_total == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff;
  auto loc_sig = pos >= 20 ? read_le<uint32_t>(file, pos - 20) : std::nullopt;
  if (loc_sig == k_sig_zip64_locator) {
    uint64_t loc = pos - 20;
    uint64_t z64 = *read_le<uint64_t>(file, loc + 8);
    uint32_t total_disks = *read_le<uint32_t>(file, loc + 16);
    if (total_disks > 1) return zip_error(loc, "multi-disk archives are not supported");
    if (read_le<uint32_t>(file, z64) != k_sig_zip64_eocd || !read_le<uint64_t>(file, z64 + 48))
      return zip_error(
          loc,
          fmt::format("zip64 end record offset 0x{:x} does not point at a zip64 end record", z64));
    if (*read_le<uint32_t>(file, z64 + 16) != 0 || *read_le<uint32_t>(file, z64 + 20) != 0)
      return zip_error(z64, "multi-disk archives are not supported");
    end.entries = *read_le<uint64_t>(file, z64 + 32);
    end.cd_size = *read_le<uint64_t>(file, z64 + 40);
    end.cd_offset = *read_le<uint64_t>(file, z64 + 48);
    end.zip64 = true;
    if (*read_le<uint64_t>(file, z64 + 24) != end.entries)
      return zip_error(z64, "multi-disk archives are not supported");
  } else if (wants_zip64) {
    return zip_error(pos, "end record needs zip64 but there is no zip64 locator");
  } else if (disk != 0 || cd_disk != 0 || n_disk != n_total) {
    return zip_error(pos, "multi-disk archives are not supported");
  }
  auto cd_end = checked_add(end.cd_offset, end.cd_size);
  uint64_t limit = end.zip64 ? pos - 20 : pos;
  if (!cd_end || *cd_end > limit)
    return zip_error(
        pos, fmt::format(
                 "central directory (offset 0x{:x}, {} bytes) runs past its end record at 0x{:x}",
                 end.cd_offset, end.cd_size, limit));
  return end;
}

// Applies the zip64 extended information extra field (id 1) to the fields the central
// record marked with all-ones.
Expected<void> apply_zip64_extra(Bytes extra, uint64_t record_offset, ZipEntry& e, bool need_usize,
                                 bool need_csize, bool need_offset) {
  uint64_t pos = 0;
  while (pos + 4 <= extra.size()) {
    uint16_t id = *read_le<uint16_t>(extra, pos);
    uint16_t len = *read_le<uint16_t>(extra, pos + 2);
    auto body = strict_substr(extra, pos + 4, len);
    if (!body) return zip_error(record_offset, "extra field runs past the record");
    if (id == 0x0001) {
      uint64_t at = 0;
      auto take = [&](uint64_t& out) -> bool {
        auto v = read_le<uint64_t>(*body, at);
        if (!v) return false;
        out = *v;
        at += 8;
        return true;
      };
      if ((need_usize && !take(e.uncompressed_size)) || (need_csize && !take(e.compressed_size)) ||
          (need_offset && !take(e.local_header_offset)))
        return zip_error(record_offset, "zip64 extra field is too short");
      return {};
    }
    pos += 4 + len;
  }
  if (need_usize || need_csize || need_offset)
    return zip_error(record_offset, "sizes need zip64 but the entry has no zip64 extra field");
  return {};
}

Error member_error(const ZipEntry& e, const std::string& what) {
  return zip_error(e.local_header_offset, fmt::format("member '{}': {}", printable(e.name), what));
}

Expected<void> check_ratio(const ZipEntry& e, const ZipLimits& limits) {
  if (e.uncompressed_size > limits.max_member_bytes)
    return member_error(e, fmt::format("declared size {} exceeds the limit of {} bytes",
                                       e.uncompressed_size, limits.max_member_bytes));
  if (e.method == k_zip_deflated && e.uncompressed_size > limits.ratio_floor_bytes &&
      e.uncompressed_size / std::max<uint64_t>(e.compressed_size, 1) > limits.max_ratio)
    return member_error(
        e, fmt::format("expands {} bytes to {} (ratio {}:1): refused as a zip bomb",
                       e.compressed_size, e.uncompressed_size,
                       e.uncompressed_size / std::max<uint64_t>(e.compressed_size, 1)));
  return {};
}

}  // namespace

uint32_t zip_crc32(uint32_t crc, Bytes bytes) {
  return libdeflate_crc32(crc, bytes.data(), bytes.size());
}

namespace {
// A central directory record's fields that are taken as they are (its size is checked).
void read_central_fields(Bytes cd, uint64_t pos, ZipEntry& e) {
  e.flags = *read_le<uint16_t>(cd, pos + 8);
  e.method = *read_le<uint16_t>(cd, pos + 10);
  e.dos_time = *read_le<uint16_t>(cd, pos + 12);
  e.dos_date = *read_le<uint16_t>(cd, pos + 14);
  e.crc32 = *read_le<uint32_t>(cd, pos + 16);
}
}  // namespace

Expected<ZipArchive> parse_zip(Bytes file, const ZipLimits& limits,
                               const ConsumedRange& local_header_read) {
  TAILOR_TRY(end, find_end(file));
  if (end.entries > limits.max_entries)
    return zip_error(
        end.eocd_offset,
        fmt::format(
            "{} entries exceed the limit of {} (the largest real wheels have tens of thousands)",
            end.entries, limits.max_entries));
  if (end.entries > end.cd_size / k_central_size)
    return zip_error(end.eocd_offset,
                     fmt::format("{} entries cannot fit in a central directory of {} bytes",
                                 end.entries, end.cd_size));
  ZipArchive archive{{}, end.cd_offset, end.zip64};
  uint64_t total_declared = 0;
  archive.entries.reserve(end.entries);
  Bytes cd = *strict_substr(file, end.cd_offset, end.cd_size);
  std::unordered_set<std::string> names;
  uint64_t pos = 0;
  for (uint64_t i = 0; i < end.entries; ++i) {
    uint64_t at = end.cd_offset + pos;
    if (read_le<uint32_t>(cd, pos) != k_sig_central || !strict_substr(cd, pos, k_central_size))
      return zip_error(at, fmt::format("central directory entry {} has no valid signature", i));
    ZipEntry e;
    e.central_offset = at;
    read_central_fields(cd, pos, e);
    uint32_t csize = *read_le<uint32_t>(cd, pos + 20), usize = *read_le<uint32_t>(cd, pos + 24);
    uint16_t name_len = *read_le<uint16_t>(cd, pos + 28),
             extra_len = *read_le<uint16_t>(cd, pos + 30),
             comment_len = *read_le<uint16_t>(cd, pos + 32);
    uint32_t offset = *read_le<uint32_t>(cd, pos + 42);
    auto name = strict_substr(cd, pos + k_central_size, name_len);
    auto extra = strict_substr(cd, pos + k_central_size + name_len, extra_len);
    if (!name || !extra ||
        !strict_substr(cd, pos + k_central_size + name_len + extra_len, comment_len))
      return zip_error(at, fmt::format("central directory entry {} runs past the directory", i));
    e.name = std::string(as_chars(*name));
    e.compressed_size = csize;
    e.uncompressed_size = usize;
    e.local_header_offset = offset;
    if (auto r = apply_zip64_extra(*extra, at, e, usize == 0xffffffff, csize == 0xffffffff,
                                   offset == 0xffffffff);
        !r)
      return r.error();
    if (auto why = unsafe_name_reason(e.name); !why.empty())
      return zip_error(at, fmt::format("entry '{}': {}", printable(e.name), why));
    if (!names.insert(e.name).second)
      return zip_error(at, fmt::format("entry '{}' appears twice", printable(e.name)));
    if (e.flags & k_flag_encrypted)
      return zip_error(at, fmt::format("entry '{}' is encrypted", printable(e.name)));
    if (e.method != k_zip_stored && e.method != k_zip_deflated)
      return zip_error(
          at, fmt::format(
                  "entry '{}' uses compression method {} (only stored and deflate are supported)",
                  printable(e.name), e.method));
    if (e.method == k_zip_stored && e.compressed_size != e.uncompressed_size)
      return zip_error(at, fmt::format("stored entry '{}' has compressed size {} but size {}",
                                       printable(e.name), e.compressed_size, e.uncompressed_size));
    // The local header repeats the name; the data follows it and must end before the
    // central directory.
    uint64_t lh = e.local_header_offset;
    if (read_le<uint32_t>(file, lh) != k_sig_local || !strict_substr(file, lh, k_local_size) ||
        lh >= end.cd_offset)
      return zip_error(
          at, fmt::format("entry '{}': local header offset 0x{:x} does not point at a local header",
                          printable(e.name), lh));
    uint16_t l_name_len = *read_le<uint16_t>(file, lh + 26),
             l_extra_len = *read_le<uint16_t>(file, lh + 28);
    auto l_name = strict_substr(file, lh + k_local_size, l_name_len);
    if (!l_name || as_chars(*l_name) != e.name)
      return zip_error(lh,
                       fmt::format("local header name differs from the central directory's '{}'",
                                   printable(e.name)));
    e.data_offset = lh + k_local_size + l_name_len + l_extra_len;
    if (local_header_read) local_header_read(lh, e.data_offset - lh);
    auto data_end = checked_add(e.data_offset, e.compressed_size);
    if (!data_end || *data_end > end.cd_offset)
      return zip_error(
          lh, fmt::format(
                  "member '{}' ({} bytes at 0x{:x}) runs past the start of the central directory",
                  printable(e.name), e.compressed_size, e.data_offset));
    if (auto r = check_ratio(e, limits); !r) return r.error();
    // The inflate budget, checked as the directory is read so that nothing is inflated
    // before the whole archive is known to fit it.
    total_declared += e.uncompressed_size;  // each is at most max_member_bytes: no overflow
    if (total_declared > limits.max_total_bytes)
      return zip_error(
          at, fmt::format("members declare more than {} bytes in all (the inflate budget); "
                          "refused before inflating anything",
                          limits.max_total_bytes));
    archive.entries.push_back(std::move(e));
    pos += k_central_size + name_len + extra_len + comment_len;
  }
  if (total_declared > limits.total_ratio_floor_bytes &&
      total_declared / std::max<uint64_t>(file.size(), 1) > limits.max_total_ratio)
    return zip_error(
        end.eocd_offset,
        fmt::format(
            "members declare {} bytes in all, {} times the archive's {} bytes (limit {}:1): "
            "refused as a zip bomb before inflating anything",
            total_declared, total_declared / std::max<uint64_t>(file.size(), 1), file.size(),
            limits.max_total_ratio));
  // Members must not share bytes: overlapping members are how "non-recursive" zip bombs
  // multiply one compressed stream many times.
  std::vector<const ZipEntry*> by_offset;
  for (const auto& e : archive.entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->local_header_offset < b->local_header_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const ZipEntry& prev = *by_offset[i - 1];
    if (by_offset[i]->local_header_offset < prev.data_offset + prev.compressed_size)
      return zip_error(by_offset[i]->local_header_offset,
                       fmt::format("member '{}' overlaps member '{}'",
                                   printable(by_offset[i]->name), printable(prev.name)));
  }
  return archive;
}

Expected<Bytes> extract_member(Bytes file, const ZipEntry& e, std::vector<std::byte>& buffer,
                               const ZipLimits& limits) {
  if (auto r = check_ratio(e, limits); !r) return r.error();
  auto raw = strict_substr(file, e.data_offset, e.compressed_size);
  if (!raw) return member_error(e, "data runs past the end of the file");
  Bytes out;
  if (e.method == k_zip_stored) {
    out = *raw;
  } else {
    buffer.resize(e.uncompressed_size);
    struct Free {
      void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
    };
    thread_local std::unique_ptr<libdeflate_decompressor, Free> d{libdeflate_alloc_decompressor()};
    size_t in_used = 0, produced = 0;
    auto rc = libdeflate_deflate_decompress_ex(d.get(), raw->data(), raw->size(), buffer.data(),
                                               buffer.size(), &in_used, &produced);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE)
      return member_error(
          e, fmt::format("inflates past its declared size of {} bytes", e.uncompressed_size));
    if (rc != LIBDEFLATE_SUCCESS) return member_error(e, "corrupt deflate data");
    if (produced != e.uncompressed_size)
      return member_error(
          e, fmt::format("inflates to {} bytes, declared {}", produced, e.uncompressed_size));
    out = Bytes(buffer.data(), produced);
  }
  if (out.size() != e.uncompressed_size)
    return member_error(e,
                        fmt::format("has {} bytes, declared {}", out.size(), e.uncompressed_size));
  if (uint32_t crc = zip_crc32(0, out); crc != e.crc32)
    return member_error(e, fmt::format("CRC-32 is {:08x}, declared {:08x}", crc, e.crc32));
  return out;
}

namespace {

// Hands consumed input back in batches of 8 MiB: one madvise per chunk would cost more
// than it saves.
class ConsumedBatcher {
 public:
  ConsumedBatcher(uint64_t start, ConsumedRange consumed)
      : m_from(start), m_consumed(std::move(consumed)) {}
  void advance_to(uint64_t offset, bool final = false) {
    if (!m_consumed || offset <= m_from) return;
    if (final || offset - m_from >= (uint64_t{8} << 20)) {
      m_consumed(m_from, offset - m_from);
      m_from = offset;
    }
  }

 private:
  uint64_t m_from;
  ConsumedRange m_consumed;
};

// Inflates `raw` (raw deflate) to `sink` in chunks until the stream ends or `sink` says
// stop; `total` counts the bytes produced. The output may not pass `limit` bytes.
// The streaming inflater is Intel ISA-L's igzip: zlib's inflate runs at about half the
// speed of libdeflate, igzip about as fast, and it streams (libdeflate does not).
template <class Sink>
Expected<void> inflate_chunks(const ZipEntry& e, Bytes raw, uint64_t limit,
                              ConsumedBatcher& batcher, uint64_t& total, Sink&& sink) {
  // The state holds igzip's 64 KiB history and its Huffman tables: one per thread,
  // reset per member, like the output chunk.
  thread_local std::unique_ptr<inflate_state> state = std::make_unique<inflate_state>();
  thread_local std::vector<std::byte> chunk(k_zip_stream_chunk);
  inflate_state& st = *state;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_DEFLATE;  // raw deflate; the CRC-32 is computed by the caller
  constexpr uint64_t k_feed = uint64_t{1} << 20;  // input fed 1 MiB at a time
  uint64_t fed = 0;
  while (st.block_state != ISAL_BLOCK_FINISH) {
    if (st.avail_in == 0 && fed < raw.size()) {
      batcher.advance_to(e.data_offset + fed);
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(raw.size() - fed, k_feed));
      st.next_in = reinterpret_cast<uint8_t*>(const_cast<std::byte*>(raw.data() + fed));
      st.avail_in = n;
      fed += n;
    }
    const uint32_t in_before = st.avail_in;
    st.next_out = reinterpret_cast<uint8_t*>(chunk.data());
    st.avail_out = static_cast<uint32_t>(chunk.size());
    int rc = isal_inflate(&st);
    if (rc < 0) return member_error(e, fmt::format("corrupt deflate data (igzip error {})", rc));
    size_t produced = chunk.size() - st.avail_out;
    total += produced;
    if (total > limit)
      return member_error(
          e, fmt::format("inflates past its declared size of {} bytes", e.uncompressed_size));
    if (produced > 0 && !sink(Bytes(chunk.data(), produced))) return {};
    if (produced == 0 && st.block_state != ISAL_BLOCK_FINISH &&
        ((st.avail_in == 0 && fed >= raw.size()) || st.avail_in == in_before))
      return member_error(e, "deflate data ends early");
  }
  return {};
}

}  // namespace

Expected<void> stream_member(Bytes file, const ZipEntry& e, const std::function<void(Bytes)>& sink,
                             const ZipLimits& limits, const ConsumedRange& consumed) {
  if (auto r = check_ratio(e, limits); !r) return r.error();
  auto raw = strict_substr(file, e.data_offset, e.compressed_size);
  if (!raw) return member_error(e, "data runs past the end of the file");
  ConsumedBatcher batcher(e.data_offset, consumed);
  uint32_t crc = 0;
  uint64_t total = 0;
  if (e.method == k_zip_stored) {
    for (size_t at = 0; at < raw->size(); at += k_zip_stream_chunk) {
      batcher.advance_to(e.data_offset + at);
      Bytes piece = raw->subspan(at, std::min(k_zip_stream_chunk, raw->size() - at));
      crc = zip_crc32(crc, piece);
      sink(piece);
    }
    total = raw->size();
  } else {
    auto r = inflate_chunks(e, *raw, e.uncompressed_size, batcher, total, [&](Bytes piece) {
      crc = zip_crc32(crc, piece);
      sink(piece);
      return true;
    });
    if (!r) return r.error();
  }
  batcher.advance_to(e.data_offset + raw->size(), true);
  if (total != e.uncompressed_size)
    return member_error(
        e, fmt::format("inflates to {} bytes, declared {}", total, e.uncompressed_size));
  if (crc != e.crc32)
    return member_error(e, fmt::format("CRC-32 is {:08x}, declared {:08x}", crc, e.crc32));
  return {};
}

Expected<std::string> peek_member(Bytes file, const ZipEntry& e, size_t max_bytes,
                                  const ZipLimits& limits) {
  if (auto r = check_ratio(e, limits); !r) return r.error();
  auto raw = strict_substr(file, e.data_offset, e.compressed_size);
  if (!raw) return member_error(e, "data runs past the end of the file");
  std::string out;
  if (e.method == k_zip_stored)
    return std::string(as_chars(raw->first(std::min<uint64_t>(raw->size(), max_bytes))));
  ConsumedBatcher batcher(e.data_offset, nullptr);
  uint64_t total = 0;
  auto r = inflate_chunks(e, *raw, e.uncompressed_size, batcher, total, [&](Bytes piece) {
    out.append(as_chars(piece.first(std::min<size_t>(piece.size(), max_bytes - out.size()))));
    return out.size() < max_bytes;
  });
  if (!r) return r.error();
  return out;
}

uint32_t normal_mode(Bytes file, const ZipEntry& e) {
  constexpr uint8_t k_host_unix = 3;
  auto made_by = read_le<uint16_t>(file, e.central_offset + 4);
  auto attributes = read_le<uint32_t>(file, e.central_offset + 38);
  if (!made_by || !attributes || (*made_by >> 8) != k_host_unix) return 0644;
  return ((*attributes >> 16) & 0111) ? 0755 : 0644;
}

}  // namespace tailor::formats
