"""Tests of the bridge's server helpers that need no runner. Run by ctest:
python3 -m unittest kope_bridge.serve_test."""
import unittest
from unittest import mock

import torch

from . import serve


class DescribeErrorTest(unittest.TestCase):
    def test_an_out_of_memory_error_says_what_the_device_had_free(self):
        with mock.patch.object(torch.cuda, "mem_get_info", return_value=(3 << 30, 140 << 30)), \
                mock.patch.object(torch.cuda, "memory_reserved", return_value=16 << 30):
            try:
                raise torch.OutOfMemoryError("CUDA out of memory")
            except torch.OutOfMemoryError as e:
                text = serve.describe_error(e)
        self.assertIn("OutOfMemoryError: CUDA out of memory", text)
        self.assertIn("3.0 GiB free of 140.0; this process holds 16.0 GiB", text)

    def test_other_errors_and_a_device_that_cannot_answer_add_nothing(self):
        self.assertEqual(serve.describe_error(ValueError("bad")).split(" (")[0], "ValueError: bad")
        with mock.patch.object(torch.cuda, "mem_get_info", side_effect=RuntimeError("no GPU")):
            try:
                raise torch.OutOfMemoryError("CUDA out of memory")
            except torch.OutOfMemoryError as e:
                self.assertNotIn("GiB", serve.describe_error(e))


if __name__ == "__main__":
    unittest.main()
