# The driver's side of the build events (data/driver/events.toml): what say writes is one
# JSON line per event on the descriptor tailor names, each event of a kind the schema has
# with exactly its fields and types, and the same lines the C++ reader's test reads
# (tests/driver/events.jsonl, tests/builder/driver_events_test.cpp).
import json
import os
import tomllib

from support import DriverTest, ROOT
from tailor_driver import say

SCHEMA = os.path.join(ROOT, "data", "driver", "events.toml")
GOLDEN = os.path.join(ROOT, "tests", "driver", "events.jsonl")


def schema():
    with open(SCHEMA, "rb") as f:
        return tomllib.load(f)


def check(test, event, kinds):
    # An event as the C++ reader accepts it: version, a known kind, its fields exactly.
    test.assertEqual(event.pop("v"), say.VERSION)
    kind = event.pop("kind")
    test.assertIn(kind, kinds)
    test.assertEqual(sorted(event), sorted(kinds[kind]), kind)
    for name, value in event.items():
        if kinds[kind][name] == "count":
            test.assertIsInstance(value, int)
            test.assertTrue(0 <= value <= 1000000, (kind, name, value))
        else:
            test.assertEqual(kinds[kind][name], "text")
            test.assertIsInstance(value, str)
            test.assertLessEqual(len(value.encode("utf-8")), say.MAX_TEXT)
    return kind


class EventsTest(DriverTest):
    def written(self, calls):
        # The events `calls` write, as bytes, through a real descriptor.
        path = os.path.join(self.dir, "events")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.environ[say.EVENTS_FD] = str(fd)
        try:
            with self.said():
                calls()
        finally:
            os.close(fd)
        with open(path, "rb") as f:
            return f.read()

    def every_kind(self):
        say.modules(3, 14, 9, 2, "one Ninja under the jobserver")
        say.unit_order(12, "earlier builds")
        say.split_unit("csrc/k3.cu", 4, "measured 90 s, over 1.5 x the share")
        say.choice("setup.py:12: MAX_JOBS=1 set by the package; tailor's job count stands")
        say.variants({"90": "a"})
        say.variants({"90": "a"})  # said once
        say.compat("setup.py:3: -std=c++14 raised to c++17 for torch 2.11")

    def test_schema_version_is_the_writers(self):
        self.assertEqual(schema()["version"], say.VERSION)

    def test_every_kind_the_schema_has_is_written_as_it_says(self):
        kinds = schema()["kind"]
        seen = set()
        for text in self.written(self.every_kind).decode("utf-8").splitlines():
            seen.add(check(self, json.loads(text), kinds))
        self.assertEqual(seen, set(kinds))

    def test_the_lines_the_cpp_reader_reads(self):
        # The golden file is what these calls write, byte for byte.
        with open(GOLDEN, "rb") as f:
            self.assertEqual(self.written(self.every_kind), f.read())

    def test_long_text_is_cut_to_the_bound(self):
        out = self.written(lambda: say.choice("é" * 2000))
        event = json.loads(out)
        check(self, event, schema()["kind"])

    def test_no_descriptor_writes_nothing_and_prints_the_line(self):
        os.environ.pop(say.EVENTS_FD, None)
        with self.said() as lines:
            say.choice("setup.py:1: x")
        self.assertEqual(lines, ["tailor: package choice: setup.py:1: x"])

    def test_a_closed_descriptor_is_no_failure(self):
        r, w = os.pipe()
        os.close(r)
        os.close(w)
        os.environ[say.EVENTS_FD] = str(w)
        with self.said() as lines:
            say.choice("setup.py:1: x")  # no exception
        self.assertEqual(len(lines), 1)
