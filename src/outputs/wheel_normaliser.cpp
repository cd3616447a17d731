#include "outputs/wheel_normaliser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <vector>

#include "cuda/cuda_version.h"
#include "formats/elf.h"
#include "formats/elf_search_path.h"
#include "formats/wheel.h"
#include "formats/zip.h"
#include "formats/zip_writer.h"
#include "inspect/cuda_providers.h"
#include "inspect/torch_pin.h"
#include "util/base64.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::outputs {

namespace {

using formats::normal_mode;
using formats::record_digest;

struct Member {
  const formats::ZipEntry* entry = nullptr;  ///< null for members tailor writes
  std::string name;
  std::string replacement;  ///< text written instead of the entry's bytes
  bool replaced = false;
  uint32_t mode = 0644;
  bool in_dist_info = false;
};

}  // namespace

Expected<std::string> retag_wheel_file(const std::string& wheel_text, const std::string& tag) {
  auto parts = split_any(tag, "-");
  if (parts.size() != 3 ||
      std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }) ||
      tag.find_first_of(" \t\r\n") != std::string::npos)
    return make_error(fmt::format(
        "tag '{}': expected python-abi-platform, e.g. cp311-cp311-manylinux_2_35_x86_64", tag));
  std::vector<std::string> lines;
  for (auto& l : split_any(wheel_text, "\n")) {
    if (trim(l).empty()) continue;
    lines.push_back(l.back() == '\r' ? l.substr(0, l.size() - 1) : l);
  }
  auto is_tag = [](const std::string& l) { return l.rfind("Tag:", 0) == 0; };
  auto first = std::find_if(lines.begin(), lines.end(), is_tag);
  size_t at = static_cast<size_t>(first - lines.begin());
  lines.erase(std::remove_if(lines.begin(), lines.end(), is_tag), lines.end());
  lines.insert(lines.begin() + static_cast<ptrdiff_t>(std::min(at, lines.size())), "Tag: " + tag);
  // Headers end at a blank line, as bdist_wheel writes them.
  return join(lines, "\n") + "\n\n";
}

bool search_path_entry_stays(std::string_view entry) {
  return entry == "$ORIGIN" || entry == "${ORIGIN}" || entry.starts_with("$ORIGIN/") ||
         entry.starts_with("${ORIGIN}/");
}

namespace {

// A member worth reading as ELF: a shared library by its name, or an executable.
bool may_be_elf(const std::string& name, uint32_t mode) {
  auto base = name.substr(name.rfind('/') + 1);
  return (mode & 0111) != 0 || base.ends_with(".so") || base.find(".so.") != std::string::npos;
}

}  // namespace

namespace {

// The one .dist-info folder at the top that holds WHEEL.
Expected<std::string> find_dist_info(const formats::ZipArchive& archive, const std::string& wheel) {
  std::vector<std::string> dist_infos;
  for (const auto& e : archive.entries) {
    auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/WHEEL" &&
        e.name.substr(0, slash).ends_with(".dist-info"))
      dist_infos.push_back(e.name.substr(0, slash));
  }
  if (dist_infos.size() != 1)
    return make_error(fmt::format("{}: expected exactly one *.dist-info/WHEEL, found {}", wheel,
                                  dist_infos.size()));
  return dist_infos.front();
}

/// One rewrite of a wheel: the input's bytes and old RECORD, and what the steps share.
struct WheelRewrite {
  const std::string& wheel;
  const WheelNormaliseOptions& options;
  Bytes file;
  const formats::ZipArchive& archive;
  std::string dist_info;
  std::string record_name;
  std::map<std::string, formats::RecordRow> old_rows;
  std::string out_dist_info;       // the written wheel's: dist_info relabelled by a torch pin
  std::string version;             // the written wheel's version ("" when it stays as it is)
  std::vector<std::byte> buffer;   // one inflated member at a time
  std::vector<std::byte> library;  // one ELF member at a time, when its search path changes
  std::vector<SearchPathRemoval> search_paths;

  Error damaged(const std::string& name, const formats::RecordRow& r) const {
    return make_error(
        fmt::format("{}: member '{}' does not match its RECORD row (line {}); refusing to rewrite "
                    "a damaged wheel",
                    wheel, name, r.line));
  }
};

// The old RECORD, to check the bytes against before they get a new one.
Expected<void> read_old_record(WheelRewrite& w) {
  for (const auto& e : w.archive.entries) {
    if (e.name != w.record_name) continue;
    auto text = formats::extract_member(w.file, e, w.buffer);
    if (!text) return make_error(w.wheel + ": " + text.error().message);
    auto rows = formats::parse_record(as_chars(*text));
    if (!rows)
      return make_error(fmt::format("{}: {}: {}", w.wheel, w.record_name, rows.error().message));
    for (auto& r : *rows) w.old_rows[r.path] = r;
  }
  return {};
}

// WHEEL with its Tag lines replaced; its original bytes still answer to the old RECORD.
Expected<std::string> retagged_wheel_file(WheelRewrite& w, const formats::ZipEntry& e) {
  auto text = formats::extract_member(w.file, e, w.buffer);
  if (!text) return make_error(w.wheel + ": " + text.error().message);
  TAILOR_TRY(retagged, retag_wheel_file(std::string(as_chars(*text)), w.options.retag));
  if (auto row = w.old_rows.find(e.name);
      row != w.old_rows.end() && row->second.hash_algorithm == "sha256" &&
      record_digest(Sha256::of(*text)) != "sha256=" + row->second.hash_value)
    return w.damaged(e.name, row->second);
  return retagged;
}

// METADATA with the torch pin: the version relabelled, torch's requirement replaced; its
// original bytes still answer to the old RECORD.
Expected<std::string> pinned_metadata_file(WheelRewrite& w, const formats::ZipEntry& e) {
  auto text = formats::extract_member(w.file, e, w.buffer);
  if (!text) return make_error(w.wheel + ": " + text.error().message);
  if (auto row = w.old_rows.find(e.name);
      row != w.old_rows.end() && row->second.hash_algorithm == "sha256" &&
      record_digest(Sha256::of(*text)) != "sha256=" + row->second.hash_value)
    return w.damaged(e.name, row->second);
  std::string_view metadata = as_chars(*text);
  auto declared = formats::parse_metadata(metadata);
  if (declared.version.empty())
    return make_error(fmt::format("{}: {} has no Version", w.wheel, e.name));
  return inspect::pin_torch_in_metadata(
      metadata, inspect::version_with_label(declared.version, w.options.torch_pin->label),
      w.options.torch_pin->requirement);
}

// A member's name in the written wheel: the .dist-info and .data folders follow the version.
std::string output_name(const WheelRewrite& w, const std::string& name) {
  if (w.out_dist_info == w.dist_info) return name;
  const std::string stem = w.dist_info.substr(0, w.dist_info.size() - 10);  // less ".dist-info"
  const std::string out_stem = w.out_dist_info.substr(0, w.out_dist_info.size() - 10);
  if (name.starts_with(w.dist_info + "/")) return w.out_dist_info + name.substr(w.dist_info.size());
  if (name.starts_with(stem + ".data/")) return out_stem + name.substr(stem.size());
  return name;
}

// The members to write, the package first, then its .dist-info (the wheel spec's
// convention), each by name; RECORD is left out (written last, rebuilt).
Expected<std::vector<Member>> collect_members(WheelRewrite& w) {
  const std::string wheel_name = w.dist_info + "/WHEEL";
  const std::string metadata_name = w.dist_info + "/METADATA";
  const std::string provenance_name = w.dist_info + "/" + k_provenance_file;
  std::vector<Member> members;
  for (const auto& e : w.archive.entries) {
    if (e.is_directory()) continue;
    // RECORD is rebuilt; its signatures would no longer match, so they go.
    if (e.name == w.record_name || e.name == w.record_name + ".jws" ||
        e.name == w.record_name + ".p7s")
      continue;
    if (e.name == provenance_name && !w.options.provenance_json.empty()) continue;
    Member m;
    m.entry = &e;
    m.name = output_name(w, e.name);
    m.mode = normal_mode(w.file, e);
    m.in_dist_info = e.name.rfind(w.dist_info + "/", 0) == 0;
    if (e.name == wheel_name && !w.options.retag.empty()) {
      TAILOR_TRY(retagged, retagged_wheel_file(w, e));
      m.replacement = std::move(retagged);
      m.replaced = true;
    }
    if (e.name == metadata_name && w.options.torch_pin) {
      TAILOR_TRY(pinned, pinned_metadata_file(w, e));
      m.replacement = std::move(pinned);
      m.replaced = true;
    }
    members.push_back(std::move(m));
  }
  if (!w.options.provenance_json.empty()) {
    Member m;
    m.name = output_name(w, provenance_name);
    m.replacement = w.options.provenance_json;
    m.replaced = true;
    m.in_dist_info = true;
    members.push_back(std::move(m));
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return std::tie(a.in_dist_info, a.name) < std::tie(b.in_dist_info, b.name);
  });
  return members;
}

// An ELF member inflated into `w.library`, checked against the old RECORD, with its search
// path kept clean; false when the member is not ELF (it is then streamed as it is).
Expected<bool> load_library(WheelRewrite& w, const Member& m) {
  if (m.replaced || m.in_dist_info || !may_be_elf(m.name, m.mode)) return false;
  auto head = formats::peek_member(w.file, *m.entry, 4);
  if (!head) return make_error(w.wheel + ": " + head.error().message);
  if (!formats::looks_like_elf(as_bytes(*head))) return false;
  auto bytes = formats::extract_member(w.file, *m.entry, w.buffer);
  if (!bytes) return make_error(w.wheel + ": " + bytes.error().message);
  // The bytes as built answer to the old RECORD before they change.
  if (auto row = w.old_rows.find(m.entry->name);
      row != w.old_rows.end() &&
      ((row->second.hash_algorithm == "sha256" &&
        record_digest(Sha256::of(*bytes)) != "sha256=" + row->second.hash_value) ||
       (row->second.size && *row->second.size != bytes->size())))
    return w.damaged(m.name, row->second);
  // The inflated bytes are written from memory (no second inflate): taken over when
  // they are the buffer's, copied when they are a stored member's view of the file.
  if (!bytes->empty() && bytes->data() == w.buffer.data() && bytes->size() == w.buffer.size())
    w.library.swap(w.buffer);
  else
    w.library.assign(bytes->begin(), bytes->end());
  auto edits = formats::rewrite_search_paths(w.library, search_path_entry_stays);
  if (!edits)
    return make_error(
        fmt::format("{}: member '{}' keeps a build machine's folder in its search path: {}",
                    w.wheel, m.name, edits.error().message));
  for (auto& e : *edits) w.search_paths.push_back({m.name, e.tag, std::move(e.removed), e.after});
  return true;
}

// Writes one member and returns its RECORD row; a member streamed from the input is
// checked against its old RECORD row as it is written.
Expected<std::string> write_member(WheelRewrite& w, formats::ZipWriter& writer, const Member& m) {
  formats::ZipWriteEntry we;
  we.name = m.name;
  we.mode = m.mode;
  TAILOR_TRY(from_memory, load_library(w, m));  // checked against RECORD, written from `library`
  if (from_memory) {
    const Bytes bytes(w.library.data(), w.library.size());
    we.source = formats::ZipStreamSource{
        bytes.size(), [bytes](const std::function<void(Bytes)>& sink) -> Expected<void> {
          constexpr size_t k_piece = 1 << 20;  // as the writer takes a file
          for (size_t at = 0; at < bytes.size(); at += k_piece)
            sink(bytes.subspan(at, std::min(k_piece, bytes.size() - at)));
          return {};
        }};
  } else if (m.replaced) {
    we.source = m.replacement;
  } else {
    const formats::ZipEntry* e = m.entry;
    Bytes file = w.file;
    we.source = formats::ZipStreamSource{e->uncompressed_size,
                                         [file, e](const std::function<void(Bytes)>& sink) {
                                           return formats::stream_member(file, *e, sink);
                                         }};
  }
  auto written = writer.add(we);
  if (!written) return make_error(w.wheel + ": " + written.error().message);
  if (!m.replaced && !from_memory)
    if (auto row = w.old_rows.find(m.entry->name); row != w.old_rows.end()) {
      const auto& r = row->second;
      bool hash_differs = r.hash_algorithm == "sha256" &&
                          record_digest(written->sha256) != "sha256=" + r.hash_value;
      bool size_differs = r.size && *r.size != written->size;
      if (hash_differs || size_differs) return w.damaged(m.name, r);
    }
  return fmt::format("{},{},{}\n", record_field(m.name), record_digest(written->sha256),
                     written->size);
}

// The torch pin's label in the wheel's version: the .dist-info folder named after it, and the
// written file's path (beside the input when it replaces it, under the wheel's new name).
Expected<std::string> relabel(WheelRewrite& w, const std::string& out_path, bool beside_input) {
  const std::string& label = w.options.torch_pin->label;
  constexpr size_t k_suffix = 10;  // ".dist-info", whose own '-' is not the version's
  auto dash = w.dist_info.size() > k_suffix
                  ? w.dist_info.rfind('-', w.dist_info.size() - k_suffix - 1)
                  : std::string::npos;
  if (dash == std::string::npos)
    return make_error(fmt::format("{}: {}: no version in the folder's name", w.wheel, w.dist_info));
  const std::string dist_version =
      w.dist_info.substr(dash + 1, w.dist_info.size() - k_suffix - dash - 1);
  w.version = inspect::version_with_label(dist_version, label);
  w.out_dist_info = w.dist_info.substr(0, dash + 1) + w.version + ".dist-info";
  if (!beside_input) return out_path;
  const std::filesystem::path in(w.wheel);
  TAILOR_TRY(name, formats::parse_wheel_filename(in.filename().string()));
  const std::string base = in.filename().string();
  const size_t version_at = name.distribution.size() + 1;
  return (in.parent_path() /
          (base.substr(0, version_at) + inspect::version_with_label(name.version, label) +
           base.substr(version_at + name.version.size())))
      .string();
}

}  // namespace

Expected<NormalisedWheel> normalise_wheel(const std::string& wheel,
                                          const WheelNormaliseOptions& options) {
  TAILOR_TRY(mapped, MappedFile::open(wheel));
  Bytes file = mapped.bytes();
  auto archive = formats::parse_zip(file);
  if (!archive) return make_error(wheel + ": " + archive.error().message);
  TAILOR_TRY(dist_info, find_dist_info(*archive, wheel));
  WheelRewrite w{wheel, options, file, *archive, dist_info, dist_info + "/RECORD", {}, {}, {}, {}};
  w.out_dist_info = dist_info;
  std::string out_path = options.output.empty() ? wheel : options.output;
  if (options.torch_pin) {
    TAILOR_TRY(relabelled, relabel(w, out_path, options.output.empty()));
    out_path = std::move(relabelled);
  }
  TAILOR_TRY_VOID(read_old_record(w));
  TAILOR_TRY(members, collect_members(w));

  formats::ZipWriteOptions zopts;
  zopts.mtime = options.source_date_epoch;
  TAILOR_TRY(writer, formats::ZipWriter::create(out_path, zopts));
  std::string record;
  for (const auto& m : members) {
    TAILOR_TRY(row, write_member(w, writer, m));
    record += row;
  }
  const std::string out_record = w.out_dist_info + "/RECORD";
  record += record_field(out_record) + ",,\n";
  formats::ZipWriteEntry rec;
  rec.name = out_record;
  rec.source = record;
  if (auto r = writer.add(rec); !r) return make_error(wheel + ": " + r.error().message);
  if (auto r = writer.commit(); !r) return make_error(wheel + ": " + r.error().message);
  // The input is replaced: under its new name, the old one goes.
  if (options.output.empty() && out_path != wheel) {
    std::error_code ec;
    std::filesystem::remove(wheel, ec);
  }
  return NormalisedWheel{out_path, w.out_dist_info, members.size() + 1, std::move(w.search_paths)};
}

BuildProvenance make_build_provenance(const BuildReport& report,
                                      const source::SourceIdentity& identity,
                                      const source::SourceSpec& spec,
                                      const plan::ExtensionRecipe& recipe) {
  BuildProvenance p;
  p.tool_version = report.tool_version;
  p.package = report.package;
  p.recipe = report.recipe;
  p.targets = report.targets;
  p.source_kind = std::string(source::source_kind_name(spec.kind));
  switch (spec.kind) {
    case source::SourceKind::sdist:
      p.source_name = std::filesystem::path(spec.path).filename().string();
      break;
    case source::SourceKind::index:
      p.source_name = spec.name + "==" + spec.version;
      break;
    case source::SourceKind::git:
      p.source_name = without_credentials(spec.url) + (spec.ref.empty() ? "" : "@" + spec.ref);
      break;
    case source::SourceKind::example:
    case source::SourceKind::directory:
      break;  // the folder's path is this machine's
  }
  p.digest_kind = identity.digest_kind;
  p.digest = identity.digest;
  p.source_date_epoch = identity.source_date_epoch;
  p.epoch_from = identity.epoch_from;
  fill_provenance_toolchain(p, report.toolchain);
  std::vector<std::string> parallel = {recipe.jobs_variable};
  if (!recipe.nvcc_threads_variable.empty()) parallel.push_back(recipe.nvcc_threads_variable);
  fill_provenance_environment(p, report.env, parallel);
  p.compressor = formats::zip_writer_compressor();
  return p;
}

std::string without_credentials(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  auto host_start = scheme + 3;
  auto path_start = url.find('/', host_start);
  auto at = url.rfind('@', path_start == std::string::npos ? std::string::npos : path_start);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

BuildProvenance make_torch_provenance(const plan::TorchPlan& plan, const probe::HostReport& host,
                                      const source::SourceIdentity& identity,
                                      const std::string& tool_version) {
  BuildProvenance p;
  p.tool_version = tool_version;
  p.package = "torch";
  p.recipe = plan.name;
  p.targets = plan.targets.names();
  p.source_kind = "torch-source";
  p.digest_kind = identity.digest_kind;
  p.digest = identity.digest;
  p.source_date_epoch = identity.source_date_epoch;
  p.epoch_from = identity.epoch_from;
  std::map<std::string, std::string> toolchain;
  if (plan.cuda) toolchain["nvcc"] = plan.cuda_text();
  toolchain["python"] = plan.python_version;
  for (const auto& c : host.compilers)
    if (c.path == plan.host_compiler)
      toolchain[std::string(probe::compiler_kind_name(c.kind))] = c.version;
  for (const auto& t : host.tools)
    if (t.name == "ninja" || t.name == "cmake") toolchain[t.name] = t.version;
  fill_provenance_toolchain(p, toolchain);
  fill_provenance_environment(p, plan.env, {"MAX_JOBS"});
  p.compressor = formats::zip_writer_compressor();
  return p;
}

}  // namespace tailor::outputs

namespace tailor::outputs {

Expected<bool> wheel_links_torch(const std::string& wheel) {
  TAILOR_TRY(mapped, MappedFile::open(wheel));
  Bytes file = mapped.bytes();
  auto archive = formats::parse_zip(file);
  if (!archive) return make_error(wheel + ": " + archive.error().message);
  const auto& torch = inspect::TorchLibraries::get();
  std::vector<std::byte> buffer;
  for (const auto& e : archive->entries) {
    if (e.is_directory() || e.name.find(".dist-info/") != std::string::npos) continue;
    if (!may_be_elf(e.name, normal_mode(file, e))) continue;
    auto head = formats::peek_member(file, e, 4);
    if (!head || !formats::looks_like_elf(as_bytes(*head))) continue;
    auto bytes = formats::extract_member(file, e, buffer);
    if (!bytes) return make_error(wheel + ": " + bytes.error().message);
    auto elf = formats::parse_elf(*bytes);
    if (!elf) continue;  // not a library the loader would take either
    for (const auto& needed : elf->needed)
      if (torch.contains(needed)) return true;
  }
  return false;
}

}  // namespace tailor::outputs
