# Unit times, the order modules and units start in, and the units split on their own.
import json
import unittest

from support import DriverTest, Extension
from tailor_driver import schedule


class LearnedSplits(unittest.TestCase):
    # Only from measured times covering 90% of the units, only CUDA units of 20 s or more
    # that are longer than 1.5 x the work shared over the jobs; K = time over that share,
    # at most the maximum.
    units = ["a.cu", "b.cu", "c.cpp"] + ["u%d.cu" % i for i in range(17)]
    times = dict({"a.cu": 180000, "b.cu": 30000, "c.cpp": 5000},
                 **{"u%d.cu" % i: 10000 for i in range(17)})

    def test_thresholds(self):
        splits = schedule.learned_splits
        self.assertEqual(splits(self.times, self.units, 16, 16), {"a.cu": 8})  # share 24.7 s
        self.assertEqual(splits(self.times, self.units, 16, 4), {"a.cu": 4})   # at most 4
        self.assertEqual(splits({"a.cu": 180000}, self.units, 16, 16), {})    # 1 of 20 known
        self.assertEqual(splits(self.times, self.units, 1, 16), {})           # one job
        self.assertEqual(splits(self.times, self.units, 16, 1), {})           # no split allowed
        self.assertEqual(splits({}, [], 16, 16), {})

    def test_ninety_percent_coverage_and_twenty_seconds(self):
        partial = dict(self.times)
        del partial["u0.cu"], partial["u1.cu"]  # 18 of 20 known: 90%
        self.assertEqual(schedule.learned_splits(partial, self.units, 16, 16), {"a.cu": 8})
        del partial["u2.cu"]                     # 17 of 20
        self.assertEqual(schedule.learned_splits(partial, self.units, 16, 16), {})
        short = {"a.cu": 19999, "b.cpp": 100}    # longer than the share, under 20 s
        self.assertEqual(schedule.learned_splits(short, ["a.cu", "b.cpp"], 8, 8), {})
        host = {"a.cpp": 180000, "b.cu": 100}    # host units are never split
        self.assertEqual(schedule.learned_splits(host, ["a.cpp", "b.cu"], 8, 8), {})

    def test_split_rule(self):
        rules = ("rule compile_m0\n  command = g++ $in\n"
                 "rule cuda_compile_m0\n  command = nvcc -c $in -o $out\n  depfile = $out.d")
        self.assertEqual(schedule.split_rule(rules, "cuda_compile_m0", 3),
                         "rule cuda_compile_m0_s3\n"
                         "  command = nvcc -c $in -o $out -split-compile=3\n  depfile = $out.d")
        self.assertIsNone(schedule.split_rule(rules, "missing_m0", 3))

    def test_split_compile_from_the_source_alone(self):
        self.assertEqual(schedule.split_compile("16:8", 3), (5, None))  # 16 // 3
        self.assertEqual(schedule.split_compile("16:4", 2), (4, None))  # at most 4
        self.assertEqual(schedule.split_compile("16:8", 9), (1, 8))     # many: learned, up to 8
        self.assertEqual(schedule.split_compile("16:8", 0), (1, 8))
        self.assertEqual(schedule.split_compile("", 3), (1, 0))        # nothing asked
        self.assertEqual(schedule.split_compile("x:8", 3), (1, 0))


class Times(DriverTest):
    def test_read_from_the_file_bad_entries_dropped(self):
        self.write("t.json", json.dumps({"a.cu": 5000, "b.cpp": 300, "neg.cu": -1, "f.cu": 1.5,
                                         "s.cu": "9"}))
        self.assertEqual(schedule.read_unit_times("t.json"), {"a.cu": 5000, "b.cpp": 300})
        self.write("bad.json", "[1, 2]")
        self.assertEqual(schedule.read_unit_times("bad.json"), {})
        self.write("broken.json", "{")
        self.assertEqual(schedule.read_unit_times("broken.json"), {})
        self.assertEqual(schedule.read_unit_times("missing.json"), {})
        self.assertEqual(schedule.read_unit_times(None), {})

    def test_a_unit_without_a_record_counts_as_the_longest_of_its_kind(self):
        times = schedule.UnitTimes({"a.cu": 5000, "b.cpp": 300, "c.cpp": 700})
        self.assertEqual((times.ms("a.cu"), times.ms("new.cu"), times.ms("new.cpp")),
                         (5000, 5000, 700))
        self.assertEqual(times.ms(self.dir + "/b.cpp"), 300)  # relative to the source folder
        first = schedule.UnitTimes({})
        self.assertGreater(first.ms("x.cu"), first.ms("y.cpp"))

    def test_module_order(self):
        a = Extension("a", ["a1.cpp", "a2.cpp", "a3.cpp"])
        b = Extension("b", ["b.cu"])
        c = Extension("c", ["c.cpp", "c.cu"])
        def names(times):
            return [e.name for e in schedule.module_order([a, b, c], schedule.UnitTimes(times))]
        self.assertEqual(names({}), ["c", "b", "a"])
        self.assertEqual(names({"a2.cpp": 90000, "b.cu": 1000, "c.cu": 5000, "c.cpp": 10}),
                         ["a", "c", "b"])

    def test_given_splits(self):
        self.assertEqual(schedule.given_splits('{"a.cu": 3, "b.cu": 1, "c.cu": "4"}'),
                         {"a.cu": 3, "c.cu": 4})
        self.assertEqual(schedule.given_splits('{"a.cu": "x"}'), {})
        self.assertEqual(schedule.given_splits("[]"), {})
        self.assertEqual(schedule.given_splits("{"), {})


if __name__ == "__main__":
    unittest.main()
