#include "slim/device_files.h"

#include <algorithm>
#include <map>

#include "data/toml_document.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "formats/wheel.h"

namespace tailor::slim {

namespace {

constexpr const char* k_facts_file = "slim/device_file_packages.toml";
constexpr size_t k_reasons_kept = 8;

std::vector<DeviceFilePackageFacts> load_facts() {
  auto doc = data::toml_document(k_facts_file);
  std::vector<DeviceFilePackageFacts> out;
  for (const auto& p : doc["package"].array()) {
    DeviceFilePackageFacts f;
    f.name = formats::normalize_distribution_name(p["name"].string());
    if (f.name.empty()) p["name"].fail("expected a distribution name");
    f.picks = p["picks"].string();
    f.manifests = p["manifests"].string();
    f.manifest_names = p["manifest_names"].strings_or_empty();
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Expected<DeviceFileCodes> read_device_file(Bytes file, formats::DeviceFileKind kind) {
  DeviceFileCodes out;
  out.kind = kind;
  std::map<cuda::FatbinCode, uint64_t> by_code;
  switch (kind) {
    case formats::DeviceFileKind::cubin: {
      TAILOR_TRY(elf, formats::parse_elf(file));
      TAILOR_TRY(t, formats::cubin_target(file, elf));
      by_code[{cuda::k_fatbin_kind_cubin, t.arch, t.arch_specific, t.family}] = file.size();
      break;
    }
    case formats::DeviceFileKind::ptx: {
      TAILOR_TRY(h, formats::parse_ptx_header(file));
      by_code[{cuda::k_fatbin_kind_ptx, h.arch, h.arch_specific, h.family}] = file.size();
      break;
    }
    case formats::DeviceFileKind::fatbin: {
      auto walked = formats::for_each_fatbin_container(
          file, 0, [&](formats::FatbinContainer&& c) -> Expected<void> {
            for (const auto& e : c.entries) by_code[cuda::fatbin_code(e)] += e.stored_size;
            return {};
          });
      if (!walked) return walked.error();
      break;
    }
    case formats::DeviceFileKind::none:
      return make_error("offset 0x0: not a cubin, PTX or fatbin file");
  }
  for (const auto& [code, bytes] : by_code) {
    out.codes.push_back(code);
    out.bytes.push_back(bytes);
  }
  return out;
}

Expected<DeviceFileDecision> judge_device_file(Bytes file, formats::DeviceFileKind kind,
                                               std::string path, const KeepPolicy& policy) {
  auto codes = read_device_file(file, kind);
  if (!codes) return make_error(path + ": " + codes.error().message);
  DeviceFileDecision d;
  d.path = std::move(path);
  d.size = file.size();
  d.choice = choose_device_file(codes->codes, policy);
  d.codes = std::move(*codes);
  return d;
}

void add_device_file(DeviceFilePackage& package, const DeviceFileDecision& d) {
  const bool keep = d.choice.keep;
  (keep ? package.files_kept : package.files_removed) += 1;
  (keep ? package.bytes_kept : package.bytes_removed) += d.size;
  if (!keep) package.removed.push_back(d.path);
  if (keep && package.kept_reasons.size() < k_reasons_kept &&
      std::find(package.kept_reasons.begin(), package.kept_reasons.end(), d.choice.why) ==
          package.kept_reasons.end())
    package.kept_reasons.push_back(d.choice.why);
  for (size_t i = 0; i < d.codes.codes.size(); ++i) {
    const cuda::FatbinCode& code = d.codes.codes[i];
    auto it = std::lower_bound(
        package.targets.begin(), package.targets.end(), code,
        [](const DeviceTargetTally& t, const cuda::FatbinCode& c) { return t.code < c; });
    if (it == package.targets.end() || it->code != code)
      it = package.targets.insert(it, DeviceTargetTally{code});
    (keep ? it->files_kept : it->files_removed) += 1;
    (keep ? it->bytes_kept : it->bytes_removed) += d.codes.bytes[i];
  }
}

const DeviceFilePackageFacts* device_file_package_facts(std::string_view distribution) {
  static const std::vector<DeviceFilePackageFacts> facts = load_facts();
  const std::string name = formats::normalize_distribution_name(distribution);
  for (const auto& f : facts)
    if (f.name == name) return &f;
  return nullptr;
}

bool is_package_manifest(std::string_view distribution, std::string_view path) {
  const DeviceFilePackageFacts* facts = device_file_package_facts(distribution);
  if (!facts) return false;
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return std::find(facts->manifest_names.begin(), facts->manifest_names.end(), base) !=
         facts->manifest_names.end();
}

std::string distribution_of_dist_info(std::string_view dist_info) {
  auto slash = dist_info.rfind('/');
  if (slash != std::string_view::npos) dist_info.remove_prefix(slash + 1);
  return std::string(dist_info.substr(0, dist_info.find('-')));
}

}  // namespace tailor::slim
