#include "plan/torch_catalog.h"

#include <algorithm>

#include "data/data_files.h"
#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {

/// A loader over text: the embedded file's name in every message, DataError as an Error.
template <typename Read>
Expected<void> load_text(std::string_view text, const char* file, Read read) {
  return data::expected_from([&] { read(data::parse_toml(text, file)); });
}

int whole(const data::TomlValue& v) { return static_cast<int>(v.number()); }

/// A CUDA version the data names ("12.6"), read once here; anything else fails the file.
cuda::CudaVersion cuda_version(const data::TomlValue& v, std::string_view text) {
  auto parsed = cuda::parse_cuda_version(text);
  if (!parsed) v.fail(parsed.error().message);
  return *parsed;
}
cuda::CudaVersion cuda_version(const data::TomlValue& v) { return cuda_version(v, v.string()); }

}  // namespace

bool FeatureSwitch::default_on(std::string_view platform) const {
  return platform == "aarch64" ? default_aarch64 : default_x86_64;
}

bool FeatureSwitch::builds_on(std::string_view platform) const {
  return std::find(platforms.begin(), platforms.end(), platform) != platforms.end();
}

const TorchRelease* TorchCatalog::find_release(std::string_view version) const {
  for (const auto& r : releases)
    if (r.version == version) return &r;
  return nullptr;
}

const FeatureSwitch* TorchCatalog::find_feature(std::string_view name) const {
  std::string n = to_lower(name);
  std::replace(n.begin(), n.end(), '_', '-');
  for (const auto& f : features)
    if (f.name == n) return &f;
  return nullptr;
}

const CpuTarget* TorchCatalog::find_cpu_target(std::string_view name) const {
  std::string n = to_lower(name);
  for (const auto& t : cpu_targets) {
    if (t.name == n) return &t;
    for (const auto& a : t.aliases)
      if (a == n) return &t;
  }
  return nullptr;
}

int TorchCatalog::max_gcc_for(const cuda::CudaVersion& cuda) const {
  for (const auto& l : nvcc_limits)
    if (l.cuda == cuda) return l.max_gcc;
  return 0;
}

const DistroImage* TorchCatalog::distro_for_glibc(std::string_view glibc) const {
  const DistroImage* best = nullptr;
  for (const auto& d : distros)
    if (compare_versions(d.glibc, glibc) <= 0) best = &d;
  return best;
}

Expected<void> load_versions(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/versions.toml", [&](const data::TomlDocument& root) {
    into.checked_against = root["checked_against"].strings();
    for (const auto& t : root["release"].array()) {
      TorchRelease rel;
      rel.version = t["version"].string();
      rel.tag = t["tag"].string();
      rel.pythons = t["pythons"].strings();
      for (const auto& c : t["cudas"].array()) rel.cudas.push_back(cuda_version(c));
      rel.min_gcc = whole(t["min_gcc"]);
      rel.requirements = t["requirements"].strings();
      rel.build = t["build"].string();
      rel.checked_against = t["checked_against"].string();
      into.releases.push_back(std::move(rel));
    }
    for (const auto& [key, value] : root["build_commands"].entries()) {
      std::vector<std::string> argv = value.strings();
      if (argv.empty()) value.fail("must be a non-empty list of strings");
      into.build_commands[key] = argv;
    }
    for (const auto& rel : into.releases)
      if (!into.build_commands.count(rel.build))
        root.fail("release " + rel.version + ": unknown build '" + rel.build + "'");
    into.source_url = root.at_path("source.url").string();
  });
}

Expected<void> load_features(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/features.toml", [&](const data::TomlDocument& root) {
    for (const auto& t : root["feature"].array()) {
      FeatureSwitch f;
      f.name = t["name"].string();
      f.vars = t["vars"].strings();
      f.default_x86_64 = t["default_x86_64"].boolean();
      f.default_aarch64 = t["default_aarch64"].boolean();
      f.needs_cuda = t["needs_cuda"].boolean();
      f.platforms = t["platforms"].strings();
      for (const char* platform : {"x86_64", "aarch64"})
        if (auto note = t[std::string("off_note_") + platform].string_or(""); !note.empty())
          f.off_notes[platform] = note;
      into.features.push_back(std::move(f));
    }
  });
}

Expected<void> load_cpu_targets(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/cpu_targets.toml", [&](const data::TomlDocument& root) {
    for (const auto& t : root["target"].array()) {
      CpuTarget c;
      c.name = t["name"].string();
      c.aliases = t["aliases"].strings();
      c.platform = t["platform"].string();
      c.label = t["label"].string();
      c.flags = t["flags"].strings();
      c.isa_note = t["isa_note"].string();
      c.level = whole(t["level"]);
      c.requires_features = t["requires"].strings_or_empty();
      c.neoverse = t["neoverse"].string_or("");
      into.cpu_targets.push_back(std::move(c));
    }
  });
}

Expected<void> load_toolchain(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/toolchain.toml", [&](const data::TomlDocument& root) {
    for (const auto& t : root["nvcc"].array())
      into.nvcc_limits.push_back({cuda_version(t["cuda"]), whole(t["max_gcc"])});
    for (const auto& [k, v] : root["fatbin"].entries()) {
      std::string s = v.string();
      if (k == "compress_mode_since")
        into.fatbin.compress_mode_since = cuda_version(v, s);
      else if (k == "default_since_13")
        into.fatbin.default_since_13 = s;
      else
        into.fatbin.flags[k] = s;
    }
    for (const char* need : {"size", "speed", "none", "legacy_size", "legacy_speed", "legacy_none"})
      if (!into.fatbin.flags.count(need)) root["fatbin"][need].fail("missing");
  });
}

Expected<void> load_images(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/images.toml", [&](const data::TomlDocument& root) {
    for (const auto& t : root["distro"].array()) {
      into.distros.push_back({t["name"].string(), t["glibc"].string(), t["cpu_image"].string(),
                              t["cuda_image"].string(), t["runtime_image"].string(),
                              t["package_manager"].string(), t["nvidia_repo"].string(),
                              t["default_python"].string()});
    }
    std::sort(into.distros.begin(), into.distros.end(),
              [](const auto& a, const auto& b) { return compare_versions(a.glibc, b.glibc) < 0; });
    for (const auto& [k, v] : root["cuda_full"].entries())
      into.cuda_full[cuda_version(v, k)] = v.string();
    into.repo_arch = root["repo_arch"].string_table();
  });
}

Expected<void> load_runtime_packages(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/runtime_packages.toml", [&](const data::TomlDocument& root) {
    for (const auto& t : root["library"].array())
      into.runtime_libraries.push_back({t["soname"].string(), t["apt"].string()});
  });
}

Expected<void> load_estimates(std::string_view text, TorchCatalog& into) {
  return load_text(text, "data/pytorch/estimates.toml", [&](const data::TomlDocument& root) {
    EstimateCoefficients& e = into.estimates;
    struct Field {
      const char* section;
      const char* key;
      double* dest;
    };
    const Field fields[] = {
        {"jobs", "gib_per_job_cuda", &e.gib_per_job_cuda},
        {"jobs", "gib_per_job_flash_attention", &e.gib_per_job_flash_attention},
        {"jobs", "gib_per_job_cpu", &e.gib_per_job_cpu},
        {"jobs", "reserve_gib", &e.reserve_gib},
        {"disk", "base_gib", &e.disk_base_gib},
        {"disk", "per_target_gib", &e.disk_per_target_gib},
        {"disk", "cpu_only_gib", &e.disk_cpu_only_gib},
        {"size", "first_sass_mib", &e.first_sass_mib},
        {"size", "per_extra_sass_mib", &e.per_extra_sass_mib},
        {"size", "per_ptx_mib", &e.per_ptx_mib},
        {"size", "cpu_only_mib", &e.cpu_only_mib},
        {"size", "device_factor_size", &e.device_factor_size},
        {"size", "device_factor_none", &e.device_factor_none},
        {"time", "cuda_first_target_core_hours", &e.cuda_first_target_core_hours},
        {"time", "per_extra_target_core_hours", &e.per_extra_target_core_hours},
        {"time", "cpu_only_core_hours", &e.cpu_only_core_hours},
    };
    for (const auto& f : fields) *f.dest = root[f.section][f.key].number();
    struct Src {
      const char* section;
      std::string* dest;
    };
    for (const Src& s : {Src{"jobs", &e.jobs_source}, Src{"disk", &e.disk_source},
                         Src{"size", &e.size_source}, Src{"time", &e.time_source}})
      *s.dest = root[s.section]["source"].string();
  });
}

const TorchCatalog& torch_catalog() {
  static const TorchCatalog loaded = [] {
    TorchCatalog c;
    using Loader = Expected<void> (*)(std::string_view, TorchCatalog&);
    const std::pair<const char*, Loader> files[] = {
        {"pytorch/versions.toml", load_versions},
        {"pytorch/features.toml", load_features},
        {"pytorch/cpu_targets.toml", load_cpu_targets},
        {"pytorch/toolchain.toml", load_toolchain},
        {"pytorch/images.toml", load_images},
        {"pytorch/runtime_packages.toml", load_runtime_packages},
        {"pytorch/estimates.toml", load_estimates},
    };
    for (const auto& [path, loader] : files) {
      auto text = data::file(path);
      if (!text) throw data::DataError(text.error().message);
      if (auto ok = loader(*text, c); !ok) throw data::DataError(ok.error().message);
    }
    return c;
  }();
  return loaded;
}

}  // namespace tailor::plan
