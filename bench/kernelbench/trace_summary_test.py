"""trace_summary.py on trace lines written for the test. Run by ctest."""
import unittest

import trace_summary

HEADER = "t_s pid request arena_bytes parent_ms kernel_ms copy_ms outcome".split()
LINES = """\
0.0 10 load 0 900.0 0 0 ok
0.9 11 load 0 5.0 0 0 ok
1.0 10 map 2000 1.0 0 0 ok
1.1 10 share 100 0.5 0 0 ok
1.2 11 map_shared 100 0.2 0 0 ok
1.3 11 call 2000 0.7 0.1 0 ok
1.4 10 check 2000 0.6 0 0 ok
1.5 10 share 1900 0.5 0 0 ok
1.6 11 map_shared 1900 0.2 0 0 ok
1.7 11 call 2000 4.0 3.0 0 ok
1.8 10 check 2000 2.0 0 0 ok
1.9 11 call 2000 4.0 3.0 0 ok
2.0 11 load 0 4.0 0 0 ok
2.1 10 load 0 3.0 0 0 ok
2.2 10 draw 2000 1.0 0 0 ok
""".splitlines()


def rows():
    return [dict(zip(HEADER, line.split())) for line in LINES]


class TraceSummaryTest(unittest.TestCase):
    def test_a_load_after_other_requests_starts_an_evaluation(self):
        self.assertEqual([len(e) for e in trace_summary.evaluations(rows())], [12, 3])

    def test_requests_count_at_the_size_last_shared_not_their_runners_arena(self):
        table, span, requests = trace_summary.summarize(trace_summary.evaluations(rows())[0])
        by_key = {(r[0], r[1], r[2]): r[3:] for r in table}
        self.assertEqual(by_key[("r1", "call", "bench")], (2, 8.0, 6.0))
        self.assertEqual(by_key[("r1", "call", "check")], (1, 0.7, 0.1))
        self.assertEqual(by_key[("r0", "check", "bench")], (1, 2.0, 0.0))
        self.assertEqual(by_key[("r0", "map", "bench")], (1, 1.0, 0.0))
        self.assertEqual(table[0][:3], ("r0", "load", "check"))
        self.assertAlmostEqual(span, 1904.0)
        self.assertAlmostEqual(requests, 918.7)

    def test_without_shares_the_maps_set_the_size(self):
        evaluation = [dict(zip(HEADER, line.split())) for line in (
            "0 5 map 10 1 0 0 ok", "1 5 call 10 1 0 0 ok", "2 5 map 1000 1 0 0 ok",
            "3 5 call 10 2 0 0 ok")]
        table, _, _ = trace_summary.summarize(evaluation)
        by_key = {(r[0], r[1], r[2]): r[3] for r in table}
        self.assertEqual(by_key[("r0", "call", "check")], 1)
        self.assertEqual(by_key[("r0", "call", "bench")], 1)


if __name__ == "__main__":
    unittest.main()
