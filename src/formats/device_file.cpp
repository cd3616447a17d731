#include "formats/device_file.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>

#include "util/strings.h"

namespace tailor::formats {

namespace {

constexpr uint32_t k_fatbin_magic = 0xBA55ED50;
// The toolkit note of a cubin: owner "NVIDIA Corp", type 2000; its description holds the
// ptxas options as text ("-arch sm_90a -m 64").
constexpr std::string_view k_tkinfo_section = ".note.nv.tkinfo";
constexpr uint32_t k_tkinfo_note_type = 2000;

// The lines of `text` with leading blanks cut, skipping blank lines and // comments, until
// `visit` returns false.
template <typename F>
void for_each_directive_line(std::string_view text, F&& visit) {
  bool in_block_comment = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
      line.remove_prefix(1);
    if (in_block_comment) {
      auto close = line.find("*/");
      if (close == std::string_view::npos) continue;
      line.remove_prefix(close + 2);
      in_block_comment = false;
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
        line.remove_prefix(1);
    }
    if (line.starts_with("/*")) {
      if (line.find("*/", 2) == std::string_view::npos) in_block_comment = true;
      continue;
    }
    if (line.empty() || line.starts_with("//")) continue;
    if (!visit(line)) return;
  }
}

// The word after a directive: ".target sm_90a, debug" -> "sm_90a".
std::string_view directive_argument(std::string_view line, std::string_view directive) {
  line.remove_prefix(directive.size());
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  size_t end = 0;
  while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) ||
                               line[end] == '_' || line[end] == '.'))
    ++end;
  return line.substr(0, end);
}

bool is_directive(std::string_view line, std::string_view directive) {
  return line.starts_with(directive) &&
         (line.size() == directive.size() || line[directive.size()] == ' ' ||
          line[directive.size()] == '\t');
}

// "sm_90a" / "compute_100f" -> arch and flags; false when it is not such a name.
bool parse_arch_name(std::string_view name, uint32_t& arch, bool& arch_specific, bool& family) {
  if (name.starts_with("sm_"))
    name.remove_prefix(3);
  else if (name.starts_with("compute_"))
    name.remove_prefix(8);
  else
    return false;
  arch_specific = family = false;
  if (name.ends_with('a')) {
    arch_specific = true;
    name.remove_suffix(1);
  } else if (name.ends_with('f')) {
    family = true;
    name.remove_suffix(1);
  }
  if (name.empty() || name.size() > 4) return false;
  arch = 0;
  for (char c : name) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    arch = arch * 10 + static_cast<uint32_t>(c - '0');
  }
  return arch > 0;
}

// The "-arch sm_XX[a|f]" of the toolkit note, when the cubin has one that names it.
Expected<bool> read_tkinfo_arch(Bytes file, const ElfFile& elf, CubinTarget& target) {
  const ElfSection* note = elf.find(k_tkinfo_section);
  if (!note) return false;
  TAILOR_TRY(bytes, section_bytes(file, *note));
  uint64_t at = 0;
  while (at + 12 <= bytes.size()) {
    const uint32_t namesz = *read_le<uint32_t>(bytes, at);
    const uint32_t descsz = *read_le<uint32_t>(bytes, at + 4);
    const uint32_t type = *read_le<uint32_t>(bytes, at + 8);
    const uint64_t desc_at = at + 12 + ((uint64_t{namesz} + 3) & ~uint64_t{3});
    auto desc = strict_substr(bytes, desc_at, descsz);
    if (!desc)
      return make_error(fmt::format("section {} at {}: note at {} ({} bytes) runs past the section",
                                    note->name, hex_number(note->offset),
                                    hex_number(note->offset + at), descsz));
    if (type == k_tkinfo_note_type) {
      std::string_view text = as_chars(*desc);
      for (size_t p = text.find("-arch "); p != std::string_view::npos;
           p = text.find("-arch ", p + 1)) {
        std::string_view word = directive_argument(text.substr(p), "-arch");
        uint32_t arch = 0;
        bool a = false, f = false;
        if (parse_arch_name(word, arch, a, f) && arch == target.arch) {
          target.arch_specific = target.arch_specific || a;
          target.family = f && !target.arch_specific;
          return true;
        }
      }
    }
    at = desc_at + ((uint64_t{descsz} + 3) & ~uint64_t{3});
  }
  return false;
}

}  // namespace

std::string_view device_file_kind_name(DeviceFileKind kind) {
  switch (kind) {
    case DeviceFileKind::cubin:
      return "cubin";
    case DeviceFileKind::ptx:
      return "ptx";
    case DeviceFileKind::fatbin:
      return "fatbin";
    case DeviceFileKind::none:
      break;
  }
  return "none";
}

bool may_start_ptx(Bytes first) {
  if (first.empty()) return false;
  const auto c = static_cast<unsigned char>(first[0]);
  return c == '/' || c == '.' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

DeviceFileKind classify_device_file(Bytes head) {
  if (looks_like_elf(head)) {
    auto machine = read_le<uint16_t>(head, 0x12);
    return machine && *machine == k_em_cuda ? DeviceFileKind::cubin : DeviceFileKind::none;
  }
  auto magic = read_le<uint32_t>(head, 0);
  auto version = read_le<uint16_t>(head, 4);
  if (magic && *magic == k_fatbin_magic && version && *version == 1) return DeviceFileKind::fatbin;
  if (!may_start_ptx(head)) return DeviceFileKind::none;
  head = head.first(std::min(head.size(), k_device_file_head_bytes));
  std::string_view text = as_chars(head);
  if (text.find('\0') != std::string_view::npos) return DeviceFileKind::none;
  // The first directive must be .version and the next .target, as the PTX ISA requires.
  int seen = 0;
  for_each_directive_line(text, [&](std::string_view line) {
    if (seen == 0 && is_directive(line, ".version"))
      seen = 1;
    else if (seen == 1 && is_directive(line, ".target"))
      seen = 2;
    else
      seen = -1;
    return seen == 1;
  });
  return seen == 2 ? DeviceFileKind::ptx : DeviceFileKind::none;
}

Expected<CubinTarget> cubin_target(Bytes file, const ElfFile& elf) {
  if (elf.e_machine != k_em_cuda)
    return make_error(
        fmt::format("e_machine at 0x12 is {}, not EM_CUDA ({})", elf.e_machine, k_em_cuda));
  // A cubin is read whole by the driver: every section it names must lie in the file.
  for (const ElfSection& s : elf.sections)
    if (auto b = section_bytes(file, s); !b) return b.error();
  CubinTarget target;
  // ABI 7: SM in bits 0-7, EF_CUDA_ACCELERATORS_V1 (0x800) for `a`; ABI 8 (Blackwell
  // toolkits): SM in bits 8-15, EF_CUDA_ACCELERATORS (0x8) for `a` (LLVM's BinaryFormat/ELF.h).
  // CUDA 13 leaves the `a` bit clear on sm_90a; the toolkit note says it.
  const bool v7 = elf.abi_version <= 7;
  target.arch = v7 ? (elf.e_flags & 0xff) : ((elf.e_flags >> 8) & 0xff);
  target.arch_specific = (elf.e_flags & (v7 ? 0x800u : 0x8u)) != 0;
  if (target.arch == 0)
    return make_error(fmt::format("e_flags at 0x30 ({}) name no SM (ELF ABI version {})",
                                  hex_number(elf.e_flags), elf.abi_version));
  TAILOR_TRY(found, read_tkinfo_arch(file, elf, target));
  (void)found;  // without the note, the plain target e_flags name
  return target;
}

Expected<PtxHeader> parse_ptx_header(Bytes head) {
  std::string_view text = as_chars(head.first(std::min(head.size(), k_device_file_head_bytes)));
  PtxHeader header;
  std::string_view target;
  for_each_directive_line(text, [&](std::string_view line) {
    if (is_directive(line, ".version")) header.version = directive_argument(line, ".version");
    if (is_directive(line, ".target")) {
      target = directive_argument(line, ".target");
      return false;
    }
    return true;
  });
  if (header.version.empty()) return make_error("PTX: no .version directive in the first 4 KiB");
  if (target.empty()) return make_error("PTX: no .target directive in the first 4 KiB");
  if (!parse_arch_name(target, header.arch, header.arch_specific, header.family))
    return make_error(fmt::format("PTX: .target '{}' is not sm_<number>[a|f]",
                                  std::string(target).substr(0, 64)));
  return header;
}

}  // namespace tailor::formats
