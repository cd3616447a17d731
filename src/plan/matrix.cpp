#include "plan/matrix.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "cache/cache_settings.h"
#include "cache/tailor_toml.h"
#include "cuda/arch_spec.h"
#include "cuda/nvcc_capabilities.h"
#include "cuda/target_request.h"
#include "plan/torch_catalog.h"
#include "plan/torch_platform.h"
#include "util/files.h"
#include "util/strings.h"

namespace tailor::plan {
using namespace tailor::cache;

namespace {

const std::set<std::string> k_axes = {"gpu", "cpu", "cuda", "python", "torch"};
/// Above this many combinations (or row-against-exclude checks) a matrix with exclude rows
/// is not walked to count them: its product is reported. expand_rows builds the product
/// before excluding, so this also bounds its memory (a few MB).
constexpr uint64_t k_max_rows_walked = 20'000;
constexpr uint64_t k_max_checks_walked = 2'000'000;
/// Problems listed in one error; the rest are counted.
constexpr size_t k_max_problems_listed = 40;

/// For messages: control characters as \xNN, so a problem stays on one line.
std::string printable(std::string_view s) {
  std::string out;
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += ch;
  }
  return out;
}

Expected<MatrixRow> row_from_toml(const toml::table& t, const std::string& where) {
  MatrixRow row;
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    if (!k_axes.count(key))
      return make_error(where + ": unknown matrix axis '" + key +
                        "' (axes: gpu, cpu, cuda, python, torch)");
    auto s = v.value<std::string>();
    if (!s) return make_error(where + "." + key + ": must be a quoted string");
    row[key] = *s;
  }
  return row;
}

Expected<MatrixSpec> matrix_from_toml(const toml::table& t, const std::string& file) {
  MatrixSpec m;
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    std::string where = file + ": matrix." + key;
    if (key == "prefix") {
      auto s = v.value<std::string>();
      if (!s) return make_error(where + ": must be a string");
      m.prefix = *s;
    } else if (key == "include" || key == "exclude") {
      const toml::array* a = v.as_array();
      if (!a) return make_error(where + ": must be a list of tables");
      for (size_t i = 0; i < a->size(); ++i) {
        const toml::table* row = (*a)[i].as_table();
        if (!row) return make_error(where + "[" + std::to_string(i) + "]: must be a table");
        TAILOR_TRY(r, row_from_toml(*row, where + "[" + std::to_string(i) + "]"));
        (key == "include" ? m.include : m.exclude).push_back(r);
      }
    } else if (k_axes.count(key)) {
      const toml::array* a = v.as_array();
      if (!a || a->empty()) return make_error(where + ": must be a non-empty list of strings");
      MatrixAxis axis{key, {}};
      for (const auto& e : *a) {
        auto s = e.value<std::string>();
        if (!s) return make_error(where + ": must be a list of quoted strings");
        axis.values.push_back(*s);
      }
      m.axes.push_back(axis);
    } else {
      return make_error(
          where + ": unknown key (known: gpu, cpu, cuda, python, torch, include, exclude, prefix)");
    }
  }
  return m;
}

bool row_matches(const MatrixRow& row, const MatrixRow& pattern) {
  for (const auto& [k, v] : pattern) {
    auto it = row.find(k);
    if (it == row.end() || to_lower(it->second) != to_lower(v)) return false;
  }
  return true;
}

/// A gpu axis value's targets: `arch` of its variant, so resolved as plan resolves them.
Expected<cuda::TargetSet> gpu_axis_targets(const std::string& value) {
  cuda::TargetRequest request;
  request.arch = {value};
  request.prefix_errors = false;
  TAILOR_TRY(resolved, cuda::resolve_target_request(request));
  return resolved.targets;
}

std::string gpu_label(const std::string& value) {
  std::string v = to_lower(value);
  if (v == "cpu" || v == "none") return "cpu";
  auto set = gpu_axis_targets(value);
  if (!set || set->empty()) return "";
  std::vector<std::string> parts;
  for (const auto& t : set->targets) {
    if (t.kind == cuda::TargetKind::sass) {
      std::string s = "sm" + t.digits();
      if (set->contains(cuda::ptx(t.cc, t.variant))) s += "ptx";
      parts.push_back(s);
    } else if (!set->contains(cuda::sass(t.cc, t.variant))) {
      parts.push_back("ptx" + t.digits());
    }
  }
  return join(parts, "-");
}

TorchVariant variant_from_row(const MatrixRow& row) {
  TorchVariant v;
  for (const auto& [k, value] : row) {
    if (k == "gpu") {
      std::string lv = to_lower(value);
      if (lv == "cpu" || lv == "none")
        v.cpu_only = true;
      else
        v.arch = {value};
    } else if (k == "cpu") {
      v.cpu_target = value;
    } else if (k == "cuda") {
      // check_config has refused a value that does not parse before any row is built.
      auto c = parse_cuda_choice(value);
      if (c && *c)
        v.cuda = **c;
      else if (c)
        v.cpu_only = true;
    } else if (k == "python") {
      v.python = value;
    } else if (k == "torch") {
      v.torch = value;
    }
  }
  return v;
}

// [defaults], [variant.NAME], [matrix] and [ci] of a tailor.toml; the loader
// (cache/tailor_toml.h) has read [cache] and refused any other table.
Expected<TailorConfig> config_from(const cache::TailorToml& file) {
  const std::string& path = file.document.file();
  TailorConfig c;
  c.path = path;
  c.cache = file.cache;
  for (const auto& [k, v] : file.document.table()) {
    std::string key(k.str());
    if (key == "defaults") {
      if (!v.as_table()) return make_error(path + ": [defaults] must be a table");
      TAILOR_TRY(d, variant_from_toml(*v.as_table(), path + ": defaults"));
      c.defaults = d;
    } else if (key == "variant") {
      if (!v.as_table()) return make_error(path + ": [variant.NAME] tables expected");
      for (const auto& [name, t] : *v.as_table()) {
        if (!t.as_table())
          return make_error(path + ": variant." + std::string(name.str()) + " must be a table");
        TAILOR_TRY(var,
                   variant_from_toml(*t.as_table(), path + ": variant." + std::string(name.str())));
        var.name = std::string(name.str());
        c.variants.push_back(var);
      }
    } else if (key == "matrix") {
      if (!v.as_table()) return make_error(path + ": [matrix] must be a table");
      TAILOR_TRY(m, matrix_from_toml(*v.as_table(), path));
      c.matrix = m;
    } else if (key == "ci") {
      if (!v.as_table()) return make_error(path + ": [ci] must be a table");
      TAILOR_TRY(ci, parse_ci_table(*v.as_table(), path));
      c.ci = ci;
    }
  }
  return c;
}

}  // namespace

Expected<TailorConfig> parse_tailor_config(std::string_view text, const std::string& path) {
  TAILOR_TRY(file, cache::parse_tailor_toml(text, path));
  return config_from(file);
}

Expected<TailorConfig> load_tailor_config(const std::string& path) {
  TAILOR_TRY(file, cache::load_tailor_toml(path));
  TAILOR_TRY(config, config_from(file));
  // A relative `source` means relative to the config file, wherever tailor runs from.
  auto anchor = [&](TorchVariant& v) {
    if (v.source_dir && !std::filesystem::path(*v.source_dir).is_absolute())
      v.source_dir =
          (std::filesystem::path(path).parent_path() / *v.source_dir).lexically_normal().string();
  };
  anchor(config.defaults);
  for (auto& v : config.variants) anchor(v);
  return config;
}

std::vector<MatrixRow> expand_rows(const MatrixSpec& spec) {
  std::vector<MatrixRow> rows;
  if (!spec.axes.empty()) rows.push_back({});
  for (const auto& axis : spec.axes) {
    std::vector<MatrixRow> next;
    for (const auto& r : rows)
      for (const auto& value : axis.values) {
        MatrixRow n = r;
        n[axis.name] = value;
        next.push_back(n);
      }
    rows = std::move(next);
  }
  std::vector<MatrixRow> kept;
  for (const auto& r : rows) {
    bool excluded = false;
    for (const auto& ex : spec.exclude) excluded = excluded || row_matches(r, ex);
    if (!excluded) kept.push_back(r);
  }
  for (const auto& inc : spec.include) {
    // GitHub Actions semantics: an include row extends every kept row it matches on the
    // axes they share; one that matches none is added as a new row.
    bool merged = false;
    for (auto& r : kept) {
      bool compatible = true, shares = false;
      for (const auto& [k, v] : inc) {
        auto it = r.find(k);
        if (it == r.end()) continue;
        shares = true;
        if (to_lower(it->second) != to_lower(v)) compatible = false;
      }
      if (shares && compatible && inc.size() > 0) {
        bool adds = false;
        for (const auto& [k, v] : inc)
          if (!r.count(k)) adds = true;
        if (adds) {
          for (const auto& [k, v] : inc) r[k] = v;
          merged = true;
        }
      }
    }
    if (!merged) {
      bool duplicate = false;
      for (const auto& r : kept) duplicate = duplicate || r == inc;
      if (!duplicate) kept.push_back(inc);
    }
  }
  return kept;
}

Expected<std::string> variant_name(const MatrixSpec& spec, const MatrixRow& row) {
  std::vector<std::string> parts = {spec.prefix};
  auto gpu = row.find("gpu");
  if (gpu != row.end()) {
    std::string label = gpu_label(gpu->second);
    if (label.empty())
      return make_error(
          fmt::format("matrix: gpu '{}' is not a GPU target tailor understands", gpu->second));
    parts.push_back(label);
  }
  auto cpu = row.find("cpu");
  if (cpu != row.end()) {
    const CpuTarget* t = torch_catalog().find_cpu_target(cpu->second);
    if (!t)
      return make_error(
          fmt::format("matrix: cpu '{}' is not a CPU target tailor knows", cpu->second));
    parts.push_back(t->label);
  }
  auto varies = [&](const std::string& axis) {
    for (const auto& a : spec.axes)
      if (a.name == axis) return a.values.size() > 1;
    for (const auto& inc : spec.include)
      if (inc.count(axis)) return true;
    return false;
  };
  auto strip = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
    return s;
  };
  if (row.count("cuda") && varies("cuda")) {
    auto c = parse_cuda_choice(row.at("cuda"));
    parts.push_back(c && *c ? (*c)->label() : "cu" + strip(row.at("cuda")));
  }
  if (row.count("python") && varies("python")) parts.push_back("py" + strip(row.at("python")));
  if (row.count("torch") && varies("torch")) parts.push_back("torch" + row.at("torch"));
  return join(parts, "-");
}

bool valid_variant_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
  });
}

MatrixCount count_rows(const MatrixSpec& spec) {
  constexpr uint64_t k_max = std::numeric_limits<uint64_t>::max();
  const uint64_t includes = spec.include.size();
  if (spec.axes.empty()) return {includes, true};
  uint64_t product = 1;
  for (const auto& a : spec.axes) {
    uint64_t n = a.values.size();
    if (n != 0 && product > k_max / n) return {k_max, false};
    product *= n;
  }
  if (spec.exclude.empty()) return {product > k_max - includes ? k_max : product + includes, true};
  if (product > k_max_rows_walked || product * spec.exclude.size() > k_max_checks_walked)
    return {product, false};
  // Walk the product as an odometer, one row alive at a time.
  std::vector<size_t> index(spec.axes.size(), 0);
  MatrixRow row;
  for (const auto& a : spec.axes) row[a.name] = a.values.front();
  uint64_t kept = 0;
  for (;;) {
    bool excluded = std::any_of(spec.exclude.begin(), spec.exclude.end(),
                                [&](const MatrixRow& ex) { return row_matches(row, ex); });
    if (!excluded) ++kept;
    size_t i = spec.axes.size();
    while (i > 0) {
      --i;
      const auto& a = spec.axes[i];
      if (++index[i] < a.values.size()) {
        row[a.name] = a.values[index[i]];
        break;
      }
      index[i] = 0;
      row[a.name] = a.values.front();
      if (i == 0) return {kept + includes, true};
    }
  }
}

namespace {

/// The torch releases a matrix builds: its torch axis and include rows, else the
/// defaults' torch, else the newest release; empty with a local source tree and no torch.
std::vector<std::string> matrix_torches(const TailorConfig& config, const TorchCatalog& cat) {
  std::vector<std::string> out;
  for (const auto& a : config.matrix->axes)
    if (a.name == "torch") out = a.values;
  for (const auto& inc : config.matrix->include)
    if (inc.count("torch")) out.push_back(inc.at("torch"));
  if (!out.empty()) return out;
  if (config.defaults.torch) return {*config.defaults.torch};
  if (config.defaults.source_dir) return {};
  const TorchRelease* newest = nullptr;
  for (const auto& r : cat.releases)
    if (!newest || compare_versions(r.version, newest->version) > 0) newest = &r;
  if (newest) out.push_back(newest->version);
  return out;
}

std::string strip_v(const std::string& s) { return s.rfind("v", 0) == 0 ? s.substr(1) : s; }

void check_axis_value(const std::string& axis, const std::string& value, const std::string& where,
                      const TorchCatalog& cat, const std::vector<std::string>& torches,
                      bool from_source, std::vector<std::string>& problems) {
  const std::string shown = printable(value);
  const std::string lv = to_lower(trim(value));
  if (axis == "gpu") {
    if (lv == "cpu" || lv == "none") return;
    auto set = gpu_axis_targets(value);
    if (!set)
      problems.push_back(
          fmt::format("{}: '{}' is not a GPU target: {}", where, shown, set.error().message));
  } else if (axis == "cpu") {
    if (!cat.find_cpu_target(value)) {
      std::vector<std::string> known;
      for (const auto& t : cat.cpu_targets) known.push_back(t.name);
      problems.push_back(fmt::format("{}: '{}' is not a CPU target tailor knows ({})", where, shown,
                                     join(known, ", ")));
    }
  } else if (axis == "cuda") {
    auto c = parse_cuda_choice(value);
    if (!c) {
      problems.push_back(fmt::format("{}: {}", where, c.error().message));
    } else if (*c) {
      auto known = cuda::known_cuda_versions();
      if (std::find(known.begin(), known.end(), **c) == known.end())
        problems.push_back(fmt::format("{}: CUDA '{}' is not a version tailor knows ({})", where,
                                       shown, join(cuda::to_strings(known), ", ")));
    }
  } else if (axis == "python") {
    auto parts = split_any(value, ".");
    bool shape =
        parts.size() == 2 && std::all_of(parts.begin(), parts.end(), [](const std::string& p) {
          return !p.empty() && p.size() <= 3 &&
                 p.find_first_not_of("0123456789") == std::string::npos;
        });
    if (!shape) {
      problems.push_back(fmt::format("{}: Python '{}' is not a version like 3.12", where, shown));
      return;
    }
    std::vector<std::string> supported;
    bool any_known = false, ok = false;
    for (const auto& t : torches) {
      const TorchRelease* rel = cat.find_release(strip_v(t));
      if (!rel) continue;
      any_known = true;
      for (const auto& py : rel->pythons) {
        if (py == value) ok = true;
        if (std::find(supported.begin(), supported.end(), py) == supported.end())
          supported.push_back(py);
      }
    }
    if (any_known && !ok)
      problems.push_back(fmt::format("{}: Python {} is not supported by torch {} (supported: {})",
                                     where, shown, join(torches, ", "), join(supported, ", ")));
  } else if (axis == "torch") {
    if (from_source || cat.find_release(strip_v(value))) return;
    std::vector<std::string> known;
    for (const auto& r : cat.releases) known.push_back(r.version);
    problems.push_back(fmt::format("{}: torch '{}' is not a release tailor knows ({})", where,
                                   shown, join(known, ", ")));
  }
}

/// The variants, without checks: named ones, then the matrix's rows.
Expected<std::vector<TorchVariant>> build_variants(const TailorConfig& config) {
  std::vector<TorchVariant> out;
  std::set<std::string> names;
  for (const auto& v : config.variants) {
    out.push_back(overlay(config.defaults, v));
    names.insert(v.name);
  }
  if (config.matrix) {
    for (const auto& row : expand_rows(*config.matrix)) {
      TAILOR_TRY(name, variant_name(*config.matrix, row));
      if (!names.insert(name).second)
        return make_error(
            fmt::format("{}: two variants are both named '{}'", config.path, printable(name)));
      TorchVariant v = overlay(config.defaults, variant_from_row(row));
      v.name = name;
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> check_config(const TailorConfig& config) {
  std::vector<std::string> problems;
  const std::string& file = config.path;
  auto bad_name = [&](const std::string& what, const std::string& name) {
    problems.push_back(fmt::format("{}: {} '{}' is not a valid name (1-64 of A-Z a-z 0-9 . _ -)",
                                   file, what, printable(name)));
  };
  for (const auto& v : config.variants)
    if (!valid_variant_name(v.name)) bad_name("variant", v.name);
  const TorchCatalog* cat = &torch_catalog();
  bool size_ok = true;
  if (config.matrix) {
    const MatrixSpec& m = *config.matrix;
    if (!valid_variant_name(m.prefix)) bad_name("matrix.prefix", m.prefix);
    const auto torches = matrix_torches(config, *cat);
    const bool from_source = config.defaults.source_dir.has_value();
    for (const auto& a : m.axes)
      for (size_t i = 0; i < a.values.size(); ++i)
        check_axis_value(a.name, a.values[i], fmt::format("{}: matrix.{}[{}]", file, a.name, i),
                         *cat, torches, from_source, problems);
    for (auto [rows, key] : {std::pair{&m.include, "include"}, std::pair{&m.exclude, "exclude"}})
      for (size_t i = 0; i < rows->size(); ++i)
        for (const auto& [axis, value] : (*rows)[i])
          check_axis_value(axis, value, fmt::format("{}: matrix.{}[{}].{}", file, key, i, axis),
                           *cat, torches, from_source, problems);
    MatrixCount n = count_rows(m);
    if (n.rows > k_max_matrix_variants) {
      size_ok = false;
      std::vector<std::string> sizes;
      for (const auto& a : m.axes) sizes.push_back(fmt::format("{} {}", a.name, a.values.size()));
      problems.push_back(
          fmt::format("{}: the matrix expands to {} {} ({}), more than the limit of {}; narrow the "
                      "axes or add exclude rows",
                      file, n.rows, n.exact ? "variants" : "combinations before exclude rows",
                      join(sizes, " x "), k_max_matrix_variants));
    }
  }
  if (!problems.empty() || !size_ok) return problems;
  // Names made by the matrix, and platforms that contradict the GPUs of a variant.
  auto variants = build_variants(config);
  if (!variants) return {variants.error().message};
  for (const auto& v : *variants) {
    if (!valid_variant_name(v.name)) bad_name("variant", v.name);
    if (auto p = variant_platform(v.platform, v.arch); !p)
      problems.push_back(
          fmt::format("{}: variant {}: {}", file, printable(v.name), p.error().message));
  }
  return problems;
}

Expected<std::vector<TorchVariant>> config_variants(const TailorConfig& config) {
  auto problems = check_config(config);
  if (problems.size() == 1) return make_error(problems.front());
  if (!problems.empty()) {
    std::string msg = fmt::format("{}: {} problems:", config.path, problems.size());
    for (size_t i = 0; i < problems.size() && i < k_max_problems_listed; ++i)
      msg += "\n  " + problems[i];
    if (problems.size() > k_max_problems_listed)
      msg += fmt::format("\n  ... and {} more", problems.size() - k_max_problems_listed);
    return make_error(msg);
  }
  return build_variants(config);
}

Expected<TorchVariant> find_config_variant(const TailorConfig& config, std::string_view name) {
  TAILOR_TRY(all, config_variants(config));
  std::vector<std::string> names;
  for (const auto& v : all) {
    if (v.name == name) return v;
    names.push_back(v.name);
  }
  return make_error(fmt::format("{}: no variant named '{}' (variants: {})", config.path, name,
                                names.empty() ? "none" : join(names, ", ")));
}

}  // namespace tailor::plan
