"""Tests of the bridge's side of the control protocol (protocol.py) that need no runner. Run by
ctest: python3 -m unittest kope_bridge.protocol_test."""
import struct
import unittest

from . import protocol as p


def slot(dtype, shape, offset, strides=()):
    return (struct.pack("=iI", dtype, len(shape)) + struct.pack(f"={len(shape)}q", *shape) +
            struct.pack("=I", len(strides)) + struct.pack(f"={len(strides)}q", *strides) +
            struct.pack("=Q", offset))


def spec_bytes(*slots, inputs=1):
    return struct.pack("=II", inputs, len(slots) - inputs) + b"".join(slots)


class CallSpecTest(unittest.TestCase):
    def setUp(self):
        p._SPECS.clear()
        p._SPEC_LENGTHS.clear()

    def test_a_spec_is_parsed_with_its_ranges_and_the_bytes_after_it_read_next(self):
        data = spec_bytes(slot(0, [4, 8], 0), slot(1, [3], 128, strides=[2])) + \
            struct.pack("=Q", 77)
        r = p.Reader(data)
        spec = r.call_spec(1024)
        self.assertEqual([s.shape for s in spec.inputs], [[4, 8]])
        self.assertEqual(spec.outputs[0].strides, [2])
        self.assertEqual(spec.inputs[0].byte_range(1024), (0, 128))
        self.assertEqual(spec.outputs[0].byte_range(1024), (128, 5 * 8))
        self.assertEqual(r.take("=Q"), 77)
        self.assertTrue(r.at_end())

    def test_the_same_bytes_give_the_same_spec_again_and_other_bytes_their_own(self):
        a = spec_bytes(slot(0, [16], 0), slot(0, [16], 64))
        b = spec_bytes(slot(0, [2, 8], 0), slot(0, [16], 64))
        first = p.Reader(a + b"\x01").call_spec(4096)
        r = p.Reader(a + b"\x02")
        self.assertIs(r.call_spec(4096), first)
        self.assertEqual(r.take("=B"), 2)
        other = p.Reader(b).call_spec(4096)
        self.assertIsNot(other, first)
        self.assertEqual(other.inputs[0].shape, [2, 8])
        self.assertIs(p.Reader(a).call_spec(4096), first)

    def test_a_spec_known_for_one_arena_is_checked_again_for_another(self):
        a = spec_bytes(slot(0, [16], 0), slot(0, [16], 64))
        p.Reader(a).call_spec(4096)
        with self.assertRaises(p.ProtocolError):
            p.Reader(a).call_spec(100)  # the output leaves a 100-byte arena

    def test_malformed_specs_are_refused(self):
        for data in (spec_bytes(slot(0, [16], 2)),  # misaligned
                     spec_bytes(slot(0, [16, 2], 0, strides=[1])),  # strides of another rank
                     spec_bytes(slot(0, [1] * (p.MAX_DIMS + 1), 0)),
                     spec_bytes(slot(0, [16], 0))[:-3]):  # cut short
            with self.assertRaises(p.ProtocolError):
                p.Reader(data).call_spec(4096)

    def test_known_specs_are_forgotten_past_the_bound(self):
        for n in range(p.MAX_KNOWN_SPECS + 1):
            p.Reader(spec_bytes(slot(0, [n + 1], 0))).call_spec(1 << 20)
        self.assertLessEqual(len(p._SPECS), p.MAX_KNOWN_SPECS)


if __name__ == "__main__":
    unittest.main()
