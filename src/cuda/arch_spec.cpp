#include "cuda/arch_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "cuda/compatibility.h"
#include "cuda/gpu_catalog.h"
#include "cuda/named_arches.h"
#include "util/strings.h"

namespace tailor::cuda {

namespace {

// The result of reading a spec: targets, and the device CCs it names (for parse_gpu_spec).
struct Reading {
  TargetSet targets;
  std::vector<ComputeCapability> devices;
  std::vector<NamedArch> named;  ///< torch's named lists used
  std::vector<std::pair<std::string, ComputeCapability>>
      gpu_names;  ///< GPU and instance names used
  void add_gpu_name(std::string name, ComputeCapability cc) {
    for (const auto& [n, c] : gpu_names)
      if (n == name) return;
    gpu_names.emplace_back(std::move(name), cc);
  }
  void add_device(ComputeCapability cc) {
    if (std::find(devices.begin(), devices.end(), cc) == devices.end()) devices.push_back(cc);
  }
  void add_target(const CudaTarget& t) {
    targets.add(t);
    add_device(t.cc);
  }
};

/// Every target some nvcc in the table can produce: what a spelling may name.
const std::set<CudaTarget>& known_targets() {
  static const std::set<CudaTarget> known = [] {
    std::set<CudaTarget> s;
    for (const auto& v : known_cuda_versions()) {
      auto caps = nvcc_capabilities_from_table(v);
      s.insert(caps->sass.begin(), caps->sass.end());
      s.insert(caps->ptx.begin(), caps->ptx.end());
    }
    return s;
  }();
  return known;
}

std::vector<std::string> suggestions(std::string_view token) {
  const std::string t = to_lower(token);
  std::vector<std::pair<size_t, std::string>> scored;
  // Near means a slip of one character in a short spelling ("9.O", "8,6"), of a third of a
  // long one; and only the nearest are named: "3.5" is two edits from "9.O", "9.0" one.
  const size_t limit = t.size() <= 4 ? 1 : std::max<size_t>(2, t.size() / 3);
  // Letters that pass for digits ("H1OO" for H100, "A1l" for A11): compared as the digits too.
  auto folded = [](std::string s) {
    for (char& c : s)
      if (c == 'o')
        c = '0';
      else if (c == 'l' || c == 'i')
        c = '1';
    return s;
  };
  const std::string t_folded = folded(t);
  auto consider = [&](const std::string& spelling) {
    const std::string s = to_lower(spelling);
    size_t d = std::min(edit_distance(t, s), edit_distance(t_folded, folded(s)));
    if (d <= limit) scored.emplace_back(d, spelling);
  };
  for (const auto& n : named_arches()) consider(n.name);
  for (const auto& g : gpu_catalog()) {
    consider(g.name);
    for (const auto& a : g.aliases) consider(a);
  }
  for (const auto& i : cloud_instances()) consider(i.family);
  for (const auto& k : known_targets()) consider(k.name());
  for (const auto& c : known_capabilities()) consider(c.cc.str());
  for (const char* k : {"all", "all-major", "native"}) consider(k);
  std::stable_sort(scored.begin(), scored.end(),
                   [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, s] : scored) {
    if (d > scored.front().first) break;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    if (out.size() == 3) break;
  }
  // A named architecture is easier to recognise with a GPU of that family next to it.
  if (!out.empty()) {
    if (auto named = find_named_arch(out.front())) {
      std::string family = named->name.substr(0, named->name.find('+'));
      for (const auto& g : gpu_catalog())
        if (g.family == family && !g.tegra) {
          if (std::find(out.begin(), out.end(), g.name) == out.end())
            out.insert(out.begin() + 1, g.name);
          break;
        }
      if (out.size() > 3) out.resize(3);
    }
  }
  return out;
}

Error unknown(std::string_view token) {
  auto s = suggestions(token);
  std::string msg = "unknown CUDA target '" + std::string(token) + "'";
  if (!s.empty())
    msg += " (did you mean: " + join(s, ", ") + "?)";
  else
    msg += " (expected e.g. 8.6, 8.6+PTX, sm_90a, compute_90, 80-real, Hopper, H100, g5g.xlarge)";
  return make_error(msg);
}

Expected<void> add_known(Reading& r, const CudaTarget& t, std::string_view token) {
  if (!known_targets().count(t)) return unknown(token);
  r.add_target(t);
  return {};
}

/// "90a" -> 9.0 + a; "121" -> 12.1.
bool split_digits_variant(std::string_view s, ComputeCapability& cc, ArchVariant& v) {
  v = ArchVariant::none;
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
    v = s.back() == 'a' ? ArchVariant::a : ArchVariant::f;
    s.remove_suffix(1);
  }
  auto parsed = compute_capability_from_digits(s);
  if (!parsed) return false;
  cc = *parsed;
  return true;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Expected<void> add_keyword(Reading& r, std::string_view kw, const ArchSpecContext& ctx) {
  if (kw == "native") {
    if (ctx.native_devices.empty())
      return make_error(
          "'native' needs the GPUs of this machine, and none was detected (name the GPU instead, "
          "e.g. H100 or 9.0)");
    for (auto cc : ctx.native_devices) r.add_target(sass(cc));
    return {};
  }
  if (!ctx.nvcc)
    return make_error("'" + std::string(kw) +
                      "' depends on the CUDA version: pass --nvcc VERSION or install nvcc");
  // As nvcc -arch=all / all-major do (checked with nvcc 13.0 --dryrun): SASS for every
  // plain target (all) or the lowest of each major (all-major), and PTX for the lowest
  // target of the highest major.
  std::vector<CudaTarget> plain;
  for (const auto& t : ctx.nvcc->sass)
    if (t.variant == ArchVariant::none) plain.push_back(t);
  if (plain.empty())
    return make_error("CUDA " + ctx.nvcc->cuda_version.to_string() + " lists no targets");
  for (size_t i = 0; i < plain.size(); ++i)
    if (kw == "all" || i == 0 || plain[i - 1].cc.major != plain[i].cc.major) r.add_target(plain[i]);
  int top = plain.back().cc.major;
  for (const auto& t : plain)
    if (t.cc.major == top) {
      r.add_target(ptx(t.cc));
      break;
    }
  return {};
}

/// nvcc's code list: "sm_90", "[sm_90,compute_90]", "sm_90,compute_90".
Expected<void> add_code_list(Reading& r, std::string_view codes, std::string_view token) {
  std::string c(codes);
  std::erase_if(c, [](char ch) { return ch == '[' || ch == ']'; });
  auto parts = split_any(c, ",");
  if (parts.empty()) return unknown(token);
  for (const auto& p : parts) {
    auto t = parse_target_name(to_lower(p));
    if (!t) return unknown(token);
    auto ok = add_known(r, *t, p);
    if (!ok) return ok;
  }
  return {};
}

/// "arch=compute_90,code=sm_90" (the value of -gencode).
Expected<void> parse_gencode_value(Reading& r, std::string_view value, std::string_view token) {
  std::string v = to_lower(value);
  auto code = v.find("code=");
  if (!v.starts_with("arch=compute_") || code == std::string::npos) return unknown(token);
  auto arch = parse_target_name(v.substr(5, v.find(',') - 5));
  if (!arch) return unknown(token);
  return add_code_list(r, v.substr(code + 5), token);
}

Expected<void> parse_simple(Reading& r, std::string_view word, const ArchSpecContext& ctx) {
  const std::string w = to_lower(word);
  if (w == "all" || w == "all-major" || w == "native") return add_keyword(r, w, ctx);
  if (auto named = find_named_arch(w)) {
    if (std::none_of(r.named.begin(), r.named.end(),
                     [&](const NamedArch& n) { return n.name == named->name; }))
      r.named.push_back(*named);
    for (const auto& piece : split_any(named->arch_list, ";")) {
      auto ok = parse_simple(r, piece, ctx);
      if (!ok) return ok;
    }
    return {};
  }
  ComputeCapability cc;
  ArchVariant variant;
  // torch: X.Y, X.Ya, X.Y+PTX
  if (w.find('.') != std::string::npos && std::isdigit(static_cast<unsigned char>(w[0]))) {
    std::string_view s = w;
    bool with_ptx = s.ends_with("+ptx");
    if (with_ptx) s.remove_suffix(4);
    auto dot = s.find('.');
    std::string digits = std::string(s.substr(0, dot)) + std::string(s.substr(dot + 1));
    if (dot == s.size() - 1 || !split_digits_variant(digits, cc, variant) ||
        !all_digits(s.substr(0, dot)) || !std::isdigit(static_cast<unsigned char>(s[dot + 1])) ||
        (s.size() - dot - 1) > 2 || (s.size() - dot - 1 == 2 && variant == ArchVariant::none))
      return unknown(word);
    auto ok = add_known(r, sass(cc, variant), word);
    if (ok && with_ptx) ok = add_known(r, ptx(cc, variant), word);
    return ok;
  }
  // CMake: 86 (real + virtual), 80-real, 90-virtual, 90a
  if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0]))) {
    std::string_view s = w;
    bool real = true, virt = true;
    if (s.ends_with("-real")) {
      virt = false;
      s.remove_suffix(5);
    } else if (s.ends_with("-virtual")) {
      real = false;
      s.remove_suffix(8);
    }
    if (split_digits_variant(s, cc, variant)) {
      Expected<void> ok;
      if (real) ok = add_known(r, sass(cc, variant), word);
      if (ok && virt) ok = add_known(r, ptx(cc, variant), word);
      return ok;
    }
  }
  // Canonical and bare: sm_90a, sm90a, compute_90, compute90
  for (auto [prefix, kind] :
       {std::pair{"sm", TargetKind::sass}, std::pair{"compute", TargetKind::ptx}}) {
    std::string_view p = prefix;
    if (w.starts_with(p) && w.size() > p.size()) {
      std::string_view rest = std::string_view(w).substr(p.size());
      if (rest.front() == '_') rest.remove_prefix(1);
      if (split_digits_variant(rest, cc, variant)) return add_known(r, {kind, cc, variant}, word);
    }
  }
  if (auto inst = find_instance(w)) {
    auto gpu = find_gpu(inst->gpu);
    if (gpu) {
      r.add_device(gpu->cc);
      r.add_gpu_name(std::string(word), gpu->cc);
      return add_known(r, sass(gpu->cc), word);
    }
  }
  if (auto gpu = find_gpu(word)) {
    r.add_device(gpu->cc);
    r.add_gpu_name(gpu->name, gpu->cc);
    return add_known(r, sass(gpu->cc), word);
  }
  return unknown(word);
}

bool is_flag(std::string_view w, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (w == n) return true;
  return false;
}

/// One whitespace-free word; several words may be consumed for a flag and its value.
Expected<void> parse_words(Reading& r, const std::vector<std::string>& words,
                           const ArchSpecContext& ctx) {
  for (size_t i = 0; i < words.size(); ++i) {
    std::string w = words[i];
    std::string lw = to_lower(w);
    // A flag spelled with a space before its value: "-gencode arch=...", "-arch sm_90".
    if (is_flag(lw, {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code",
                     "--gpu-code"})) {
      if (i + 1 == words.size()) return make_error("'" + w + "' without a value");
      w += "=" + words[++i];
      lw = to_lower(w);
    }
    // A GPU name of several words: "RTX 4090", "Jetson Orin Nano", "RTX PRO 6000 Blackwell".
    bool took_gpu = false;
    for (size_t n = std::min<size_t>(5, words.size() - i); n >= 2 && !took_gpu; --n) {
      std::vector<std::string> span(words.begin() + i, words.begin() + i + n);
      std::string phrase = join(span, " ");
      if (auto gpu = find_gpu(phrase); gpu && lw[0] != '-') {
        // Only when the words are exactly a known spelling, so "8.0 H100" stays two tokens.
        auto exact = [&](const std::string& s) { return to_lower(s) == to_lower(phrase); };
        bool is_exact =
            exact(gpu->name) || std::any_of(gpu->aliases.begin(), gpu->aliases.end(), exact);
        if (is_exact) {
          r.add_device(gpu->cc);
          r.add_gpu_name(gpu->name, gpu->cc);
          auto ok = add_known(r, sass(gpu->cc), phrase);
          if (!ok) return ok;
          i += n - 1;
          took_gpu = true;
        }
      }
    }
    if (took_gpu) continue;
    for (auto prefix : {"-gencode=", "--generate-code="}) {
      if (lw.starts_with(prefix)) {
        lw = lw.substr(std::string_view(prefix).size());
        w = w.substr(std::string_view(prefix).size());
        break;
      }
    }
    if (lw.starts_with("arch=")) {
      auto ok = parse_gencode_value(r, w, words[i]);
      if (!ok) return ok;
      continue;
    }
    if (lw.starts_with("-arch=") || lw.starts_with("--gpu-architecture=")) {
      std::string value = lw.substr(lw.find('=') + 1);
      if (value == "all" || value == "all-major" || value == "native") {
        auto ok = add_keyword(r, value, ctx);
        if (!ok) return ok;
        continue;
      }
      auto t = parse_target_name(value);
      if (!t) return unknown(w);
      // "-arch=compute_80 -code=sm_80,sm_86": the code list says what is embedded.
      if (i + 1 < words.size()) {
        std::string next = to_lower(words[i + 1]);
        if (next == "-code" || next == "--gpu-code") {
          if (i + 2 == words.size()) return make_error("'" + words[i + 1] + "' without a value");
          auto ok = add_code_list(r, words[i + 2], words[i + 2]);
          if (!ok) return ok;
          i += 2;
          continue;
        }
        if (next.starts_with("-code=") || next.starts_with("--gpu-code=")) {
          auto ok = add_code_list(r, next.substr(next.find('=') + 1), words[i + 1]);
          if (!ok) return ok;
          i += 1;
          continue;
        }
      }
      // nvcc: -arch=sm_XY is shorthand for SASS and PTX of XY; -arch=compute_XY is PTX.
      auto ok = add_known(r, *t, w);
      if (ok && t->kind == TargetKind::sass) ok = add_known(r, ptx(t->cc, t->variant), w);
      if (!ok) return ok;
      continue;
    }
    if (lw.starts_with("-")) return unknown(w);
    // Plain words; commas also separate entries (torch refuses them, people type them).
    for (const auto& piece : split_any(w, ",")) {
      auto ok = parse_simple(r, piece, ctx);
      if (!ok) return ok;
    }
  }
  return {};
}

Expected<void> read_spec(Reading& r, std::string_view spec, const ArchSpecContext& ctx) {
  std::string s(trim(spec));
  std::erase_if(s, [](char c) { return c == '"' || c == '\''; });
  // "TORCH_CUDA_ARCH_LIST=8.0;8.6", "-DCMAKE_CUDA_ARCHITECTURES=80": the variable's value.
  {
    size_t i = s.starts_with("-D") ? 2 : 0;
    size_t j = i;
    while (j < s.size() && (std::isupper(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
                            std::isdigit(static_cast<unsigned char>(s[j]))))
      ++j;
    if (j > i + 2 && j < s.size() && s[j] == '=') s = s.substr(j + 1);
  }
  bool any = false;
  for (const auto& piece : split_any(s, ";")) {
    auto words = split_any(piece, " \t\n");
    if (words.empty()) continue;
    any = true;
    Reading attempt = r;
    auto ok = parse_words(attempt, words, ctx);
    if (!ok) {
      // A device name as a driver prints it ("NVIDIA H100 80GB HBM3") is one GPU.
      auto gpu = words.size() > 1 ? find_gpu(piece) : std::nullopt;
      if (!gpu) return ok;
      r.add_device(gpu->cc);
      r.add_gpu_name(gpu->name, gpu->cc);
      auto added = add_known(r, sass(gpu->cc), piece);
      if (!added) return added;
      continue;
    }
    r = std::move(attempt);
  }
  if (!any) return make_error("empty CUDA target list");
  return {};
}

}  // namespace

Expected<TargetSet> parse_arch_spec(std::string_view spec, const ArchSpecContext& context) {
  Reading r;
  auto ok = read_spec(r, spec, context);
  if (!ok) return ok.error();
  // Separators alone (",", "' ;") name nothing: an empty set would silently mean
  // "no device code" to every consumer, so it is an error like an unknown token.
  if (r.targets.empty()) return make_error("no CUDA target in '" + std::string(spec) + "'");
  return r.targets;
}

Expected<TargetSet> parse_arch_specs(const std::vector<std::string>& specs,
                                     const ArchSpecContext& context) {
  Reading r;
  if (specs.empty()) return make_error("no CUDA target given");
  for (const auto& s : specs) {
    auto ok = read_spec(r, s, context);
    if (!ok) return ok.error();
  }
  if (r.targets.empty()) return make_error("no CUDA target in '" + join(specs, " ") + "'");
  return r.targets;
}

std::vector<std::string> arch_spec_notes(const std::vector<std::string>& specs,
                                         const ArchSpecContext& context) {
  Reading r;
  for (const auto& s : specs)
    if (!read_spec(r, s, context)) return {};
  std::vector<std::string> notes;
  bool any_ptx = std::any_of(r.targets.targets.begin(), r.targets.targets.end(),
                             [](const CudaTarget& t) { return t.kind == TargetKind::ptx; });
  for (const auto& n : r.named) {
    const auto pieces = split_any(n.arch_list, ";");
    if (!pieces.empty() && to_lower(pieces.back()).ends_with("+ptx")) {
      std::string newest = pieces.back().substr(0, pieces.back().size() - 4);
      auto cc = parse_gpu_spec(newest);
      notes.push_back(fmt::format(
          "{} is torch's named list {} (torch.utils.cpp_extension): a family name also embeds PTX "
          "of its newest CC{}, "
          "which the driver JIT-compiles on newer GPUs (forward compatibility)",
          n.name, n.arch_list, cc && !cc->empty() ? " (" + ptx(cc->back()).name() + ")" : ""));
    }
    if (n.name.find('+') != std::string::npos) continue;
    // torch keeps a family's Tegra parts (Jetson) in a list of their own.
    auto tegra = find_named_arch(n.name + "+Tegra");
    if (!tegra) continue;
    auto tegra_ccs = parse_gpu_spec(tegra->arch_list);
    if (!tegra_ccs) continue;
    std::vector<std::string> left_out;
    for (const auto& cc : *tegra_ccs) {
      if (r.targets.contains(sass(cc))) continue;
      std::vector<std::string> gpus;
      for (const auto& g : gpus_with_capability(cc)) gpus.push_back(g.name);
      std::string first_cuda;
      for (const auto& v : known_cuda_versions()) {
        auto caps = nvcc_capabilities_from_table(v);
        if (caps && std::find(caps->sass.begin(), caps->sass.end(), sass(cc)) != caps->sass.end()) {
          first_cuda = v.to_string();
          break;
        }
      }
      left_out.push_back(fmt::format(
          "{} ({}{})", cc.str(), gpus.empty() ? "Tegra" : join(gpus, ", ") + ", a Tegra part",
          first_cuda.empty() ? "" : "; CUDA " + first_cuda + " or newer"));
    }
    if (!left_out.empty())
      notes.push_back(fmt::format(
          "{} is torch's list for the discrete GPUs and leaves out {}: torch names {} {}; "
          "`tailor arch {} {}` gives both",
          n.name, join(left_out, ", "), left_out.size() == 1 ? "it" : "them", tegra->name, n.name,
          tegra->name));
  }
  for (const auto& [name, cc] : r.gpu_names) {
    if (any_ptx) break;
    auto cap = find_capability(cc);
    std::string family = cap && find_named_arch(cap->family) ? cap->family : "";
    TargetSet own;
    own.add(sass(cc));
    std::vector<std::string> runs;
    for (const auto& c : known_capabilities())
      if (coverage_on(own, c.cc).mode != RunMode::none) runs.push_back(c.cc.str());
    notes.push_back(
        fmt::format("{} names one GPU: only its SASS ({}), no PTX, so the build runs on CC {} "
                    "only; add {}+PTX{} "
                    "to embed PTX that newer GPUs JIT-compile",
                    name, sass(cc).name(), join(runs, ", "), cc.str(),
                    family.empty() ? "" : " (or name the family, " + family + ")"));
  }
  return notes;
}

std::map<ComputeCapability, std::vector<std::string>> gpu_names_in_spec(std::string_view spec) {
  Reading r;
  std::map<ComputeCapability, std::vector<std::string>> out;
  if (!read_spec(r, spec, {})) return out;
  for (const auto& [name, cc] : r.gpu_names) out[cc].push_back(name);
  return out;
}

Expected<std::vector<ComputeCapability>> parse_gpu_spec(std::string_view spec,
                                                        const ArchSpecContext& context) {
  Reading r;
  auto ok = read_spec(r, spec, context);
  if (!ok) return ok.error();
  std::sort(r.devices.begin(), r.devices.end());
  return r.devices;
}

}  // namespace tailor::cuda
