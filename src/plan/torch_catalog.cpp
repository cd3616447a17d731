#include "plan/torch_catalog.h"

#include <algorithm>
#include <charconv>
#include <toml++/toml.h>

#include "data/data_files.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {

// Field readers that name the file and field on failure, so a broken data file is one
// clear line instead of a default silently used.
struct Reader {
  std::string file;

  Error missing(std::string_view where, std::string_view key) const {
    return make_error(file + ": " + std::string(where) + ": missing or mistyped field '" +
                      std::string(key) + "'");
  }
  Expected<std::string> str(const toml::table& t, std::string_view where, std::string_view key) const {
    auto v = t[key].value<std::string>();
    if (!v) return missing(where, key);
    return *v;
  }
  Expected<double> num(const toml::table& t, std::string_view where, std::string_view key) const {
    auto v = t[key].value<double>();
    if (!v) return missing(where, key);
    return *v;
  }
  Expected<bool> flag(const toml::table& t, std::string_view where, std::string_view key) const {
    auto v = t[key].value<bool>();
    if (!v) return missing(where, key);
    return *v;
  }
  Expected<std::vector<std::string>> strs(const toml::table& t, std::string_view where,
                                          std::string_view key) const {
    const toml::array* arr = t[key].as_array();
    if (!arr) return missing(where, key);
    std::vector<std::string> out;
    for (const auto& e : *arr) {
      auto s = e.value<std::string>();
      if (!s) return missing(where, key);
      out.push_back(*s);
    }
    return out;
  }
  Expected<toml::table> parse(std::string_view text) const {
    try {
      return toml::parse(text, file);
    } catch (const toml::parse_error& e) {
      return make_error(file + ":" + std::to_string(e.source().begin.line) + ": " +
                        std::string(e.description()));
    }
  }
  /// Every table of an array of tables, or an error naming the key.
  Expected<std::vector<const toml::table*>> tables(const toml::table& root, std::string_view key) const {
    const toml::array* arr = root[key].as_array();
    if (!arr) return make_error(file + ": missing array of tables [[" + std::string(key) + "]]");
    std::vector<const toml::table*> out;
    for (const auto& e : *arr) {
      if (!e.as_table()) return make_error(file + ": [[" + std::string(key) + "]] entries must be tables");
      out.push_back(e.as_table());
    }
    return out;
  }
};

std::string where(std::string_view kind, size_t index) {
  return std::string(kind) + "[" + std::to_string(index) + "]";
}

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

int TorchCatalog::max_gcc_for(std::string_view cuda) const {
  for (const auto& l : nvcc_limits)
    if (compare_versions(l.cuda, cuda) == 0) return l.max_gcc;
  return 0;
}

const DistroImage* TorchCatalog::distro_for_glibc(std::string_view glibc) const {
  const DistroImage* best = nullptr;
  for (const auto& d : distros)
    if (compare_versions(d.glibc, glibc) <= 0) best = &d;
  return best;
}

Expected<void> load_versions(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/versions.toml"};
  TAILOR_TRY(root, r.parse(text));
  TAILOR_TRY(checked, r.strs(root, "top level", "checked_against"));
  into.checked_against = checked;
  TAILOR_TRY(list, r.tables(root, "release"));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& t = *list[i];
    std::string w = where("release", i);
    TorchRelease rel;
    TAILOR_TRY(version, r.str(t, w, "version"));
    TAILOR_TRY(tag, r.str(t, w, "tag"));
    TAILOR_TRY(pythons, r.strs(t, w, "pythons"));
    TAILOR_TRY(cudas, r.strs(t, w, "cudas"));
    TAILOR_TRY(min_gcc, r.num(t, w, "min_gcc"));
    TAILOR_TRY(reqs, r.strs(t, w, "requirements"));
    TAILOR_TRY(build, r.str(t, w, "build"));
    TAILOR_TRY(checked_rel, r.str(t, w, "checked_against"));
    rel.version = version;
    rel.tag = tag;
    rel.pythons = pythons;
    rel.cudas = cudas;
    rel.min_gcc = static_cast<int>(min_gcc);
    rel.requirements = reqs;
    rel.build = build;
    rel.checked_against = checked_rel;
    into.releases.push_back(std::move(rel));
  }
  const toml::table* cmds = root["build_commands"].as_table();
  if (!cmds) return make_error(r.file + ": missing table [build_commands]");
  for (const auto& [key, value] : *cmds) {
    std::vector<std::string> argv;
    if (const toml::array* a = value.as_array())
      for (const auto& e : *a)
        if (auto s = e.value<std::string>()) argv.push_back(*s);
    if (argv.empty()) return make_error(r.file + ": build_commands." + std::string(key.str()) + " must be a list of strings");
    into.build_commands[std::string(key.str())] = argv;
  }
  for (const auto& rel : into.releases)
    if (!into.build_commands.count(rel.build))
      return make_error(r.file + ": release " + rel.version + ": unknown build '" + rel.build + "'");
  auto url = root["source"]["url"].value<std::string>();
  if (!url) return make_error(r.file + ": missing source.url");
  into.source_url = *url;
  return {};
}

Expected<void> load_features(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/features.toml"};
  TAILOR_TRY(root, r.parse(text));
  TAILOR_TRY(list, r.tables(root, "feature"));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& t = *list[i];
    std::string w = where("feature", i);
    FeatureSwitch f;
    TAILOR_TRY(name, r.str(t, w, "name"));
    TAILOR_TRY(vars, r.strs(t, w, "vars"));
    TAILOR_TRY(dx, r.flag(t, w, "default_x86_64"));
    TAILOR_TRY(da, r.flag(t, w, "default_aarch64"));
    TAILOR_TRY(nc, r.flag(t, w, "needs_cuda"));
    TAILOR_TRY(platforms, r.strs(t, w, "platforms"));
    f.name = name;
    f.vars = vars;
    f.default_x86_64 = dx;
    f.default_aarch64 = da;
    f.needs_cuda = nc;
    f.platforms = platforms;
    into.features.push_back(std::move(f));
  }
  return {};
}

Expected<void> load_cpu_targets(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/cpu_targets.toml"};
  TAILOR_TRY(root, r.parse(text));
  TAILOR_TRY(list, r.tables(root, "target"));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& t = *list[i];
    std::string w = where("target", i);
    CpuTarget c;
    TAILOR_TRY(name, r.str(t, w, "name"));
    TAILOR_TRY(aliases, r.strs(t, w, "aliases"));
    TAILOR_TRY(platform, r.str(t, w, "platform"));
    TAILOR_TRY(label, r.str(t, w, "label"));
    TAILOR_TRY(flags, r.strs(t, w, "flags"));
    TAILOR_TRY(note, r.str(t, w, "isa_note"));
    TAILOR_TRY(level, r.num(t, w, "level"));
    c.name = name;
    c.aliases = aliases;
    c.platform = platform;
    c.label = label;
    c.flags = flags;
    c.isa_note = note;
    c.level = static_cast<int>(level);
    into.cpu_targets.push_back(std::move(c));
  }
  return {};
}

Expected<void> load_toolchain(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/toolchain.toml"};
  TAILOR_TRY(root, r.parse(text));
  TAILOR_TRY(list, r.tables(root, "nvcc"));
  for (size_t i = 0; i < list.size(); ++i) {
    std::string w = where("nvcc", i);
    TAILOR_TRY(cuda, r.str(*list[i], w, "cuda"));
    TAILOR_TRY(max_gcc, r.num(*list[i], w, "max_gcc"));
    into.nvcc_limits.push_back({cuda, static_cast<int>(max_gcc)});
  }
  const toml::table* fat = root["fatbin"].as_table();
  if (!fat) return make_error(r.file + ": missing table [fatbin]");
  for (const auto& [k, v] : *fat) {
    auto s = v.value<std::string>();
    if (!s) return make_error(r.file + ": fatbin." + std::string(k.str()) + " must be a string");
    if (k.str() == "compress_mode_since") into.fatbin.compress_mode_since = *s;
    else if (k.str() == "default_since_13") into.fatbin.default_since_13 = *s;
    else into.fatbin.flags[std::string(k.str())] = *s;
  }
  for (const char* need : {"size", "speed", "none", "legacy_size", "legacy_speed", "legacy_none"})
    if (!into.fatbin.flags.count(need)) return make_error(r.file + ": missing fatbin." + std::string(need));
  return {};
}

Expected<void> load_images(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/images.toml"};
  TAILOR_TRY(root, r.parse(text));
  TAILOR_TRY(list, r.tables(root, "distro"));
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& t = *list[i];
    std::string w = where("distro", i);
    DistroImage d;
    TAILOR_TRY(name, r.str(t, w, "name"));
    TAILOR_TRY(glibc, r.str(t, w, "glibc"));
    TAILOR_TRY(cpu_image, r.str(t, w, "cpu_image"));
    TAILOR_TRY(cuda_image, r.str(t, w, "cuda_image"));
    TAILOR_TRY(runtime_image, r.str(t, w, "runtime_image"));
    TAILOR_TRY(pm, r.str(t, w, "package_manager"));
    TAILOR_TRY(repo, r.str(t, w, "nvidia_repo"));
    TAILOR_TRY(py, r.str(t, w, "default_python"));
    d = {name, glibc, cpu_image, cuda_image, runtime_image, pm, repo, py};
    into.distros.push_back(std::move(d));
  }
  std::sort(into.distros.begin(), into.distros.end(), [](const auto& a, const auto& b) {
    return compare_versions(a.glibc, b.glibc) < 0;
  });
  for (const char* key : {"cuda_full", "repo_arch"}) {
    const toml::table* t = root[key].as_table();
    if (!t) return make_error(r.file + ": missing table [" + std::string(key) + "]");
    auto& dest = std::string_view(key) == "cuda_full" ? into.cuda_full : into.repo_arch;
    for (const auto& [k, v] : *t) {
      auto s = v.value<std::string>();
      if (!s) return make_error(r.file + ": " + key + "." + std::string(k.str()) + " must be a string");
      dest[std::string(k.str())] = *s;
    }
  }
  return {};
}

Expected<void> load_runtime_packages(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/runtime_packages.toml"};
  TAILOR_TRY(root, r.parse(text));
  TAILOR_TRY(list, r.tables(root, "library"));
  for (size_t i = 0; i < list.size(); ++i) {
    std::string w = where("library", i);
    TAILOR_TRY(soname, r.str(*list[i], w, "soname"));
    TAILOR_TRY(apt, r.str(*list[i], w, "apt"));
    into.runtime_libraries.push_back({soname, apt});
  }
  return {};
}

Expected<void> load_estimates(std::string_view text, TorchCatalog& into) {
  Reader r{"data/pytorch/estimates.toml"};
  TAILOR_TRY(root, r.parse(text));
  auto section = [&](std::string_view name) -> Expected<const toml::table*> {
    const toml::table* t = root[name].as_table();
    if (!t) return make_error(r.file + ": missing table [" + std::string(name) + "]");
    return t;
  };
  EstimateCoefficients& e = into.estimates;
  struct Field { const char* section; const char* key; double* dest; };
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
  for (const auto& f : fields) {
    TAILOR_TRY(t, section(f.section));
    TAILOR_TRY(v, r.num(*t, f.section, f.key));
    *f.dest = v;
  }
  struct Src { const char* section; std::string* dest; };
  for (const Src& s : {Src{"jobs", &e.jobs_source}, Src{"disk", &e.disk_source},
                       Src{"size", &e.size_source}, Src{"time", &e.time_source}}) {
    TAILOR_TRY(t, section(s.section));
    TAILOR_TRY(v, r.str(*t, s.section, "source"));
    *s.dest = v;
  }
  return {};
}

Expected<const TorchCatalog*> torch_catalog() {
  static const Expected<TorchCatalog> loaded = []() -> Expected<TorchCatalog> {
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
      TAILOR_TRY(text, data::file(path));
      auto ok = loader(text, c);
      if (!ok) return ok.error();
    }
    return c;
  }();
  if (!loaded) return loaded.error();
  return &loaded.value();
}

}  // namespace tailor::plan
