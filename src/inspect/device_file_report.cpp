#include "inspect/device_file_report.h"

#include <fmt/format.h>

#include <map>

#include "cuda/fatbin_code.h"
#include "formats/decompress.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "util/mapped_file.h"

namespace tailor::inspect {

namespace {

using StatsByCode = std::map<cuda::FatbinCode, TargetStats>;

void add(StatsByCode& by_code, const cuda::FatbinCode& code, uint64_t entries, uint64_t stored,
         uint64_t uncompressed, const std::set<std::string>& compression) {
  auto [it, inserted] = by_code.try_emplace(code);
  TargetStats& t = it->second;
  if (inserted) {
    t.code = code;
    t.name = code.name();
  }
  t.entries += entries;
  t.stored_bytes += stored;
  t.uncompressed_bytes += uncompressed;
  t.compression.insert(compression.begin(), compression.end());
}

std::vector<TargetStats> in_order(StatsByCode&& by_code) {
  std::vector<TargetStats> out;
  out.reserve(by_code.size());
  for (auto& [code, stats] : by_code) out.push_back(std::move(stats));
  return out;
}

Expected<std::vector<TargetStats>> fatbin_targets(Bytes file, const LibraryOptions& options) {
  StatsByCode by_code;
  auto walked = formats::for_each_fatbin_container(
      file, 0, [&](formats::FatbinContainer&& c) -> Expected<void> {
        for (const formats::FatbinEntry& e : c.entries) {
          if (options.verify_payloads) {
            if (auto ok = formats::verify_entry(file, e, options.max_entry_bytes); !ok)
              return ok.error();
          }
          add(by_code, cuda::fatbin_code(e), 1, e.stored_size, e.uncompressed_size,
              {std::string(formats::compression_name(e.compression))});
        }
        return {};
      });
  if (!walked) return walked.error();
  return in_order(std::move(by_code));
}

}  // namespace

Expected<DeviceFile> analyze_device_file(Bytes file, std::string path, formats::DeviceFileKind kind,
                                         const LibraryOptions& options) {
  auto fail = [&](const Error& e) { return make_error(path + ": " + e.message); };
  DeviceFile out;
  out.kind = kind;
  out.file_size = file.size();
  const std::set<std::string> none = {"none"};
  StatsByCode by_code;
  switch (kind) {
    case formats::DeviceFileKind::cubin: {
      auto elf = formats::parse_elf(file);
      if (!elf) return fail(elf.error());
      auto target = formats::cubin_target(file, *elf);
      if (!target) return fail(target.error());
      cuda::FatbinCode code{cuda::k_fatbin_kind_cubin, target->arch, target->arch_specific,
                            target->family};
      add(by_code, code, 1, file.size(), file.size(), none);
      out.targets = in_order(std::move(by_code));
      break;
    }
    case formats::DeviceFileKind::ptx:
      return analyze_ptx_head(file, std::move(path), file.size());
    case formats::DeviceFileKind::fatbin: {
      auto targets = fatbin_targets(file, options);
      if (!targets) return fail(targets.error());
      out.targets = std::move(*targets);
      break;
    }
    case formats::DeviceFileKind::none:
      return fail(make_error("offset 0x0: not a cubin, PTX or fatbin file"));
  }
  out.path = std::move(path);
  return out;
}

Expected<DeviceFile> analyze_ptx_head(Bytes head, std::string path, uint64_t file_size) {
  auto header = formats::parse_ptx_header(head);
  if (!header) return make_error(path + ": " + header.error().message);
  DeviceFile out;
  out.path = std::move(path);
  out.kind = formats::DeviceFileKind::ptx;
  out.file_size = file_size;
  TargetStats t;
  t.code = {cuda::k_fatbin_kind_ptx, header->arch, header->arch_specific, header->family};
  t.name = t.code.name();
  t.entries = 1;
  t.stored_bytes = t.uncompressed_bytes = file_size;
  t.compression = {"none"};
  out.targets.push_back(std::move(t));
  return out;
}

Expected<DeviceFile> analyze_device_file_at(const std::string& path, formats::DeviceFileKind kind,
                                            const LibraryOptions& options) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  return analyze_device_file(mapped->bytes(), path, kind, options);
}

std::vector<DeviceFolder> device_folders(const std::vector<DeviceFile>& files) {
  struct Acc {
    DeviceFolder folder;
    std::map<cuda::FatbinCode, DeviceFolderTarget> by_code;
  };
  std::map<std::string, Acc> by_folder;
  for (const DeviceFile& f : files) {
    auto slash = f.path.rfind('/');
    std::string folder = slash == std::string::npos ? "" : f.path.substr(0, slash);
    Acc& acc = by_folder[folder];
    acc.folder.files += 1;
    acc.folder.bytes += f.file_size;
    if (f.kind == formats::DeviceFileKind::cubin) acc.folder.cubins += 1;
    if (f.kind == formats::DeviceFileKind::ptx) acc.folder.ptx += 1;
    if (f.kind == formats::DeviceFileKind::fatbin) acc.folder.fatbins += 1;
    for (const TargetStats& t : f.targets) {
      auto [it, inserted] = acc.by_code.try_emplace(t.code);
      DeviceFolderTarget& total = it->second;
      if (inserted) {
        total.code = t.code;
        total.name = t.name;
      }
      total.files += 1;
      total.entries += t.entries;
      total.stored_bytes += t.stored_bytes;
      total.uncompressed_bytes += t.uncompressed_bytes;
      total.compression.insert(t.compression.begin(), t.compression.end());
    }
  }
  std::vector<DeviceFolder> out;
  out.reserve(by_folder.size());
  for (auto& [name, acc] : by_folder) {
    acc.folder.folder = name;
    for (auto& [code, t] : acc.by_code) acc.folder.targets.push_back(std::move(t));
    out.push_back(std::move(acc.folder));
  }
  return out;
}

std::string device_folder_label(const DeviceFolder& folder) {
  return folder.folder.empty() ? "./" : folder.folder + "/";
}

}  // namespace tailor::inspect
