#include "plan/extension_recipe.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <toml++/toml.h>

#include "cuda/cuda_target.h"
#include "data/data_files.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {

constexpr std::string_view k_recipe_dir = "recipes/";
constexpr std::string_view k_generic = "generic";

Expected<std::map<std::string, std::string>> string_table(const toml::table& doc,
                                                          std::string_view path,
                                                          const std::string& where) {
  std::map<std::string, std::string> out;
  auto node = doc.at_path(path);
  if (!node) return out;
  const auto* t = node.as_table();
  if (!t) return make_error(where + ": '" + std::string(path) + "' must be a table");
  for (const auto& [k, v] : *t) {
    auto s = v.value<std::string>();
    if (!s)
      return make_error(where + ": '" + std::string(path) + "." + std::string(k.str()) +
                        "' must be a string");
    out.emplace(std::string(k.str()), *s);
  }
  return out;
}

Expected<std::vector<std::string>> string_list(const toml::table& doc, std::string_view path,
                                               const std::string& where) {
  std::vector<std::string> out;
  auto node = doc.at_path(path);
  if (!node) return out;
  const auto* arr = node.as_array();
  if (!arr) return make_error(where + ": '" + std::string(path) + "' must be an array");
  for (const auto& e : *arr) {
    auto s = e.value<std::string>();
    if (!s) return make_error(where + ": '" + std::string(path) + "' must hold strings");
    out.push_back(*s);
  }
  return out;
}

template <typename Enum, size_t N>
Expected<Enum> parse_enum(const toml::table& doc, std::string_view path, const std::string& where,
                          const std::pair<std::string_view, Enum> (&names)[N], Enum fallback) {
  auto node = doc.at_path(path);
  if (!node) return fallback;
  auto s = node.value<std::string>();
  std::string allowed;
  for (const auto& [n, e] : names) {
    if (s && *s == n) return e;
    allowed += (allowed.empty() ? "" : ", ") + std::string(n);
  }
  return make_error(where + ": '" + std::string(path) + "' must be one of " + allowed);
}

constexpr std::pair<std::string_view, BuildSystem> k_build_systems[] = {
    {"pip", BuildSystem::pip}, {"cmake_then_pip", BuildSystem::cmake_then_pip}};
constexpr std::pair<std::string_view, ArchVia> k_arch_vias[] = {
    {"env", ArchVia::env}, {"cmake_define", ArchVia::cmake_define}, {"patch", ArchVia::patch}};
constexpr std::pair<std::string_view, ArchSpelling> k_spellings[] = {
    {"torch", ArchSpelling::torch},       {"cmake", ArchSpelling::cmake},
    {"flash_attn", ArchSpelling::flash_attn}, {"bnb", ArchSpelling::bnb},
    {"gencode", ArchSpelling::gencode}};
constexpr std::pair<std::string_view, CacheHook> k_hooks[] = {
    {"torch_env", CacheHook::torch_env},
    {"cmake_launcher", CacheHook::cmake_launcher}};

/// `[[patch]]` / `[[parallel.patch]]`: the same fields; the marker in the replacement
/// makes re-applying idempotent.
Expected<std::vector<RecipePatch>> parse_patches(const toml::table& doc, std::string_view path,
                                                 const std::string& where) {
  std::vector<RecipePatch> out;
  auto node = doc.at_path(path);
  if (!node) return out;
  const auto* patches = node.as_array();
  if (!patches) return make_error(where + ": '" + std::string(path) + "' must be an array of tables");
  for (size_t i = 0; i < patches->size(); ++i) {
    const auto* t = (*patches)[i].as_table();
    const std::string pw = where + ": " + std::string(path) + " #" + std::to_string(i + 1);
    if (!t) return make_error(pw + ": not a table");
    RecipePatch p;
    p.file = (*t)["file"].value_or(std::string());
    p.description = (*t)["description"].value_or(std::string());
    p.start = (*t)["start"].value_or(std::string());
    p.end = (*t)["end"].value_or(std::string());
    p.replace = (*t)["replace"].value_or(std::string());
    p.marker = (*t)["marker"].value_or(std::string());
    for (auto [field, value] : {std::pair{"file", &p.file}, {"start", &p.start}, {"end", &p.end},
                                {"replace", &p.replace}, {"marker", &p.marker}})
      if (value->empty()) return make_error(pw + ": '" + field + "' is missing");
    if (p.replace.find(p.marker) == std::string::npos)
      return make_error(pw + ": 'replace' must contain the marker");
    for (auto [field, value] : {std::pair{"start", &p.start}, {"end", &p.end}}) {
      try {
        std::regex check(*value, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return make_error(pw + ": '" + field + "' is not a valid regex: " + e.what());
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ExtensionRecipe> load_all() {
  std::vector<ExtensionRecipe> recipes;
  for (const auto& f : data::all_files()) {
    if (f.path.substr(0, k_recipe_dir.size()) != k_recipe_dir || !f.path.ends_with(".toml"))
      continue;
    auto r = parse_recipe(f.text, "data/" + std::string(f.path));
    if (!r) {
      std::fprintf(stderr, "tailor: internal error: %s\n", r.error().message.c_str());
      std::abort();
    }
    recipes.push_back(std::move(r).value());
  }
  if (std::none_of(recipes.begin(), recipes.end(),
                   [](const ExtensionRecipe& r) { return r.name == k_generic; })) {
    std::fprintf(stderr, "tailor: internal error: data/recipes/generic.toml is missing\n");
    std::abort();
  }
  return recipes;
}

}  // namespace

std::string normalise_dist_name(std::string_view name) {
  std::string out;
  bool in_sep = false;
  for (char c : trim(name)) {
    if (c == '-' || c == '_' || c == '.') {
      in_sep = true;
      continue;
    }
    if (in_sep && !out.empty()) out.push_back('-');
    in_sep = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

Expected<ExtensionRecipe> parse_recipe(std::string_view toml_text, std::string_view source_name) {
  const std::string where(source_name);
  toml::table doc;
  try {
    doc = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    return make_error(where + ":" + std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  ExtensionRecipe r;
  auto name = doc["name"].value<std::string>();
  if (!name || name->empty()) return make_error(where + ": 'name' is missing");
  r.name = normalise_dist_name(*name);
  if (r.name != *name) return make_error(where + ": 'name' must be the normalised dist name '" + r.name + "'");
  TAILOR_TRY(aliases, string_list(doc, "aliases", where));
  for (auto& a : aliases) r.aliases.push_back(normalise_dist_name(a));
  r.import_name = doc["import_name"].value_or(std::string());
  r.checked = doc["checked"].value_or(std::string());
  if (r.checked.empty()) return make_error(where + ": 'checked' (what the recipe was checked against) is missing");
  r.smoke_test = doc["smoke_test"].value_or(std::string());
  r.notes = doc["notes"].value_or(std::string());
  TAILOR_TRY(build_system, parse_enum(doc, "build_system", where, k_build_systems, BuildSystem::pip));
  r.build_system = build_system;

  TAILOR_TRY(via, parse_enum(doc, "arch.via", where, k_arch_vias, ArchVia::env));
  TAILOR_TRY(spelling, parse_enum(doc, "arch.spelling", where, k_spellings, ArchSpelling::torch));
  r.arch_via = via;
  r.arch_spelling = spelling;
  r.arch_variable = doc.at_path("arch.variable").value_or(std::string());
  r.also_torch_arch_list = doc.at_path("arch.also_torch_arch_list").value_or(false);
  if (r.arch_via != ArchVia::patch && r.arch_variable.empty())
    return make_error(where + ": 'arch.variable' is required unless arch.via = \"patch\"");

  TAILOR_TRY(force_cuda, string_table(doc, "env.force_cuda", where));
  TAILOR_TRY(force_build, string_table(doc, "env.force_build", where));
  TAILOR_TRY(extra, string_table(doc, "env.extra", where));
  TAILOR_TRY(unset, string_list(doc, "unset_env", where));
  r.force_cuda_env = std::move(force_cuda);
  r.force_build_env = std::move(force_build);
  r.extra_env = std::move(extra);
  r.unset_env = std::move(unset);

  r.jobs_variable = doc.at_path("jobs.variable").value_or(std::string("MAX_JOBS"));
  r.memory_per_job_gib = doc.at_path("jobs.memory_per_job_gib").value_or(3.0);
  if (!(r.memory_per_job_gib > 0.0))
    return make_error(where + ": 'jobs.memory_per_job_gib' must be positive");
  r.memory_per_nvcc_thread = doc.at_path("jobs.memory_per_nvcc_thread").value_or(false);
  r.nvcc_threads = static_cast<int>(doc.at_path("jobs.nvcc_threads").value_or(int64_t{1}));
  if (r.nvcc_threads < 1) return make_error(where + ": 'jobs.nvcc_threads' must be at least 1");
  r.nvcc_threads_variable = doc.at_path("jobs.nvcc_threads_variable").value_or(std::string());
  r.nvcc_threads_in_flags = doc.at_path("jobs.nvcc_threads_in_flags").value_or(false);
  r.jobs_count_nvcc_threads = doc.at_path("jobs.jobs_count_nvcc_threads").value_or(false);
  r.serial = doc.at_path("jobs.serial").value_or(false);

  TAILOR_TRY(hook, parse_enum(doc, "cache.hook", where, k_hooks, CacheHook::torch_env));
  r.cache_hook = hook;
  TAILOR_TRY(cmake_args, string_list(doc, "cmake.args", where));
  TAILOR_TRY(pip_args, string_list(doc, "pip.args", where));
  r.cmake_args = std::move(cmake_args);
  r.pip_args = std::move(pip_args);

  TAILOR_TRY(patches, parse_patches(doc, "patch", where));
  r.patches = std::move(patches);
  if (r.arch_via == ArchVia::patch && r.patches.empty())
    return make_error(where + ": arch.via = \"patch\" needs at least one [[patch]]");

  // [verify]: what the package adds by design.
  if (auto node = doc.at_path("verify.adds")) {
    std::vector<std::string> adds;
    if (auto one = node.value<std::string>()) {
      adds.push_back(*one);
    } else {
      TAILOR_TRY(list, string_list(doc, "verify.adds", where));
      adds = std::move(list);
    }
    for (auto a : adds) {
      for (auto& c : a)
        if (c == '-') c = '_';
      if (a == "ptx_of_highest") r.verify.ptx_of_highest = true;
      else if (a == "ptx_of_each") r.verify.ptx_of_each = true;
      else
        return make_error(where + ": 'verify.adds' holds '" + a +
                          "'; must be ptx_of_highest or ptx_of_each (fixed targets go in verify.extra_targets)");
    }
  }
  TAILOR_TRY(extra_targets, string_list(doc, "verify.extra_targets", where));
  for (const auto& t : extra_targets) {
    if (auto parsed = cuda::parse_target_name(t); !parsed)
      return make_error(where + ": 'verify.extra_targets' holds '" + t + "': " + parsed.error().message);
  }
  r.verify.extra_targets = std::move(extra_targets);
  r.verify.why = doc.at_path("verify.why").value_or(std::string());
  if (r.verify.any() && r.verify.why.empty())
    return make_error(where + ": 'verify.why' (where the package adds the targets) is missing");

  // [parallel]: how a serial package is made to use the cores.
  if (doc.at_path("parallel")) {
    if (!r.serial) return make_error(where + ": '[parallel]' is only for packages with jobs.serial = true");
    ParallelFix fix;
    fix.summary = doc.at_path("parallel.summary").value_or(std::string());
    fix.limit = doc.at_path("parallel.limit").value_or(std::string());
    if (fix.summary.empty()) return make_error(where + ": 'parallel.summary' is missing");
    TAILOR_TRY(fix_patches, parse_patches(doc, "parallel.patch", where));
    if (fix_patches.empty()) return make_error(where + ": '[parallel]' needs at least one [[parallel.patch]]");
    fix.patches = std::move(fix_patches);
    r.parallel_fix = std::move(fix);
  }

  // [profile.<name>]: restrictions the package allows.
  if (auto node = doc.at_path("profile")) {
    const auto* profiles = node.as_table();
    if (!profiles) return make_error(where + ": 'profile' must be a table of [profile.<name>] tables");
    for (const auto& [key, value] : *profiles) {
      const std::string name(key.str());
      const std::string pw = where + ": profile." + name;
      if (!value.as_table()) return make_error(pw + ": not a table");
      RecipeProfile prof;
      prof.name = name;
      prof.description = value.as_table()->at_path("description").value_or(std::string());
      if (prof.description.empty()) return make_error(pw + ": 'description' is missing");
      TAILOR_TRY(env, string_table(doc, "profile." + name + ".env", where));
      if (env.empty()) return make_error(pw + ": 'env' is missing or empty");
      prof.env = std::move(env);
      r.profiles.push_back(std::move(prof));
    }
  }
  return r;
}

const std::vector<ExtensionRecipe>& all_recipes() {
  static const std::vector<ExtensionRecipe> recipes = load_all();
  return recipes;
}

const ExtensionRecipe& recipe_for(std::string_view package_name) {
  const std::string wanted = normalise_dist_name(package_name);
  const auto& recipes = all_recipes();
  const ExtensionRecipe* generic = nullptr;
  for (const auto& r : recipes) {
    if (r.name == k_generic) generic = &r;
    if (r.name == wanted) return r;
    if (std::find(r.aliases.begin(), r.aliases.end(), wanted) != r.aliases.end()) return r;
  }
  return *generic;
}

}  // namespace tailor::plan
