"""Fuzzes the bridge's side of the runner protocol (python/kope_bridge/protocol.py).

Mutated frames from the golden messages (testdata/contract/protocol.json) go through
Channel.receive over a socket pair and their payloads through Reader, as the bridge decodes each
request. A malformed frame may only raise ProtocolError (or EOFError for a cut frame); any other
exception is a finding and fails the run with the frame that caused it, in hex.

    python3 fuzz/protocol_py_fuzz.py [--runs N] [--seed S]
"""
import argparse
import json
import os
import random
import socket
import struct
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from kope_bridge import protocol as p  # noqa: E402

ARENA = 4096


def decode(mtype, payload):
    """Reads a request's fields the way the bridge's handlers do."""
    r = p.Reader(payload)
    if mtype == p.HELLO:
        r.take("=BB"), r.string()
    elif mtype == p.LOAD:
        r.string()
    elif mtype in (p.MAP, p.MAP_SHARED):
        r.take("=Q")
    elif mtype == p.SHARE:
        r.take("=QQ")
    elif mtype in (p.CALL, p.REF_CALL, p.CHECK, p.DRAW):
        spec = r.call_spec(ARENA)
        if mtype == p.CHECK:
            for _ in spec.outputs:
                r.take("=dd")
        elif mtype == p.DRAW:
            r.take("=QB")
            for _ in spec.inputs:
                r.take("=B7d")
    elif mtype == p.TIME:
        _, _, n = r.take("=IBI")
        for _ in range(min(n, 64)):
            r.call_spec(ARENA)
    elif mtype == p.POISON:
        r.string()
        for _ in range(min(r.take("=I"), 64)):
            r.take("=QQ"), r.string()
    elif mtype == p.REPLY:
        _, _, _, _, n = r.take("=IiQQI")
        r.take_list(f"={min(n, 1 << 16)}q")
        r.string()


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(6)
        if choice == 0 and data:  # flip bits
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif choice == 1 and data:  # an interesting integer over four bytes
            at = rng.randrange(len(data))
            value = rng.choice([0, 1, 0x7F, 0x80, 0xFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF])
            data[at:at + 4] = struct.pack("=I", value)
        elif choice == 2:  # truncate
            del data[rng.randrange(len(data) + 1):]
        elif choice == 3:  # insert random bytes
            at = rng.randrange(len(data) + 1)
            data[at:at] = os.urandom(rng.randint(1, 16))
        elif choice == 4 and data:  # duplicate a slice
            a = rng.randrange(len(data))
            data[a:a] = data[a:a + rng.randint(1, 32)]
        elif choice == 5 and len(data) >= 8:  # fix the header's length to the payload's
            data[4:8] = struct.pack("=I", len(data) - 8)
    return bytes(data)


def one(frame):
    a, b = socket.socketpair()
    try:
        a.sendall(frame)
        a.shutdown(socket.SHUT_WR)
        channel = p.Channel(os.dup(b.fileno()))
        try:
            mtype, payload, fds = channel.receive()
            for fd in fds:
                os.close(fd)
            decode(mtype, payload)
        finally:
            channel.sock.close()
    except (p.ProtocolError, EOFError):
        pass
    finally:
        a.close()
        b.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with open(os.path.join(ROOT, "testdata/contract/protocol.json")) as f:
        seeds = [bytes.fromhex(m["frame_hex"]) for m in json.load(f)["messages"]]
    for run in range(args.runs):
        frame = mutate(rng, rng.choice(seeds))
        if len(frame) >= 8 and struct.unpack_from("=I", frame, 4)[0] > len(frame) + 64:
            frame = frame[:4] + struct.pack("=I", len(frame) - 8) + frame[8:]  # no long waits
        try:
            one(frame)
        except Exception as e:  # noqa: BLE001: every other exception is a finding
            print(f"protocol_py_fuzz: run {run} (seed {args.seed}): {type(e).__name__}: {e}\n"
                  f"  frame {frame.hex()}", file=sys.stderr)
            return 1
    print(f"protocol_py_fuzz: {args.runs} frames, seed {args.seed}: no finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
