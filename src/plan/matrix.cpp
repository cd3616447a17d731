#include "plan/matrix.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "cuda/arch_spec.h"
#include "plan/torch_catalog.h"
#include "util/files.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {

const std::set<std::string> k_axes = {"gpu", "cpu", "cuda", "python", "torch"};

Expected<MatrixRow> row_from_toml(const toml::table& t, const std::string& where) {
  MatrixRow row;
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    if (!k_axes.count(key)) return make_error(where + ": unknown matrix axis '" + key + "' (axes: gpu, cpu, cuda, python, torch)");
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
      return make_error(where + ": unknown key (known: gpu, cpu, cuda, python, torch, include, exclude, prefix)");
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

std::string gpu_label(const std::string& value) {
  std::string v = to_lower(value);
  if (v == "cpu" || v == "none") return "cpu";
  auto set = cuda::parse_arch_spec(value);
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
      if (lv == "cpu" || lv == "none") v.cpu_only = true;
      else v.arch = {value};
    } else if (k == "cpu") {
      v.cpu_target = value;
    } else if (k == "cuda") {
      auto c = parse_cuda_choice(value);
      if (c && *c) v.cuda = **c;
      else if (c) v.cpu_only = true;
      else v.cuda = value;  // resolution reports it
    } else if (k == "python") {
      v.python = value;
    } else if (k == "torch") {
      v.torch = value;
    }
  }
  return v;
}

}  // namespace

Expected<TailorConfig> parse_tailor_config(std::string_view text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return make_error(fmt::format("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description()));
  }
  TailorConfig c;
  c.path = path;
  for (const auto& [k, v] : root) {
    std::string key(k.str());
    if (key == "defaults") {
      if (!v.as_table()) return make_error(path + ": [defaults] must be a table");
      TAILOR_TRY(d, variant_from_toml(*v.as_table(), path + ": defaults"));
      c.defaults = d;
    } else if (key == "variant") {
      if (!v.as_table()) return make_error(path + ": [variant.NAME] tables expected");
      for (const auto& [name, t] : *v.as_table()) {
        if (!t.as_table()) return make_error(path + ": variant." + std::string(name.str()) + " must be a table");
        TAILOR_TRY(var, variant_from_toml(*t.as_table(), path + ": variant." + std::string(name.str())));
        var.name = std::string(name.str());
        c.variants.push_back(var);
      }
    } else if (key == "matrix") {
      if (!v.as_table()) return make_error(path + ": [matrix] must be a table");
      TAILOR_TRY(m, matrix_from_toml(*v.as_table(), path));
      c.matrix = m;
    } else {
      return make_error(path + ": unknown table '" + key + "' (known: defaults, variant, matrix)");
    }
  }
  return c;
}

Expected<TailorConfig> load_tailor_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return make_error(path + ": cannot read the config file");
  TAILOR_TRY(config, parse_tailor_config(*text, path));
  // A relative `source` means relative to the config file, wherever tailor runs from.
  auto anchor = [&](TorchVariant& v) {
    if (v.source_dir && !std::filesystem::path(*v.source_dir).is_absolute())
      v.source_dir = (std::filesystem::path(path).parent_path() / *v.source_dir).lexically_normal().string();
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
    if (label.empty()) return make_error(fmt::format("matrix: gpu '{}' is not a GPU target tailor understands", gpu->second));
    parts.push_back(label);
  }
  auto cpu = row.find("cpu");
  if (cpu != row.end()) {
    const CpuTarget* t = torch_catalog().find_cpu_target(cpu->second);
    if (!t) return make_error(fmt::format("matrix: cpu '{}' is not a CPU target tailor knows", cpu->second));
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
  if (row.count("cuda") && varies("cuda")) parts.push_back("cu" + strip(row.at("cuda")));
  if (row.count("python") && varies("python")) parts.push_back("py" + strip(row.at("python")));
  if (row.count("torch") && varies("torch")) parts.push_back("torch" + row.at("torch"));
  return join(parts, "-");
}

Expected<std::vector<TorchVariant>> config_variants(const TailorConfig& config) {
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
        return make_error(fmt::format("{}: two variants are both named '{}'", config.path, name));
      TorchVariant v = overlay(config.defaults, variant_from_row(row));
      v.name = name;
      out.push_back(v);
    }
  }
  return out;
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

std::string render_github_actions(const TailorConfig& config, const std::vector<TorchVariant>& variants) {
  std::string o;
  o += "# Generated by `tailor matrix --emit github-actions` from " + config.path + ": one job per variant.\n";
  o += "# A PyTorch build takes hours: use large runners (the plan's estimates say how large).\n";
  o += "# `tailor` must be on PATH on the runner (install it in a setup step or a runner image).\n";
  o += "name: pytorch-builds\n";
  o += "on:\n  workflow_dispatch:\n";
  o += "jobs:\n";
  for (const auto& v : variants) {
    std::string runner = v.platform && (*v.platform == "aarch64" || *v.platform == "arm64") ? "ubuntu-22.04-arm" : "ubuntu-22.04";
    o += fmt::format("  {}:\n", v.name);
    o += fmt::format("    name: {}\n", v.name);
    o += fmt::format("    runs-on: {}\n", runner);
    o += "    timeout-minutes: 720\n";
    o += "    steps:\n";
    o += "      - uses: actions/checkout@v4\n";
    o += "      - name: Pre-flight checks\n";
    o += fmt::format("        run: tailor doctor --config {} --variant {}\n", config.path, v.name);
    o += "      - name: Build\n";
    o += fmt::format("        run: tailor build torch --config {} --variant {} --out dist/{}\n", config.path, v.name, v.name);
    o += "      - uses: actions/upload-artifact@v4\n";
    o += "        with:\n";
    o += fmt::format("          name: {}\n", v.name);
    o += fmt::format("          path: dist/{}/\n", v.name);
  }
  return o;
}

}  // namespace tailor::plan
