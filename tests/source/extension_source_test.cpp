#include "source/extension_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "source/source_identity.h"

using namespace tailor;
using namespace tailor::source;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("tailor_source_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
}  // namespace

TEST(ClassifySource, EveryKind) {
  fs::path dir = fresh_dir("kinds");
  std::ofstream(dir / "pkg-1.0.tar.gz") << "x";
  auto d = classify_source(dir.string(), "");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->kind, SourceKind::directory);

  auto s = classify_source((dir / "pkg-1.0.tar.gz").string(), "");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, SourceKind::sdist);
  EXPECT_EQ(s->name, "pkg");

  // PyTorch by its pinned name is pointed to its own build, not taken for an extension sdist.
  auto t = classify_source("torch==2.0", "");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("`tailor build torch --torch 2.0`"), std::string::npos)
      << t.error().message;
  auto i = classify_source("causal-conv1d==1.5.2", "");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->kind, SourceKind::index);
  EXPECT_EQ(i->name, "causal-conv1d");
  EXPECT_EQ(i->version, "1.5.2");

  auto g = classify_source("git+https://github.com/Dao-AILab/causal-conv1d.git@v1.5.2", "");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->kind, SourceKind::git);
  EXPECT_EQ(g->url, "https://github.com/Dao-AILab/causal-conv1d.git");
  EXPECT_EQ(g->ref, "v1.5.2");
  EXPECT_EQ(g->name, "causal-conv1d");

  auto e = classify_source("", "/repo/examples/fused_ops");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, SourceKind::example);
  fs::remove_all(dir);
}

TEST(ClassifySource, BadInputSaysWhatItAccepts) {
  auto none = classify_source("", "");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("not tailor's repository"), std::string::npos);
  auto missing_sdist = classify_source("/nope/pkg-1.0.tar.gz", "");
  ASSERT_FALSE(missing_sdist);
  EXPECT_NE(missing_sdist.error().message.find("no such sdist"), std::string::npos);
  auto bare = classify_source("flash-attn", "");
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message.find("flash-attn==1.2.3"), std::string::npos);
  EXPECT_FALSE(classify_source("pkg>=1.0", ""));
}

TEST(GitUrl, FormsPipAccepts) {
  std::string url, ref;
  EXPECT_TRUE(split_git_url("https://github.com/a/b.git", url, ref));
  EXPECT_EQ(url, "https://github.com/a/b.git");
  EXPECT_EQ(ref, "");
  EXPECT_TRUE(split_git_url("git+https://github.com/a/b@main", url, ref));
  EXPECT_EQ(url, "https://github.com/a/b");
  EXPECT_EQ(ref, "main");
  EXPECT_TRUE(split_git_url("git@github.com:a/b.git@v1", url, ref));
  EXPECT_EQ(url, "git@github.com:a/b.git");
  EXPECT_EQ(ref, "v1");
  EXPECT_FALSE(split_git_url("https://example.com/pkg-1.0.tar.gz", url, ref));
  EXPECT_FALSE(split_git_url("./local/dir", url, ref));
}

TEST(PackageName, FromEachDeclaration) {
  fs::path dir = fresh_dir("names");
  std::ofstream(dir / "setup.py") << "setup(\n    name=\"from_setup_py\",\n    version='1')\n";
  EXPECT_EQ(detect_package_name(dir.string()), "from_setup_py");
  std::ofstream(dir / "setup.cfg") << "[metadata]\nversion = 1\nname = from-cfg\n";
  EXPECT_EQ(detect_package_name(dir.string()), "from-cfg");
  std::ofstream(dir / "pyproject.toml")
      << "[build-system]\nrequires=[]\n[project]\nname = \"from-pyproject\"\n";
  EXPECT_EQ(detect_package_name(dir.string()), "from-pyproject");
  std::ofstream(dir / "PKG-INFO") << "Metadata-Version: 2.1\nName: causal_conv1d\nVersion: 1.5.2\n";
  EXPECT_EQ(detect_package_name(dir.string()), "causal_conv1d");
  fs::remove_all(dir);
  EXPECT_EQ(detect_package_name(dir.string()), "");
}

TEST(CudaSource, FoundInThePackageNotInItsBuildOrHiddenFolders) {
  fs::path dir = fresh_dir("cuda_source");
  fs::create_directories(dir / "csrc");
  std::ofstream(dir / "csrc" / "ops.cpp") << "int f();\n";
  std::ofstream(dir / "setup.py") << "setup()\n";
  EXPECT_EQ(first_cuda_source(dir.string()), "");  // a CPU extension
  for (const char* other : {"build", "dist", ".git"}) {
    fs::create_directories(dir / other);
    std::ofstream(dir / other / "left.cu") << "\n";
  }
  EXPECT_EQ(first_cuda_source(dir.string()), "");  // not the package's own
  std::ofstream(dir / "csrc" / "kernels.cuh") << "\n";
  EXPECT_EQ(first_cuda_source(dir.string()), "csrc/kernels.cuh");
  fs::remove_all(dir);
  EXPECT_EQ(first_cuda_source(dir.string()), "");  // no folder: none
}

// torch-encoding 1.2.1 compiles its CUDA code at import (encoding/lib/__init__.py).
TEST(JitCompileSite, TheFirstLineThatTakesCppExtensionsLoad) {
  fs::path dir = fresh_dir("jit_site");
  fs::create_directories(dir / "encoding" / "lib");
  std::ofstream(dir / "setup.py")
      << "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\nsetup()\n";
  std::ofstream(dir / "encoding" / "__init__.py") << "# uses torch.utils.cpp_extension.load\n";
  EXPECT_EQ(jit_compile_site(dir.string()), "");  // an ahead-of-time build, a comment
  std::ofstream(dir / "encoding" / "lib" / "__init__.py")
      << "import os\nimport torch\nfrom torch.utils.cpp_extension import load\n"
         "gpu = load('enclib_gpu', ['a.cu'])\n";
  EXPECT_EQ(jit_compile_site(dir.string()), "encoding/lib/__init__.py:3");
  fs::remove_all(dir);
}

TEST(PackageName, TheSetupCallsOwnNameNotAnExtensionsOrAComment) {
  fs::path dir = fresh_dir("setup_call");
  // apex: the Extension names come first; setup(name="apex") last.
  std::ofstream(dir / "setup.py")
      << "ext_modules.append(CUDAExtension(name=\"distributed_adam_cuda\", sources=['a.cu']))\n"
         "def helper():\n    return dict(name='not_this')\n"
         "setup(\n"
         "    # name='commented_out',\n"
         "    ext_modules=[CUDAExtension(name=\"inline_cuda\", sources=[\"x.cu\"])],\n"
         "    description=\"name = 'in a string'\",\n"
         "    name=\"apex\",\n"
         "    version=\"0.1\")\n";
  EXPECT_EQ(detect_package_name(dir.string()), "apex");
  // A name from a variable: the first literal name= is the best guess left.
  std::ofstream(dir / "setup.py") << "Extension(name='first_literal')\nsetup(name=PACKAGE_NAME)\n";
  EXPECT_EQ(detect_package_name(dir.string()), "first_literal");
  fs::remove_all(dir);
}

TEST(WorkDir, StablePerSourceAndDistinctBetweenSources) {
  SourceSpec a{SourceKind::directory, "x", "/src/a", "", "", "", ""};
  SourceSpec b{SourceKind::directory, "x", "/src/b", "", "", "", ""};
  EXPECT_EQ(work_dir_for(a, "/w"), work_dir_for(a, "/w"));
  EXPECT_NE(work_dir_for(a, "/w"), work_dir_for(b, "/w"));
  EXPECT_EQ(work_dir_for(a, "/w").rfind("/w/a-", 0), 0u);
}

TEST(PrepareSource, CopiesWithoutOldBuildOutputs) {
  fs::path dir = fresh_dir("copy");
  fs::create_directories(dir / "pkg" / "csrc");
  fs::create_directories(dir / "pkg" / "build" / "temp");
  fs::create_directories(dir / "pkg" / "x.egg-info");
  std::ofstream(dir / "pkg" / "setup.py") << "setup(name='x')\n";
  std::ofstream(dir / "pkg" / "csrc" / "k.cu") << "__global__ void k() {}\n";
  SystemCommandRunner runner;
  auto spec = classify_source((dir / "pkg").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_TRUE(fs::exists(fs::path(*src) / "csrc" / "k.cu"));
  EXPECT_FALSE(fs::exists(fs::path(*src) / "build"));
  EXPECT_FALSE(fs::exists(fs::path(*src) / "x.egg-info"));
  // A second prepare replaces the copy (a file removed from the source disappears).
  fs::remove(dir / "pkg" / "csrc" / "k.cu");
  src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src);
  EXPECT_FALSE(fs::exists(fs::path(*src) / "csrc" / "k.cu"));
  fs::remove_all(dir);
}

TEST(PrepareSource, UnpacksARealSdist) {
  if (find_in_path("tar").empty()) GTEST_SKIP() << "tar not installed";
  fs::path dir = fresh_dir("sdist");
  fs::create_directories(dir / "pkg-1.0");
  std::ofstream(dir / "pkg-1.0" / "PKG-INFO") << "Name: pkg\nVersion: 1.0\n";
  SystemCommandRunner runner;
  CommandSpec tar;
  tar.argv = {"tar", "-czf", (dir / "pkg-1.0.tar.gz").string(), "-C", dir.string(), "pkg-1.0"};
  ASSERT_TRUE(runner.run(tar).ok());
  auto spec = classify_source((dir / "pkg-1.0.tar.gz").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_EQ(fs::path(*src).filename(), "pkg-1.0");
  EXPECT_EQ(detect_package_name(*src), "pkg");
  fs::remove_all(dir);
}

TEST(PrepareSource, BrokenSdistIsOneLineNamingTheFile) {
  fs::path dir = fresh_dir("broken");
  std::ofstream(dir / "bad-1.0.tar.gz") << "not a tarball";
  SystemCommandRunner runner;
  auto spec = classify_source((dir / "bad-1.0.tar.gz").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_FALSE(src);
  EXPECT_EQ(src.error().message.rfind("bad-1.0.tar.gz: cannot unpack: ", 0), 0u)
      << src.error().message;
  EXPECT_EQ(src.error().message.find('\n'), std::string::npos) << src.error().message;
  fs::remove_all(dir);
}

// A package_data member `passwd -> /etc/passwd` carried the host's file into a published
// wheel (issue 51): every kind of source refuses a link that leaves its tree, in one line
// naming the member and its target, and keeps links inside it.
TEST(PrepareSource, RefusesLinksLeavingTheTree) {
  fs::path dir = fresh_dir("links");
  fs::create_directories(dir / "pkg" / "data");
  std::ofstream(dir / "pkg" / "setup.py") << "setup(name='x')\n";
  fs::create_symlink("../setup.py", dir / "pkg" / "data" / "inside");
  SystemCommandRunner runner;
  auto spec = classify_source((dir / "pkg").string(), "");
  ASSERT_TRUE(spec);
  auto src = prepare_source(*spec, (dir / "work").string(), "python3", runner);
  ASSERT_TRUE(src) << src.error().message;
  EXPECT_TRUE(fs::is_symlink(fs::path(*src) / "data" / "inside"));
  for (const auto& [name, target] : std::vector<std::pair<std::string, std::string>>{
           {"passwd", "/etc/passwd"}, {"up", "../../../etc/hostname"}, {"dot", "."}}) {
    fs::create_symlink(target, dir / "pkg" / "data" / name);
    if (name == "dot") fs::create_symlink("dot/../..", dir / "pkg" / "data" / "chain");
    auto refused = prepare_source(*spec, (dir / "work").string(), "python3", runner);
    ASSERT_FALSE(refused) << name;
    const std::string& m = refused.error().message;
    const std::string member = name == "dot" ? "data/chain" : "data/" + name;
    EXPECT_NE(m.find("source member '" + member + "' is a link to"), std::string::npos) << m;
    EXPECT_NE(m.find("outside the source tree"), std::string::npos) << m;
    fs::remove(dir / "pkg" / "data" / name);
  }
  fs::remove_all(dir);
}

TEST(PrepareSource, SdistRefusesOutsideLinksAndNamesTheSameForTarAndZip) {
  fs::path dir = fresh_dir("hostile_sdist");
  const std::string make = R"PY(
import io, sys, tarfile, zipfile
d = sys.argv[1]
with tarfile.open(d + "/abs-1.0.tar.gz", "w:gz") as t:
    i = tarfile.TarInfo("abs-1.0/setup.py"); i.size = 1; t.addfile(i, io.BytesIO(b"#"))
    i = tarfile.TarInfo("abs-1.0/pkg/passwd"); i.type = tarfile.SYMTYPE; i.linkname = "/etc/passwd"; t.addfile(i)
with tarfile.open(d + "/up-1.0.tar.gz", "w:gz") as t:
    i = tarfile.TarInfo("up-1.0/../../evil"); i.size = 1; t.addfile(i, io.BytesIO(b"#"))
with zipfile.ZipFile(d + "/up-1.0.zip", "w") as z:
    z.writestr("up-1.0/../../evil", "#")
)PY";
  SystemCommandRunner runner;
  CommandSpec mk;
  mk.argv = {"python3", "-c", make, dir.string()};
  ASSERT_TRUE(runner.run(mk).ok());
  auto prepare = [&](const std::string& file) {
    auto spec = classify_source((dir / file).string(), "");
    EXPECT_TRUE(spec);
    return prepare_source(*spec, (dir / "work").string(), "python3", runner);
  };
  auto abs = prepare("abs-1.0.tar.gz");
  ASSERT_FALSE(abs);
  EXPECT_NE(abs.error().message.find("member 'abs-1.0/pkg/passwd' is a link to '/etc/passwd'"),
            std::string::npos)
      << abs.error().message;
  auto tar = prepare("up-1.0.tar.gz"), zip = prepare("up-1.0.zip");
  ASSERT_FALSE(tar);
  ASSERT_FALSE(zip);
  const std::string why = "member 'up-1.0/../../evil' would be written outside the source folder";
  EXPECT_NE(tar.error().message.find(why), std::string::npos) << tar.error().message;
  EXPECT_NE(zip.error().message.find(why), std::string::npos) << zip.error().message;
  EXPECT_FALSE(fs::exists(dir / "evil"));
  EXPECT_FALSE(fs::exists(dir / "work" / "evil"));
  fs::remove_all(dir);
}

TEST(BundledExample, FoundFromInsideTheRepository) {
  std::string example = find_bundled_example(std::string(TAILOR_SOURCE_DIR) + "/src/source");
  EXPECT_EQ(fs::path(example), fs::path(TAILOR_SOURCE_DIR) / "examples" / "fused_ops");
  EXPECT_EQ(find_bundled_example("/"), "");
}

namespace {
void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}
void set_mtime(const fs::path& p, int64_t seconds) {
  fs::last_write_time(p, fs::file_time_type::clock::from_sys(
                             std::chrono::sys_seconds(std::chrono::seconds(seconds))));
}
}  // namespace

TEST(SourceDateEpoch, FromTheEnvironment) {
  EXPECT_EQ(*source_date_epoch_from_env(nullptr), std::nullopt);
  EXPECT_EQ(*source_date_epoch_from_env(""), std::nullopt);
  EXPECT_EQ(*source_date_epoch_from_env("1700000000"), std::optional<int64_t>(1700000000));
  for (const char* bad : {"12a", "-1", " 1", "1.5"}) {
    auto r = source_date_epoch_from_env(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("SOURCE_DATE_EPOCH"), std::string::npos);
  }
}

TEST(TreeDigest, ContentDecidesNotTimesOrBuildLeftovers) {
  fs::path dir = fresh_dir("tree");
  write_text(dir / "setup.py", "setup()\n");
  write_text(dir / "csrc" / "k.cu", "__global__ void k() {}\n");
  set_mtime(dir / "setup.py", 1600000000);
  set_mtime(dir / "csrc" / "k.cu", 1650000000);
  auto a = digest_tree(dir.string());
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->files, 2u);
  EXPECT_EQ(a->newest_mtime, 1650000000);
  // Leftovers of builds and test runs count for nothing.
  write_text(dir / "build" / "temp" / "k.o", "object");
  write_text(dir / "dist" / "x.whl", "wheel");
  write_text(dir / "x.egg-info" / "PKG-INFO", "Name: x");
  write_text(dir / "tests" / "__pycache__" / "t.cpython-311.pyc", "pyc");
  write_text(dir / ".git" / "HEAD", "ref: refs/heads/main\n");
  set_mtime(dir / "setup.py", 1600000000);
  auto b = digest_tree(dir.string());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->sha256, a->sha256);
  EXPECT_EQ(b->newest_mtime, 1650000000);
  // Touching a file moves the epoch, not the digest; content and modes move the digest.
  set_mtime(dir / "setup.py", 1700000000);
  auto c = digest_tree(dir.string());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->sha256, a->sha256);
  EXPECT_EQ(c->newest_mtime, 1700000000);
  fs::permissions(dir / "setup.py", fs::perms::owner_exec, fs::perm_options::add);
  EXPECT_NE(digest_tree(dir.string())->sha256, a->sha256);
  fs::permissions(dir / "setup.py", fs::perms::owner_exec, fs::perm_options::remove);
  write_text(dir / "csrc" / "k.cu", "__global__ void k2() {}\n");
  EXPECT_NE(digest_tree(dir.string())->sha256, a->sha256);
  EXPECT_FALSE(digest_tree((dir / "missing").string()));
  fs::remove_all(dir);
}

TEST(IdentifySource, FolderSdistGitAndTheEnvironment) {
  fs::path dir = fresh_dir("identify");
  write_text(dir / "pkg" / "setup.py", "setup(name='pkg')\n");
  set_mtime(dir / "pkg" / "setup.py", 1650000000);
  SystemCommandRunner runner;
  auto folder = classify_source((dir / "pkg").string(), "");
  ASSERT_TRUE(folder);
  auto id =
      identify_source(*folder, (dir / "work" / "src").string(), (dir / "work").string(), runner);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->digest_kind, "tree-sha256");
  EXPECT_EQ(id->digest, digest_tree((dir / "pkg").string())->sha256);
  // Never a file's time (a copy's or a checkout's): a folder that is no git checkout gets
  // 1980-01-01, whatever its files' times.
  EXPECT_EQ(id->source_date_epoch, 315532800);
  set_mtime(dir / "pkg" / "setup.py", 1750000000);
  auto touched =
      identify_source(*folder, (dir / "work" / "src").string(), (dir / "work").string(), runner);
  ASSERT_TRUE(touched);
  EXPECT_EQ(touched->source_date_epoch, 315532800);
  EXPECT_EQ(touched->digest, id->digest);
  auto forced = identify_source(*folder, "", (dir / "work").string(), runner, 1234567890);
  ASSERT_TRUE(forced);
  EXPECT_EQ(forced->source_date_epoch, 1234567890);
  EXPECT_EQ(forced->epoch_from, "SOURCE_DATE_EPOCH in the environment");

  if (!find_in_path("tar").empty()) {
    CommandSpec tar;
    tar.argv = {"tar", "--mtime=@1660000000", "-czf", (dir / "pkg-1.0.tar.gz").string(),
                "-C",  dir.string(),          "pkg"};
    ASSERT_TRUE(runner.run(tar).ok());
    auto sdist = classify_source((dir / "pkg-1.0.tar.gz").string(), "");
    ASSERT_TRUE(sdist);
    auto src = prepare_source(*sdist, (dir / "work2").string(), "python3", runner);
    ASSERT_TRUE(src) << src.error().message;
    auto sid = identify_source(*sdist, *src, (dir / "work2").string(), runner);
    ASSERT_TRUE(sid) << sid.error().message;
    EXPECT_EQ(sid->digest_kind, "sdist-sha256");
    EXPECT_EQ(sid->digest.size(), 64u);
    EXPECT_EQ(sid->source_date_epoch, 1660000000);
  }

  if (!find_in_path("git").empty()) {
    fs::path repo = dir / "repo";
    write_text(repo / "setup.py", "setup(name='g')\n");
    CommandSpec s;
    s.cwd = repo.string();
    s.env = {{"GIT_COMMITTER_DATE", "@1670000000 +0000"}, {"GIT_AUTHOR_DATE", "@1670000000 +0000"}};
    for (std::vector<std::string> argv :
         {std::vector<std::string>{"git", "init", "-q"},
          {"git", "add", "."},
          {"git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m",
           "one"}}) {
      s.argv = argv;
      auto r = runner.run(s);
      ASSERT_TRUE(r.ok()) << r.err;
    }
    auto gid = identify_tree(repo.string(), runner);
    ASSERT_TRUE(gid) << gid.error().message;
    EXPECT_EQ(gid->digest_kind, "git-commit");
    EXPECT_EQ(gid->digest.size(), 40u);
    EXPECT_EQ(gid->source_date_epoch, 1670000000);
    EXPECT_EQ(gid->epoch_from, "the commit time of HEAD");
    // The same checkout as a folder to build: the commit's time while it is clean, the
    // fixed time once a tracked file changed.
    auto as_folder = classify_source(repo.string(), "");
    ASSERT_TRUE(as_folder);
    auto clean = identify_source(*as_folder, "", (dir / "work3").string(), runner);
    ASSERT_TRUE(clean) << clean.error().message;
    EXPECT_EQ(clean->digest_kind, "tree-sha256");
    EXPECT_EQ(clean->source_date_epoch, 1670000000);
    write_text(repo / "setup.py", "setup(name='changed')\n");
    auto dirty = identify_source(*as_folder, "", (dir / "work3").string(), runner);
    ASSERT_TRUE(dirty);
    EXPECT_EQ(dirty->source_date_epoch, 315532800);
  }
  fs::remove_all(dir);
}
