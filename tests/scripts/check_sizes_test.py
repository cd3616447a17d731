#!/usr/bin/env python3
"""Unit tests of scripts/check_sizes.py over small C++ sources written to a temp folder."""
import io
import os
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import check_sizes  # noqa: E402


def functions(code):
    """[(name, first line, last line)] of the functions check_sizes finds in code."""
    found = check_sizes.find_functions(textwrap.dedent(code).lstrip("\n"))
    return [(f.name, f.first_line, f.last_line) for f in found]


def body(name, lines, indent=""):
    """A function `name` of exactly `lines` lines (lines >= 3)."""
    inner = [f"{indent}  x += {k};" for k in range(lines - 2)]
    return "\n".join([f"{indent}int {name}(int x) {{", *inner, f"{indent}}}"]) + "\n"


class FindFunctions(unittest.TestCase):
    def test_free_function_counts_signature_to_closing_brace(self):
        self.assertEqual(functions("""
            #include <string>
            namespace a {
            // a comment {
            static int
            add(int x,
                int y) {
              if (x) {
                return y;
              }
              return x + y;
            }
            }  // namespace a
            """), [("add", 4, 11)])

    def test_braces_in_strings_chars_and_comments_do_not_count(self):
        self.assertEqual(functions(r"""
            void f() {
              const char* s = "}{ \" }";
              char c = '}';
              char d = '\'';
              /* } */ // }
              auto r = R"x(} " })x";
              int n = 1'000; char e = '{';
            }
            void g() {}
            """), [("f", 1, 8), ("g", 9, 9)])

    def test_preprocessor_lines_are_not_code(self):
        self.assertEqual(functions("""
            #define OPEN {
            #define MULTI(x) \\
              do { x; } while (0)
            int f() {
            #if 1
              return 1;
            #endif
            }
            """), [("f", 4, 8)])

    def test_members_constructors_operators_and_lambdas_in_a_body(self):
        self.assertEqual(functions("""
            class Box : public Base {
             public:
              Box(int a) : m_a(a), m_b{a} {
                m_c = 0;
              }
              int get() const noexcept { return m_a; }
              bool operator()(int x) const { return x > 0; }
              auto make() -> std::vector<int> {
                return {};
              }
             private:
              int m_a{0};
              std::array<int, 2> m_b = {1, 2};
            };
            template <typename F>
            auto wrap(F&& f) -> Expected<decltype(f())> {
              auto g = [&](int y) {
                return y;
              };
              return f();
            }
            Box::~Box() {}
            """), [("Box", 3, 5), ("get", 6, 6), ("operator()", 7, 7), ("make", 8, 10),
                   ("wrap", 15, 21), ("Box::~Box", 22, 22)])

    def test_members_of_a_class_template_with_defaults_are_read(self):
        self.assertEqual(functions("""
            template <typename T = int, int N = 2>
            struct alignas(16) Table final : Base<T> {
              T at(int i) const {
                return m_values[i];
              }
              explicit operator bool() const { return N > 0; }
            };
            struct Point { int x; } const k_origin = {0};
            """), [("at", 3, 5), ("operator bool", 6, 6)])

    def test_initialisers_enums_and_constraints_are_not_functions(self):
        self.assertEqual(functions("""
            enum class Kind : int { a, b };
            const std::pair<int, int> k_table[] = {{1, 2}, {3, 4}};
            struct Point { int x; int y; } origin{0, 0};
            extern "C" {
            int c_api(void) { return 0; }
            }
            template <class T>
              requires requires(const T& t) { t.size(); }
            size_t size_of(const T& t) {
              return t.size();
            }
            """), [("c_api", 5, 5), ("size_of", 7, 11)])


class Check(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        os.makedirs(os.path.join(self.root, "src", "mod"))
        os.makedirs(os.path.join(self.root, "scripts"))

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)

    def run_check(self, allowlist=None):
        if allowlist is not None:
            self.write("scripts/size_allowlist.txt", allowlist)
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            rc = check_sizes.main(["--root", self.root])
        return rc, out.getvalue()

    def test_within_the_limits_passes(self):
        self.write("src/mod/small.cpp", body("small", 120))
        self.assertEqual(self.run_check(), (0, "check_sizes: files <= 700 lines and functions <= 120 "
                                               "but 0 allowlisted item(s)\n"))

    def test_a_long_function_fails_with_its_size(self):
        self.write("src/mod/big.cpp", body("big", 121))
        rc, out = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("src/mod/big.cpp:big: function of 121 lines, over the limit of 120", out)

    def test_a_long_file_fails_with_its_size(self):
        self.write("src/mod/long.h", "// line\n" * 701)
        rc, out = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("src/mod/long.h: file of 701 lines, over the limit of 700", out)

    def test_an_allowlisted_item_passes_until_it_grows(self):
        self.write("src/mod/big.cpp", body("big", 130))
        self.assertEqual(self.run_check("# comment\nsrc/mod/big.cpp:big 130\n")[0], 0)
        self.write("src/mod/big.cpp", body("big", 131))
        rc, out = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("src/mod/big.cpp:big: function grew to 131 lines (allowlisted at 130", out)

    def test_a_shrunk_item_still_over_is_a_note(self):
        self.write("src/mod/big.cpp", body("big", 125))
        rc, out = self.run_check("src/mod/big.cpp:big 130\n")
        self.assertEqual(rc, 0)
        self.assertIn("note: src/mod/big.cpp:big: shrank to 125 lines (allowlisted at 130)", out)

    def test_an_allowlisted_item_within_the_limit_or_gone_fails(self):
        self.write("src/mod/big.cpp", body("big", 100))
        rc, out = self.run_check("src/mod/big.cpp:big 130\nsrc/mod/gone.cpp 900\n")
        self.assertEqual(rc, 1)
        self.assertIn("src/mod/big.cpp:big: now 100 lines, within the limit of 120: take its line "
                      "out of the allowlist", out)
        self.assertIn("src/mod/gone.cpp: allowlisted but no longer there", out)

    def test_a_second_definition_of_a_name_is_numbered(self):
        self.write("src/mod/two.cpp", body("f", 10) + body("f", 122))
        rc, out = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("src/mod/two.cpp:f#2: function of 122 lines", out)

    def test_a_bad_allowlist_line_is_one_error(self):
        self.write("src/mod/small.cpp", body("small", 3))
        err = io.StringIO()
        self.write("scripts/size_allowlist.txt", "src/mod/small.cpp many\n")
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            rc = check_sizes.main(["--root", self.root])
        self.assertEqual(rc, 2)
        self.assertIn("size_allowlist.txt:1: expected 'PATH[:FUNCTION] LINES'", err.getvalue())

    def test_list_prints_the_allowlist_format(self):
        self.write("src/mod/big.cpp", body("big", 121, indent=""))
        out = io.StringIO()
        with redirect_stdout(out):
            rc = check_sizes.main(["--root", self.root, "--list"])
        self.assertEqual((rc, out.getvalue()), (0, "src/mod/big.cpp:big 121\n"))


if __name__ == "__main__":
    unittest.main()
