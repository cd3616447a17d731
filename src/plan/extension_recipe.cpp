#include "plan/extension_recipe.h"

#include <algorithm>
#include <regex>

#include "cuda/cuda_target.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {

constexpr std::string_view k_recipe_dir = "recipes/";
constexpr std::string_view k_generic = "generic";

template <typename Enum, size_t N>
Enum parse_enum(const data::TomlDocument& doc, std::string_view path,
                const std::pair<std::string_view, Enum> (&names)[N], Enum fallback) {
  auto node = doc.at_path(path);
  if (!node.present()) return fallback;
  std::string s = node.is_string() ? node.string() : std::string();
  std::string allowed;
  for (const auto& [n, e] : names) {
    if (s == n) return e;
    allowed += (allowed.empty() ? "" : ", ") + std::string(n);
  }
  node.fail("must be one of " + allowed);
}

constexpr std::pair<std::string_view, BuildSystem> k_build_systems[] = {
    {"pip", BuildSystem::pip}, {"cmake_then_pip", BuildSystem::cmake_then_pip}};
constexpr std::pair<std::string_view, ArchVia> k_arch_vias[] = {
    {"env", ArchVia::env}, {"cmake_define", ArchVia::cmake_define}, {"patch", ArchVia::patch}};
constexpr std::pair<std::string_view, ArchSpelling> k_spellings[] = {
    {"torch", ArchSpelling::torch},
    {"cmake", ArchSpelling::cmake},
    {"flash_attn", ArchSpelling::flash_attn},
    {"bnb", ArchSpelling::bnb},
    {"gencode", ArchSpelling::gencode}};
constexpr std::pair<std::string_view, CacheHook> k_hooks[] = {
    {"torch_env", CacheHook::torch_env}, {"cmake_launcher", CacheHook::cmake_launcher}};

ExtensionRecipe read_recipe(const data::TomlDocument& doc);

/// `[[patch]]` / `[[parallel.patch]]`: the same fields; the marker in the replacement
/// makes re-applying idempotent.
std::vector<RecipePatch> read_patches(const data::TomlValue& list) {
  std::vector<RecipePatch> out;
  for (const auto& t : list.array_or_empty()) {
    RecipePatch p;
    p.file = t["file"].value_or(std::string());
    p.description = t["description"].value_or(std::string());
    p.start = t["start"].value_or(std::string());
    p.end = t["end"].value_or(std::string());
    p.replace = t["replace"].value_or(std::string());
    p.marker = t["marker"].value_or(std::string());
    for (auto [field, value] : {std::pair{"file", &p.file},
                                {"start", &p.start},
                                {"end", &p.end},
                                {"replace", &p.replace},
                                {"marker", &p.marker}})
      if (value->empty()) t[field].fail("missing or empty");
    if (p.replace.find(p.marker) == std::string::npos) t["replace"].fail("must contain the marker");
    for (auto [field, value] : {std::pair{"start", &p.start}, {"end", &p.end}}) {
      try {
        std::regex check(*value, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        t[field].fail(std::string("not a valid regex: ") + e.what());
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
    recipes.push_back(read_recipe(data::toml_document(f.path)));
  }
  if (std::none_of(recipes.begin(), recipes.end(),
                   [](const ExtensionRecipe& r) { return r.name == k_generic; })) {
    throw data::DataError("data/recipes/generic.toml is missing");
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
  return data::expected_from(
      [&] { return read_recipe(data::parse_toml(toml_text, std::string(source_name))); });
}

namespace {

ExtensionRecipe read_recipe(const data::TomlDocument& doc) {
  ExtensionRecipe r;
  std::string name = doc["name"].string();
  if (name.empty()) doc["name"].fail("empty");
  r.name = normalise_dist_name(name);
  if (r.name != name) doc["name"].fail("must be the normalised dist name '" + r.name + "'");
  for (auto& a : doc["aliases"].strings_or_empty()) r.aliases.push_back(normalise_dist_name(a));
  r.import_name = doc["import_name"].value_or(std::string());
  r.checked = doc["checked"].value_or(std::string());
  if (r.checked.empty()) doc.fail("'checked' (what the recipe was checked against) is missing");
  r.smoke_test = doc["smoke_test"].value_or(std::string());
  r.undeclared_requires = doc["undeclared_requires"].strings_or_empty();
  for (const auto& m : r.undeclared_requires)
    if (m.empty() ||
        m.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
            std::string::npos)
      doc["undeclared_requires"].fail("'" + m + "' is not a Python module name");
  r.notes = doc["notes"].value_or(std::string());
  r.build_system = parse_enum(doc, "build_system", k_build_systems, BuildSystem::pip);

  r.arch_via = parse_enum(doc, "arch.via", k_arch_vias, ArchVia::env);
  r.arch_spelling = parse_enum(doc, "arch.spelling", k_spellings, ArchSpelling::torch);
  r.arch_variable = doc.at_path("arch.variable").value_or(std::string());
  r.also_torch_arch_list = doc.at_path("arch.also_torch_arch_list").value_or(false);
  if (r.arch_via != ArchVia::patch && r.arch_variable.empty())
    doc.fail("'arch.variable' is required unless arch.via = \"patch\"");

  r.force_cuda_env = doc.at_path("env.force_cuda").string_table_or_empty();
  r.force_build_env = doc.at_path("env.force_build").string_table_or_empty();
  r.extra_env = doc.at_path("env.extra").string_table_or_empty();
  r.unset_env = doc["unset_env"].strings_or_empty();

  r.jobs_variable = doc.at_path("jobs.variable").value_or(std::string("MAX_JOBS"));
  r.memory_per_job_gib = doc.at_path("jobs.memory_per_job_gib").value_or(3.0);
  if (!(r.memory_per_job_gib > 0.0))
    doc.at_path("jobs.memory_per_job_gib").fail("must be positive");
  r.memory_per_nvcc_thread = doc.at_path("jobs.memory_per_nvcc_thread").value_or(false);
  r.nvcc_threads = static_cast<int>(doc.at_path("jobs.nvcc_threads").value_or(int64_t{1}));
  if (r.nvcc_threads < 1) doc.at_path("jobs.nvcc_threads").fail("must be at least 1");
  r.nvcc_threads_variable = doc.at_path("jobs.nvcc_threads_variable").value_or(std::string());
  r.nvcc_threads_in_flags = doc.at_path("jobs.nvcc_threads_in_flags").value_or(false);
  r.jobs_count_nvcc_threads = doc.at_path("jobs.jobs_count_nvcc_threads").value_or(false);
  r.serial = doc.at_path("jobs.serial").value_or(false);

  r.cache_hook = parse_enum(doc, "cache.hook", k_hooks, CacheHook::torch_env);
  r.cmake_args = doc.at_path("cmake.args").strings_or_empty();

  r.patches = read_patches(doc["patch"]);
  if (r.arch_via == ArchVia::patch && r.patches.empty())
    doc.fail("arch.via = \"patch\" needs at least one [[patch]]");

  // [verify]: what the package adds by design.
  if (auto node = doc.at_path("verify.adds"); node.present()) {
    std::vector<std::string> adds =
        node.is_string() ? std::vector<std::string>{node.string()} : node.strings();
    for (auto a : adds) {
      for (auto& c : a)
        if (c == '-') c = '_';
      if (a == "ptx_of_highest")
        r.verify.ptx_of_highest = true;
      else if (a == "ptx_of_each")
        r.verify.ptx_of_each = true;
      else
        node.fail(
            "holds '" + a +
            "'; must be ptx_of_highest or ptx_of_each (fixed targets go in verify.extra_targets)");
    }
  }
  r.verify.extra_targets = doc.at_path("verify.extra_targets").strings_or_empty();
  for (const auto& t : r.verify.extra_targets)
    if (auto parsed = cuda::parse_target_name(t); !parsed)
      doc.at_path("verify.extra_targets").fail("holds '" + t + "': " + parsed.error().message);
  r.verify.why = doc.at_path("verify.why").value_or(std::string());
  if (r.verify.any() && r.verify.why.empty())
    doc.fail("'verify.why' (where the package adds the targets) is missing");

  // [parallel]: how a serial package is made to use the cores.
  if (doc["parallel"].present()) {
    if (!r.serial) doc.fail("'[parallel]' is only for packages with jobs.serial = true");
    ParallelFix fix;
    fix.summary = doc.at_path("parallel.summary").string();
    fix.limit = doc.at_path("parallel.limit").value_or(std::string());
    fix.patches = read_patches(doc.at_path("parallel.patch"));
    if (fix.patches.empty()) doc.fail("'[parallel]' needs at least one [[parallel.patch]]");
    r.parallel_fix = std::move(fix);
  }

  // [profile.<name>]: restrictions the package allows.
  for (const auto& [name, value] : doc["profile"].entries_or_empty()) {
    RecipeProfile prof;
    prof.name = name;
    prof.description = value["description"].string();
    prof.env = value["env"].string_table();
    if (prof.env.empty()) value["env"].fail("is empty");
    r.profiles.push_back(std::move(prof));
  }
  return r;
}

}  // namespace

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
