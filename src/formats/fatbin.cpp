#include "formats/fatbin.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>

#include "util/strings.h"

namespace tailor::formats {
namespace {

constexpr uint32_t k_container_magic = 0xBA55ED50;
constexpr uint64_t k_container_header = 16;
constexpr uint64_t k_min_entry_header = 64;
constexpr uint64_t k_flag_old_compression = 0x1000;
constexpr uint64_t k_flag_lz4 = 0x2000;
constexpr uint64_t k_flag_zstd = 0x8000;
constexpr uint64_t k_flag_arch_specific = 0x100000;
constexpr uint64_t k_flag_family = 0x200000;
// Bounds on what one container may make us keep (every entry may name the same long
// identifier): an identifier is cut to k_max_identifier bytes; more than k_max_entries
// entries or k_max_identifier_bytes of identifiers in one container is an error. Real
// containers hold tens of entries whose identifiers are source file names.
constexpr uint64_t k_max_identifier = 4096;
constexpr uint64_t k_max_entries = 65536;
constexpr uint64_t k_max_identifier_bytes = 1u << 20;

FatbinCompression compression_of(uint64_t flags) {
  if (flags & k_flag_zstd) return FatbinCompression::zstd;
  if (flags & k_flag_lz4) return FatbinCompression::lz4;
  if (flags & k_flag_old_compression) return FatbinCompression::unknown;
  return FatbinCompression::none;
}

bool all_zero(Bytes b) {
  for (std::byte x : b)
    if (x != std::byte{0}) return false;
  return true;
}

// One entry header at `pos` (section-relative) inside a container ending at `end`.
Expected<FatbinEntry> read_entry(Bytes section, uint64_t base, uint64_t pos, uint64_t end) {
  const uint64_t at = base + pos;
  if (end - pos < k_min_entry_header)
    return make_error("fatbin entry at " + hex_number(at) + " has " + hex_number(end - pos) +
                      " bytes left in its container, less than a 64-byte header");
  FatbinEntry e;
  e.kind = *read_le<uint16_t>(section, pos);
  e.header_size = *read_le<uint32_t>(section, pos + 0x04);
  e.stored_size = *read_le<uint64_t>(section, pos + 0x08);
  e.compressed_size = *read_le<uint32_t>(section, pos + 0x10);
  e.arch = *read_le<uint32_t>(section, pos + 0x1c);
  const uint32_t name_offset = *read_le<uint32_t>(section, pos + 0x20);
  const uint32_t name_length = *read_le<uint32_t>(section, pos + 0x24);
  e.flags = *read_le<uint64_t>(section, pos + 0x28);
  const uint64_t uncompressed = *read_le<uint64_t>(section, pos + 0x38);
  e.header_offset = at;
  if (e.header_size < k_min_entry_header || e.header_size > end - pos)
    return make_error("fatbin entry at " + hex_number(at) + ": header size " +
                      hex_number(e.header_size) + " is below 64 or runs past its container (end " +
                      hex_number(base + end) + ")");
  if (e.stored_size > end - pos - e.header_size)
    return make_error("fatbin entry at " + hex_number(at) + ": payload size " +
                      hex_number(e.stored_size) + " runs past its container (end " +
                      hex_number(base + end) + ")");
  e.compression = compression_of(e.flags);
  e.arch_specific = (e.flags & k_flag_arch_specific) != 0;
  e.family = (e.flags & k_flag_family) != 0;
  if (e.compression == FatbinCompression::none) {
    e.compressed_size = 0;
    e.uncompressed_size = e.stored_size;
  } else {
    if (e.compressed_size > e.stored_size)
      return make_error("fatbin entry at " + hex_number(at) + ": compressed size " +
                        hex_number(e.compressed_size) + " exceeds its payload size " +
                        hex_number(e.stored_size));
    e.uncompressed_size = uncompressed;
  }
  if (name_offset != 0 && name_length != 0) {
    auto name = strict_substr(section, pos + name_offset, name_length);
    if (!name || uint64_t{name_offset} + name_length > end - pos)
      return make_error("fatbin entry at " + hex_number(at) + ": identifier at offset " +
                        hex_number(name_offset) + " (" + hex_number(name_length) +
                        " bytes) runs past its container");
    auto s = as_chars(*name).substr(0, k_max_identifier);
    e.identifier = std::string(s.substr(0, s.find('\0')));
  }
  return e;
}

// The entries of the container whose header (header_size bytes) is at `pos` and which ends
// at `end` (both section-relative; the caller checked that end fits the section). `work`
// grows by one per entry header read and one per 64 identifier bytes kept, also when the
// walk fails, so that a scan over candidates can bound what failed candidates cost.
Expected<FatbinContainer> read_container(Bytes section, uint64_t base, uint64_t pos,
                                         uint64_t header_size, uint64_t end,
                                         uint64_t* work = nullptr) {
  const uint64_t at = base + pos;
  FatbinContainer c;
  c.offset = at;
  c.size = end - pos;
  uint64_t e = pos + header_size;
  uint64_t identifier_bytes = 0;
  while (e < end) {
    // Trailing padding inside a container: fewer than 64 zero bytes.
    if (end - e < k_min_entry_header && all_zero(section.subspan(e, end - e))) break;
    if (work) *work += 1;
    TAILOR_TRY(entry, read_entry(section, base, e, end));
    // header_size >= 64 makes every step advance, so the walk is bounded by size/64.
    e += entry.header_size + entry.stored_size;
    identifier_bytes += entry.identifier.size();
    if (work) *work += entry.identifier.size() / 64;
    if (c.entries.size() == k_max_entries || identifier_bytes > k_max_identifier_bytes)
      return make_error("fatbin container at " + hex_number(at) + ": more than " +
                        std::to_string(k_max_entries) + " entries or " +
                        std::to_string(k_max_identifier_bytes >> 20) +
                        " MiB of entry identifiers, far beyond any real container");
    c.entries.push_back(std::move(entry));
  }
  return c;
}

}  // namespace

std::string_view compression_name(FatbinCompression c) {
  switch (c) {
    case FatbinCompression::none:
      return "none";
    case FatbinCompression::lz4:
      return "lz4";
    case FatbinCompression::zstd:
      return "zstd";
    case FatbinCompression::unknown:
      break;
  }
  return "unknown";
}

Expected<std::vector<FatbinContainer>> parse_fatbin_section(Bytes section,
                                                            uint64_t section_file_offset) {
  std::vector<FatbinContainer> containers;
  auto walked = for_each_fatbin_container(section, section_file_offset,
                                          [&](FatbinContainer&& c) -> Expected<void> {
                                            containers.push_back(std::move(c));
                                            return {};
                                          });
  if (!walked) return walked.error();
  return containers;
}

Expected<void> for_each_fatbin_container(Bytes section, uint64_t section_file_offset,
                                         const FatbinVisitor& visit) {
  uint64_t pos = 0;
  while (pos < section.size()) {
    const uint64_t at = section_file_offset + pos;
    const uint64_t left = section.size() - pos;
    auto magic = read_le<uint32_t>(section, pos);
    if (left < k_container_header || magic != k_container_magic) {
      // The linker pads between and after containers with zeros; anything else is damage.
      if (magic == 0u || (left < k_container_header && all_zero(section.subspan(pos)))) {
        pos += 8 - (pos % 8 ? pos % 8 : 0);
        if (left < 8) break;
        continue;
      }
      return make_error("no fatbin container magic at " + hex_number(at) + " (found " +
                        (magic ? hex_number(*magic) : std::string("a truncated header")) + ")");
    }
    const uint16_t header_size = *read_le<uint16_t>(section, pos + 6);
    const uint64_t fat_size = *read_le<uint64_t>(section, pos + 8);
    if (header_size < k_container_header || header_size > left)
      return make_error("fatbin container at " + hex_number(at) + ": header size " +
                        hex_number(header_size) + " is below 16 or runs past the section");
    if (fat_size > left - header_size)
      return make_error("fatbin container at " + hex_number(at) + ": size " + hex_number(fat_size) +
                        " runs past the end of its section (" + hex_number(left - header_size) +
                        " bytes left)");
    TAILOR_TRY(c, read_container(section, section_file_offset, pos, header_size,
                                 pos + header_size + fat_size));
    const uint64_t size = c.size;
    if (auto v = visit(std::move(c)); !v) return v.error();
    pos += size;
    if (pos % 8) pos += 8 - pos % 8;
  }
  return {};
}

namespace {

// Embedded containers: the magic as it lies in the file, and how often the scan reports
// progress. Work on candidates that fail (entry headers read, identifier bytes / 64) may
// reach a sixteenth of the section's bytes plus one largest container's worth; real
// libraries have no failing candidate at all.
constexpr unsigned char k_magic_bytes[4] = {0x50, 0xED, 0x55, 0xBA};
constexpr uint64_t k_embedded_alignment = 8;
constexpr uint64_t k_progress_step = 4u << 20;

// The container at `pos` if it validates as an embedded one (see for_each_embedded_fatbin).
std::optional<FatbinContainer> embedded_container(Bytes section, uint64_t base, uint64_t pos,
                                                  uint64_t& work) {
  const uint64_t left = section.size() - pos;
  if (left < k_container_header) return std::nullopt;
  const uint16_t version = *read_le<uint16_t>(section, pos + 4);
  const uint16_t header_size = *read_le<uint16_t>(section, pos + 6);
  const uint64_t fat_size = *read_le<uint64_t>(section, pos + 8);
  if (version != 1 || header_size != k_container_header || fat_size > left - header_size)
    return std::nullopt;
  auto c = read_container(section, base, pos, header_size, pos + header_size + fat_size, &work);
  if (!c || c->entries.empty()) return std::nullopt;
  return std::move(*c);
}

}  // namespace

Expected<void> for_each_embedded_fatbin(Bytes section, uint64_t section_file_offset,
                                        uint64_t section_address, const FatbinVisitor& visit,
                                        const ScanProgress& progress) {
  const uint64_t budget = section.size() / 16 + k_max_entries + (k_max_identifier_bytes / 64);
  uint64_t work = 0;
  // The first offset at or after `from` whose address is 8-aligned.
  auto aligned_from = [&](uint64_t from) {
    return from + (k_embedded_alignment - (section_address + from) % k_embedded_alignment) %
                      k_embedded_alignment;
  };
  uint64_t pos = aligned_from(0);
  uint64_t reported = 0;
  const auto* data = reinterpret_cast<const char*>(section.data());
  while (pos < section.size() && section.size() - pos >= k_container_header) {
    // Every 4 MiB passed is reported, containers or not, so a long run of code or data is
    // handed back as the search goes.
    if (progress && pos - reported >= k_progress_step)
      progress(section_file_offset + (reported = pos));
    // memchr for the magic's last byte (0xBA; 3-4 GB/s where memmem of the whole magic
    // makes 1), then the whole magic at the 8-aligned address 3 bytes before it; a search
    // stops at the next 4 MiB mark.
    const uint64_t window_end = std::min<uint64_t>(section.size(), pos + k_progress_step);
    const uint64_t search_end = std::min<uint64_t>(section.size(), window_end + 3);
    const void* hit = std::memchr(data + pos + 3, k_magic_bytes[3], search_end - (pos + 3));
    if (!hit) {
      pos = window_end;
      continue;
    }
    const uint64_t at = static_cast<uint64_t>(static_cast<const char*>(hit) - data) - 3;
    if ((section_address + at) % k_embedded_alignment ||
        std::memcmp(data + at, k_magic_bytes, 3) != 0) {
      pos = aligned_from(at + 1);
      continue;
    }
    auto c = embedded_container(section, section_file_offset, at, work);
    if (!c) {
      if (work > budget)
        return make_error("fatbin container candidates in the section at " +
                          hex_number(section_file_offset) + " cost more than " +
                          std::to_string(budget) +
                          " entry headers before failing to validate: damaged or hostile input");
      pos = at + k_embedded_alignment;
      continue;
    }
    pos = at + c->size;
    if (auto v = visit(std::move(*c)); !v) return v.error();
    if (progress) progress(section_file_offset + (reported = pos));
  }
  if (progress) progress(section_file_offset + section.size());
  return {};
}

Expected<std::vector<FatbinContainer>> find_embedded_fatbins(Bytes section,
                                                             uint64_t section_file_offset,
                                                             uint64_t section_address) {
  std::vector<FatbinContainer> containers;
  auto scanned = for_each_embedded_fatbin(section, section_file_offset, section_address,
                                          [&](FatbinContainer&& c) -> Expected<void> {
                                            containers.push_back(std::move(c));
                                            return {};
                                          });
  if (!scanned) return scanned.error();
  return containers;
}

}  // namespace tailor::formats
