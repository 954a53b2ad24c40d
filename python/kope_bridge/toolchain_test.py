"""Tests of telling an extension build's failure (toolchain.py). Run by ctest:
python3 -m unittest kope_bridge.toolchain_test."""
import os
import unittest
from unittest import mock

from . import toolchain

GCC = """[1/2] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=ext -fPIC -std=c++17 -c /work/ext/main.cpp -o main.o
FAILED: main.o
c++ -MMD -MF main.o.d -c /work/ext/main.cpp -o main.o
/work/ext/main.cpp: In function 'at::Tensor f(at::Tensor)':
/work/ext/main.cpp:9:3: error: expected ',' or ';' before 'const'
    9 |   const float* in = xc.data_ptr<float>();
/work/ext/main.cpp:12:10: error: 'in' was not declared in this scope
ninja: build stopped: subcommand failed.
"""

NVCC = """[1/3] nvcc --generate-dependencies-with-compile -c /work/ext/cuda.cu -o cuda.cuda.o
FAILED: cuda.cuda.o
/work/ext/cuda.cu(14): error: identifier "blockIdx_x" is undefined
1 error detected in the compilation of "/work/ext/cuda.cu".
"""


class FirstErrorTest(unittest.TestCase):
    def test_the_compilers_first_error_without_its_folders(self):
        self.assertEqual(toolchain.first_compiler_error(GCC),
                         "main.cpp:9:3: error: expected ',' or ';' before 'const'")
        self.assertEqual(toolchain.first_compiler_error(NVCC),
                         'cuda.cu(14): error: identifier "blockIdx_x" is undefined')
        self.assertIsNone(toolchain.first_compiler_error("[1/1] c++ -c main.cpp\n"))
        # No compiler to run: what the shell said.
        self.assertEqual(toolchain.first_compiler_error(
            "[1/2] c++ -c main.cpp\nFAILED: main.o\nc++ -c main.cpp -o main.o\n"
            "/bin/sh: 1: c++: not found\nninja: build stopped: subcommand failed.\n"),
            "/bin/sh: 1: c++: not found")

    def test_a_failed_build_leads_with_it(self):
        e = RuntimeError("Error building extension 'ext': " + GCC)
        text = toolchain.describe_build_error(e)
        self.assertTrue(text.startswith("RuntimeError: Error building extension 'ext': "
                                        "main.cpp:9:3: error: expected"), text)
        self.assertIn("ninja: build stopped", text)  # the whole output follows
        self.assertIsNone(toolchain.describe_build_error(ValueError("bad")))


class EnvironmentTest(unittest.TestCase):
    def test_the_parents_toolchain_and_scratch_folders(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            toolchain.apply_environment(["PATH=/env/bin:/usr/bin", "CUDA_HOME=/opt/cuda", "bad"])
            toolchain.scratch_folders("/scratch/work", "cpu")
            self.assertEqual(os.environ["PATH"], "/env/bin:/usr/bin")
            self.assertEqual(os.environ["CUDA_HOME"], "/opt/cuda")
            self.assertEqual(os.environ["TORCH_EXTENSIONS_DIR"], "/scratch/work/extensions")
            self.assertEqual(os.environ["TRITON_CACHE_DIR"], "/scratch/work/triton")
            self.assertEqual(os.environ["TRITON_INTERPRET"], "1")  # the CPU: interpreted
        with mock.patch.dict(os.environ, {}, clear=True):
            toolchain.scratch_folders("/scratch/work", "cuda")
            self.assertNotIn("TRITON_INTERPRET", os.environ)


if __name__ == "__main__":
    unittest.main()
