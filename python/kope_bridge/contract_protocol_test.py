"""The control protocol's golden messages (testdata/contract/protocol.json), on the bridge's
side: HELLO and REPLY as protocol.py writes them; every request's frame as protocol.Channel
receives it; every request's payload through the bridge's own handler (serve.Server's and
checker.Checker's, on the CPU), which must read the file's fields from the file's bytes. The
bytes are the C++ parent's (src/runner/protocol_contract_test.cc checks a real Runner sends
them). Run by ctest: python3 -m unittest kope_bridge.contract_protocol_test."""
import json
import os
import socket
import types
import unittest
from unittest import mock

import torch

from . import checker
from . import protocol as p
from . import serve
from .contract_compare_test import load, number

NUMBERS = {"hello": p.HELLO, "load": p.LOAD, "map": p.MAP, "call": p.CALL, "time": p.TIME,
           "quit": p.QUIT, "share": p.SHARE, "map_shared": p.MAP_SHARED, "ref_call": p.REF_CALL,
           "poison": p.POISON, "check": p.CHECK, "draw": p.DRAW, "reply": p.REPLY}
TORCH_NAMES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
               "i32": "int32", "i64": "int64", "bool": "bool"}

DATA = load("protocol.json")
ARENA = DATA["constants"]["arena_bytes"]


def messages(kind):
    return [m for m in DATA["messages"] if m["type"] == kind]


def payload(m):
    return bytes.fromhex(m["payload_hex"])


def reader(kind):
    (m,) = messages(kind)
    return p.Reader(payload(m)), m["fields"]


def slots_of(spec):
    return {"inputs": [vars_of(s) for s in spec.inputs],
            "outputs": [vars_of(s) for s in spec.outputs]}


def vars_of(s):
    return {"dtype": s.dtype, "shape": s.shape, "strides": s.strides, "offset": s.offset}


def reply_fields(data):
    r = p.Reader(data)
    status, rc, flushed, copy_ns, n = r.take("=IiQQI")
    return {"status": status, "rc": rc, "flushed_bytes": flushed, "copy_ns": copy_ns,
            "ns": r.take_list(f"={n}q"), "message": r.string(1 << 20)}


def server(kernels="/scratch/kernels"):
    """A CPU bridge server that has a kernel and an arena of the file's size (the handlers'
    preconditions), with nothing loaded or mapped for real."""
    s = serve.Server(types.SimpleNamespace(kernels=kernels, device=None), channel=None)
    s.torch = torch
    s.kernel, s.arena_bytes = object(), ARENA
    s.host = torch.zeros(ARENA, dtype=torch.uint8)
    s.checker = checker.Checker(s)
    return s


def memfd(nbytes):
    fd = os.memfd_create("kope-contract", os.MFD_CLOEXEC)
    os.ftruncate(fd, nbytes)
    return fd


class ProtocolContractTest(unittest.TestCase):
    def setUp(self):
        p._SPECS.clear()
        p._SPEC_LENGTHS.clear()

    def test_types_and_constants_are_the_files_ones(self):
        for m in DATA["messages"]:
            self.assertEqual(NUMBERS[m["type"]], m["number"], m["type"])
        k = DATA["constants"]
        self.assertEqual({int(n): (TORCH_NAMES[name], size) for n, (name, size)
                          in k["dtypes"].items()}, p.DTYPES)
        self.assertEqual(k["reply_status"], {"ok": p.OK, "kernel_error": p.KERNEL_ERROR,
                                             "load_error": p.LOAD_ERROR,
                                             "bad_request": p.BAD_REQUEST})
        self.assertEqual((k["max_payload_bytes"], k["max_tensors_per_call"], k["max_rotation"],
                          k["max_timed_calls"], k["max_dims"]),
                         (p.MAX_PAYLOAD, p.MAX_TENSORS, p.MAX_ROTATION, p.MAX_TIMED_CALLS,
                          p.MAX_DIMS))

    def test_hello_and_reply_are_written_as_the_file_has_them(self):
        a, b = socket.socketpair()
        channel = p.Channel(a.detach())
        for m in messages("hello") + messages("reply"):
            f = m["fields"]
            if m["type"] == "hello":
                data = p.hello_payload(f["seccomp"], f["rlimits"], f["notes"])
            else:
                data = p.reply_payload(status=f["status"], rc=f["rc"],
                                       flushed_bytes=f["flushed_bytes"], ns=f["ns"],
                                       message=f["message"], copy_ns=f["copy_ns"])
                self.assertEqual(reply_fields(payload(m)), f)
            self.assertEqual(data.hex(), m["payload_hex"], m["type"])
            channel.send(m["number"], data)
            frame = bytes.fromhex(m["frame_hex"])
            self.assertEqual(b.recv(len(frame), socket.MSG_WAITALL), frame)
        channel.sock.close()
        b.close()

    def test_every_request_frame_is_received_as_sent(self):
        a, b = socket.socketpair()
        channel = p.Channel(a.detach())
        for m in DATA["messages"]:
            if m["type"] in ("hello", "reply"):
                continue
            b.sendall(bytes.fromhex(m["frame_hex"]))
            mtype, data, fds = channel.receive()
            self.assertEqual((mtype, data, fds), (m["number"], payload(m), []), m["type"])
        channel.sock.close()
        b.close()

    def test_every_call_spec_is_read_as_the_file_has_it(self):
        for m in DATA["messages"]:
            f = m["fields"]
            if "call" in f:
                spec = p.Reader(payload(m)).call_spec(ARENA)
                self.assertEqual(slots_of(spec), f["call"], m["type"])

    def test_load_reads_its_path(self):
        r, f = reader("load")
        s = server(kernels=os.path.dirname(f["path"]))
        s.kernel = None
        got = reply_fields(s.load(r))  # no such file here: the kernel's load fails, not the read
        self.assertEqual(got["status"], p.LOAD_ERROR)
        self.assertIn(f["path"], got["message"])
        s = server(kernels="/elsewhere")
        s.kernel = None
        with self.assertRaisesRegex(p.ProtocolError, "kernels are loaded from /elsewhere only"):
            s.load(reader("load")[0])

    def test_map_reads_its_size_and_whether_to_pin(self):
        for m in messages("map") + messages("map_shared"):
            s, fd = server(), memfd(ARENA)
            s.arena_bytes = 0
            arena = types.SimpleNamespace(mm=None, host=torch.zeros(1), mirror=None,
                                          nbytes=m["fields"]["bytes"])
            with mock.patch.object(serve.Server, "new_arena", return_value=arena), \
                    mock.patch.object(serve.Server, "pin_current") as pin, \
                    mock.patch.object(serve.Server, "cap_device_memory"):
                handler = s.map if m["type"] == "map" else s.map_shared
                self.assertEqual(reply_fields(handler(p.Reader(payload(m)), fd))["status"], p.OK)
            os.close(fd)
            self.assertEqual(s.arena_bytes, m["fields"]["bytes"])
            self.assertEqual(pin.called, m["fields"].get("copies", True), m["type"])

    def test_call_and_time_read_their_calls(self):
        s, seen = server(), []
        with mock.patch.object(serve.Server, "timed_calls",
                               side_effect=lambda *a, **k: seen.append((a, k)) or b"") as timed:
            r, f = reader("call")
            s.call(r)
            r, t = reader("time")
            s.time(r)
        (call, _), (rotation, _) = seen
        self.assertEqual([slots_of(x) for x in call[0]], [f["call"]])
        self.assertEqual(call[1:], (1, False))
        self.assertEqual([slots_of(x) for x in rotation[0]], t["rotation"])
        self.assertEqual(rotation[1:], (t["count"], t["flush"]))
        self.assertEqual(timed.call_count, 2)

    def test_share_draw_poison_ref_call_and_check_read_their_fields(self):
        s = server()
        c = s.checker
        r, f = reader("share")
        reply, fd = c.share(r)
        self.assertEqual((reply_fields(reply)["status"], c.peer_token, c.peer.nbytes),
                         (p.OK, f["token"], f["bytes"]))
        try:
            self.draw_reads_its_fields(s)
            with self.assertRaisesRegex(p.ProtocolError, "REF_CALL before DRAW"):
                c.reference_call(reader("ref_call")[0])  # read whole; timing draws give none
            self.poison_reads_its_spans(s)
            self.check_reads_its_tolerances(s)
        finally:
            c.release()

    def draw_reads_its_fields(self, s):
        r, f = reader("draw")
        self.assertEqual(reply_fields(s.checker.draw(r))["status"], p.OK)
        for slot, d in zip(f["call"]["inputs"], f["distributions"]):
            dtype = getattr(torch, p.DTYPES[slot["dtype"]][0])
            t = p.Slot(**slot).byte_range(ARENA)
            v = s.host[t[0]:t[0] + t[1]].view(dtype).to(torch.float64)
            if d["kind"] == 4:  # ties
                k = d["num_distinct"]
                self.assertLessEqual(set(v.tolist()), {(j - k // 2) * 0.5 for j in range(k)})
            else:  # uniform
                self.assertTrue(bool(((v >= number(d["low"])) & (v < number(d["high"]))).all()),
                                (d, v))

    def poison_reads_its_spans(self, s):
        r, f = reader("poison")
        self.assertEqual(reply_fields(s.checker.poison(r))["status"], p.OK)
        peer = bytes(s.checker.peer.tensor.numpy())
        guard = bytes.fromhex(f["guard"])
        for span in f["spans"]:
            at, n, element = span["offset"], span["bytes"], bytes.fromhex(span["element"])
            self.assertEqual(peer[at:at + n], element * (n // len(element)))
            self.assertEqual(peer[at + n:at + n + len(guard)], guard)

    def check_reads_its_tolerances(self, s):
        """The first output is 1000 against 1000.5: within rtol 1e-3, not within atol 1e-3."""
        r, f = reader("check")
        c, spec = s.checker, p.Reader(payload(messages("check")[0])).call_spec(ARENA)
        self.assertEqual([tuple(map(number, t)) for t in f["tolerances"]][0], (1e-3, 0.0))
        peer = c.peer.tensor
        for slot in spec.inputs:  # the candidate's inputs are the reference's
            at, n = slot.byte_range(ARENA)
            peer[at:at + n] = s.host[at:at + n]
        expected = []
        for slot, values in zip(spec.outputs, ([1000.0] + [1.0] * 7, [1, 0, 1, 1, 0])):
            at, n = slot.byte_range(ARENA)
            dtype = torch.uint8 if slot.dtype == 6 else torch.float32
            expected.append(torch.tensor(values, dtype=dtype))
            peer[at:at + n] = expected[-1].view(torch.uint8)
        peer[1024:1028] = torch.tensor([1000.5], dtype=torch.float32).view(torch.uint8)
        c.expected = expected
        result = json.loads(reply_fields(c.check(r))["message"])
        self.assertEqual((result["input"], result["guard"]), (-1, None))
        self.assertEqual([o["mismatches"] for o in result["outputs"]], [0, 0])


if __name__ == "__main__":
    unittest.main()
