"""summarize.py on report lines written for the test. Run by ctest."""
import unittest

import summarize

LINES = """\
small identity.py #1: valid, 10.0 s, bridge 4.000 s (load 3.000 map 0.100 call 0.500 check 0.300 time 0.100 copy 0.000), reused 0, spares 3, compile 0.000 s, torch.compile first call 2.0 s, 0.54 GB per call
small identity.py #2: valid, 1.0 s, bridge 0.300 s (load 0.004 map 0.020 call 0.100 check 0.100 time 0.076 copy 0.000), reused 2, spares 1, compile 0.000 s, torch.compile first call 0.0 s, 0.54 GB per call
small identity.py #3: valid, 1.2 s, bridge 0.400 s (load 0.004 map 0.020 call 0.200 check 0.100 time 0.076 copy 0.000), reused 2, spares 1, compile 0.000 s, torch.compile first call 0.0 s, flags within_noise timed_faster_than_verified, 0.54 GB per call
large identity.py #1: valid, 12.0 s, bridge 5.000 s (load 3.000 map 0.100 call 0.900 check 0.400 time 0.200 copy 0.000), reused 0, spares 3, compile 0.000 s, torch.compile first call 2.0 s, 12.88 GB per call
large identity.py #2: incorrect, 1.5 s, bridge 0.800 s (load 0.004 map 0.040 call 0.330 check 0.250 time 0.176 copy 0.000), reused 2, spares 1, compile 0.000 s, torch.compile first call 0.0 s, 12.88 GB per call
  output 'out' is wrong at bench (1 of 10 elements)
cut identity.py #1: valid, 9.0 s, bridge 4.000 s (load 3.000 map 0.100 call 0.500 check 0.300 time 0.100 copy 0.000), reused 0, spares 3, compile 0.000 s, torch.compile first call 2.0 s, 2.00 GB per call
old identity.py #1: valid, 9.0 s, bridge 4.000 s (load 3.000 map 0.100 call 0.500 check 0.300 time 0.100 copy 0.000), reused 0, spares 3, compile 0.000 s, torch.compile first call 2.0 s
old identity.py #2: valid, 1.1 s, bridge 0.600 s (load 0.004 map 0.020 call 0.300 check 0.200 time 0.076 copy 0.000), reused 2, spares 1, compile 0.000 s, torch.compile first call 0.0 s
""".splitlines()


class SummarizeTest(unittest.TestCase):
    def setUp(self):
        self.text = summarize.summarize(summarize.parse(LINES))

    def test_each_problem_with_a_next_evaluation_is_one_row_with_the_next_median(self):
        rows = [line for line in self.text.splitlines() if line.startswith("| small")]
        self.assertEqual(len(rows), 1)
        self.assertIn("| 0.54 | valid, valid, valid (timed_faster_than_verified) | 10.0 s | 1.1 s | **0.350** |",
                      rows[0])

    def test_bands_by_bytes_per_call_count_the_target(self):
        self.assertIn("| up to 1.3 GB | 1 | 0.350 s (0.350-0.350) | 1 |", self.text)
        self.assertIn("| above 9 GB | 1 | 0.800 s (0.800-0.800) | 0 |", self.text)
        self.assertIn("| unknown | 1 | 0.600 s", self.text)  # a report without bytes per call

    def test_totals_count_invalid_evaluations_and_problems_evaluated_once(self):
        self.assertIn("3 problems with a next evaluation: median next overhead 0.600 s, 1 at "
                      "most 0.5 s, 2 valid in every evaluation, 1 with a flagged evaluation.", self.text)
        self.assertIn("Evaluated once only (no next): cut.", self.text)


if __name__ == "__main__":
    unittest.main()
