"""Tests of the importer's helpers that need no problem run. Run by ctest:
python3 -m unittest kope_bridge.importer_test."""
import unittest

from . import importer


class FamilyTest(unittest.TestCase):
    def test_level_one_names_give_their_families(self):
        cases = {
            "88_MinGPTNewGelu": "elementwise", "53_Min_reduction_over_a_dimension": "reduction",
            "47_Sum_reduction_over_a_dimension": "reduction", "51_Argmax_over_a_dimension":
            "reduction", "20_LeakyReLU": "elementwise", "41_Max_Pooling_1D": "pooling",
            "23_Softmax": "softmax", "96_HuberLoss": "loss", "89_cumsum": "scan",
            "1_Square_matrix_multiplication_": "matmul", "36_RMSNorm_": "norm",
        }
        for name, family in cases.items():
            with self.subTest(name):
                self.assertEqual(importer.family_of(name, ""), family)

    def test_the_operations_decide_where_the_name_does_not(self):
        self.assertEqual(importer.family_of("problem", "return torch.sum(x, dim=1)"),
                         "reduction")
        self.assertEqual(importer.family_of("problem", "return x.clone()"), "other")


if __name__ == "__main__":
    unittest.main()
