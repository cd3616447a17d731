# The package's one Ninja: torch's per-module build.ninja files read and merged.
import os
import unittest

from support import DriverTest
from tailor_driver import ninja_merge, ninja_syntax, schedule

TORCH_LIKE = """ninja_required_version = 1.3
cxx = c++
rule compile
  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags
  depfile = $out.d
  deps = gcc

cflags = -O2 -DX=$$HOME -I/a$ b
post_cflags = -DTORCH_EXTENSION_NAME=_c

build /o/a$ b.o: compile /s/a$ b.cpp
build /o/c$:d.o: compile /s/c.cpp
"""


def torch_module(name, sources):
    # A build.ninja as torch writes one: host and CUDA rules, one edge per source.
    edges = []
    for src in sources:
        rule = "cuda_compile" if src.endswith(".cu") else "compile"
        edges.append("build %s/%s.o: %s %s"
                     % (name, os.path.basename(src), rule, os.path.abspath(src)))
    return ("ninja_required_version = 1.3\ncxx = c++\nnvcc = /cuda/bin/nvcc\n\n"
            "cflags = -DTORCH_EXTENSION_NAME=%s\ncuda_cflags = -O3\n\n"
            "rule compile\n  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out\n"
            "  depfile = $out.d\n  deps = gcc\n\n"
            "rule cuda_compile\n  depfile = $out.d\n  deps = gcc\n"
            "  command = $nvcc $cuda_cflags -c $in -o $out\n\n"
            "%s\n\n" % (name, "\n".join(edges)))


class ReadModule(DriverTest):
    def test_rules_renamed_variables_written_in_paths_kept(self):
        rules, edges, outputs = ninja_merge.read_module(self.write("torch.ninja", TORCH_LIKE), 3)
        self.assertEqual(rules.splitlines()[0], "rule compile_m3")
        self.assertEqual(rules.splitlines()[1],
                         "  command = c++ -MMD -MF $out.d -O2 -DX=$$HOME -I/a$ b -c $in -o $out "
                         "-DTORCH_EXTENSION_NAME=_c")
        self.assertEqual([first for first, _ in edges], ["/s/a b.cpp", "/s/c.cpp"])
        self.assertEqual([e.split(": ")[1] for _, e in edges],
                         ["compile_m3 /s/a$ b.cpp", "compile_m3 /s/c.cpp"])
        self.assertEqual(outputs, ["/o/a$ b.o", "/o/c$:d.o"])

    def test_a_file_torch_does_not_write_is_left_whole(self):
        for name, text in [("chained", "a = 1\nb = $a\nrule r\n  command = $b\nbuild o: r i\n"),
                           ("twice", "a = 1\na = 2\nrule r\n  command = $a\nbuild o: r i\n"),
                           ("include", "include other.ninja\nbuild o: r i\n"),
                           ("continued", "rule r\n  command = x $\n    y\nbuild o: r i\n"),
                           ("nocolon", "rule r\n  command = x\nbuild o r i\n"),
                           ("binding", "rule r\n  command = x\nbuild o: r i\n  v = $w\n")]:
            self.assertEqual(ninja_merge.read_module(self.write(name + ".ninja", text), 3),
                             (None, [], None), name)

    def test_syntax_pieces(self):
        self.assertEqual(ninja_syntax.references("a $b ${c.d} $$e $ f $:g"), ["b", "c.d"])
        self.assertIsNone(ninja_syntax.references("a $!"))
        self.assertEqual(ninja_syntax.substitute("$a ${b} $$c $d", {"a": "1", "b": "2"}),
                         "1 2 $$c $d")
        self.assertEqual(ninja_syntax.split_edge("build x$:y.o | imp: cc /s/x.c | h.h"),
                         ("x$:y.o | imp", ["x$:y.o"], "cc", "/s/x.c", "/s/x.c | h.h"))
        self.assertEqual(ninja_syntax.escape_path("/a b:c$"), "/a$ b$:c$$")


class PackageManifest(DriverTest):
    def modules(self):
        for src in ("small.cpp", "big.cu", "mid.cu", "host.cpp"):
            self.write(src, "")
        one = self.write("build/one/build.ninja", torch_module("one", ["small.cpp", "mid.cu"]))
        two = self.write("build/two/build.ninja", torch_module("two", ["host.cpp", "big.cu"]))
        return {os.path.dirname(one): 0, os.path.dirname(two): 1}

    def test_two_modules_merged_longest_first_with_stamps(self):
        times = schedule.UnitTimes({"small.cpp": 1000, "big.cu": 90000, "mid.cu": 40000,
                                    "host.cpp": 2000})
        text = ninja_merge.package_manifest(self.modules(), times, 0, ["-j", "4"])
        lines = text.split("\n")
        self.assertEqual(lines[0], ninja_merge.HEADER)
        self.assertEqual(lines[1], "ninja_required_version = 1.3")
        # Each module's rules renamed, with its own variables written in.
        for n, name in ((0, "one"), (1, "two")):
            self.assertIn("rule compile_m%d" % n, lines)
            self.assertIn("rule cuda_compile_m%d" % n, lines)
            self.assertIn("  command = c++ -MMD -MF $out.d -DTORCH_EXTENSION_NAME=%s -c $in -o $out"
                          % name, lines)
        self.assertIn("  command = /cuda/bin/nvcc -O3 -c $in -o $out", lines)
        self.assertNotIn("cflags = -DTORCH_EXTENSION_NAME=one", lines)
        # Every compile edge of the package, longest unit first, whatever its module.
        edges = [line for line in lines
                 if line.startswith("build ") and "tailor_module_done" not in line]
        self.assertEqual(edges, [
            "build two/big.cu.o: cuda_compile_m1 %s/big.cu" % self.dir,
            "build one/mid.cu.o: cuda_compile_m0 %s/mid.cu" % self.dir,
            "build two/host.cpp.o: compile_m1 %s/host.cpp" % self.dir,
            "build one/small.cpp.o: compile_m0 %s/small.cpp" % self.dir])
        # Each module ends in a stamp edge over its outputs, after the stamp rule.
        self.assertIn("rule tailor_module_done\n  command = touch $out\n", text)
        self.assertTrue(text.endswith(
            "build .tailor-done/m0: tailor_module_done one/small.cpp.o one/mid.cu.o\n"
            "build .tailor-done/m1: tailor_module_done two/host.cpp.o two/big.cu.o\n"), text)
        self.assertRegex("[1/2] touch .tailor-done/m1", ninja_merge.STAMP_LINE)

    def test_no_times_cuda_first_in_module_order(self):
        text = ninja_merge.package_manifest(self.modules(), schedule.UnitTimes({}), 0, ["-j", "4"])
        edges = [line.split(":")[0] for line in text.split("\n")
                 if line.startswith("build ") and "tailor_module_done" not in line]
        self.assertEqual(edges, ["build one/mid.cu.o", "build two/big.cu.o",
                                 "build one/small.cpp.o", "build two/host.cpp.o"])

    def test_an_unreadable_module_is_included_whole(self):
        folders = self.modules()
        odd = self.write("build/odd dir/build.ninja", "include x.ninja\n")
        folders[os.path.dirname(odd)] = 2
        text = ninja_merge.package_manifest(folders, schedule.UnitTimes({}), 0, ["-j", "1"])
        self.assertIn("subninja %s/build/odd$ dir/build.ninja" % self.dir, text.split("\n"))
        self.assertNotIn("tailor-done/m2", text)

    def test_a_unit_that_sets_the_wall_gets_a_split_rule(self):
        units = ["u%d.cu" % i for i in range(9)]
        for src in units:
            self.write(src, "")
        one = self.write("build/one/build.ninja", torch_module("one", units))
        times = schedule.UnitTimes(dict({u: 10000 for u in units[1:]}, **{"u0.cu": 200000}))
        with self.said() as lines:
            text = ninja_merge.package_manifest({os.path.dirname(one): 0}, times, 8, ["-j", "4"])
        # share: 280 s over 4 jobs = 70 s; u0.cu (200 s) > 1.5 x 70 s: K = ceil(200 / 70) = 3.
        self.assertEqual(lines, ["tailor: split unit: u0.cu 3 "
                                 "(measured in earlier builds: it sets the wall)"])
        self.assertIn("rule cuda_compile_m0_s3\n  depfile = $out.d\n  deps = gcc\n"
                      "  command = /cuda/bin/nvcc -O3 -c $in -o $out -split-compile=3\n", text)
        self.assertIn("build one/u0.cu.o: cuda_compile_m0_s3 %s/u0.cu\n" % self.dir, text)
        self.assertIn("build one/u1.cu.o: cuda_compile_m0 %s/u1.cu\n" % self.dir, text)
        # As the wheel being reproduced was built: its K, nothing learned.
        os.environ["TAILOR_SPLIT_UNITS"] = '{"u1.cu": 2}'
        with self.said() as lines:
            text = ninja_merge.package_manifest({os.path.dirname(one): 0}, times, 8, ["-j", "4"])
        self.assertEqual(lines, ["tailor: split unit: u1.cu 2 "
                                 "(as the wheel being reproduced was built)"])
        self.assertIn("build one/u1.cu.o: cuda_compile_m0_s2 %s/u1.cu\n" % self.dir, text)
        self.assertIn("build one/u0.cu.o: cuda_compile_m0 %s/u0.cu\n" % self.dir, text)


if __name__ == "__main__":
    unittest.main()
