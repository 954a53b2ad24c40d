"""The runner control protocol, the bridge's side (mirror of src/runner/protocol.h).

Frames: a header of two native-endian u32 (type, payload length), then the payload. The parent
sends one request and reads one reply; the bridge sends HELLO once after confining itself.
"""
import socket
import struct
from dataclasses import dataclass, field

HELLO, LOAD, MAP, CALL, TIME, QUIT, REPLY = 1, 2, 3, 4, 5, 6, 100
# The checking requests (python/kope_bridge/checker.py).
SHARE, MAP_SHARED, REF_CALL, POISON, CHECK, DRAW = 7, 8, 9, 10, 11, 12
OK, KERNEL_ERROR, LOAD_ERROR, BAD_REQUEST = 0, 1, 2, 3

MAX_PAYLOAD = 256 << 20
MAX_TENSORS = 256
MAX_ROTATION = 64
MAX_TIMED_CALLS = 10_000_000
MAX_DIMS = 8

# kope_dtype -> (torch dtype name, element bytes); order as in include/kope/kernel.h.
DTYPES = {0: ("float32", 4), 1: ("float64", 8), 2: ("float16", 2), 3: ("bfloat16", 2),
          4: ("int32", 4), 5: ("int64", 8), 6: ("bool", 1)}


class ProtocolError(Exception):
    """A malformed request: answered with BAD_REQUEST (a bug in the parent)."""


@dataclass
class Slot:
    dtype: int
    shape: list
    strides: list  # in elements; empty means row-major contiguous
    offset: int

    def byte_range(self, arena_bytes):
        """(offset, bytes) of the elements the slot spans in an arena of `arena_bytes`;
        ProtocolError where it is not a valid tensor of it. Remembered for the last arena size
        (a slot is never changed once parsed)."""
        known = self.__dict__.get("_range")
        if known is not None and known[0] == arena_bytes:
            return known[1]
        span = self._byte_range(arena_bytes)
        self._range = (arena_bytes, span)
        return span

    def _byte_range(self, arena_bytes):
        if self.dtype not in DTYPES:
            raise ProtocolError(f"unknown dtype {self.dtype}")
        size = DTYPES[self.dtype][1]
        if len(self.shape) > MAX_DIMS or any(d < 0 for d in self.shape):
            raise ProtocolError("invalid shape")
        strides = self.strides or contiguous_strides(self.shape)
        if len(strides) != len(self.shape) or any(s < 0 for s in strides):
            raise ProtocolError("invalid strides")
        if self.offset % size != 0:
            raise ProtocolError("misaligned offset")
        if 0 in self.shape:
            return self.offset, 0
        span = 1 + sum((d - 1) * s for d, s in zip(self.shape, strides))
        end = self.offset + span * size
        if end > arena_bytes:
            raise ProtocolError("tensor leaves the arena")
        return self.offset, span * size


@dataclass
class CallSpec:
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)


def contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return list(reversed(strides))


class Reader:
    def __init__(self, payload):
        self.data, self.pos = payload, 0

    def take(self, fmt):
        value = self._unpack(fmt)
        return value[0] if len(value) == 1 else value

    def take_list(self, fmt):
        """take's values as a list, however many (none for a format of none)."""
        return list(self._unpack(fmt))

    def _unpack(self, fmt):
        n = struct.calcsize(fmt)
        if self.pos + n > len(self.data):
            raise ProtocolError("payload too short")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return values

    def string(self, max_bytes=1 << 20):
        n = self.take("=I")
        if n > max_bytes or self.pos + n > len(self.data):
            raise ProtocolError("string too long")
        s = self.data[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def take_bytes(self, max_bytes):
        n = self.take("=I")
        if n > max_bytes or self.pos + n > len(self.data):
            raise ProtocolError("field too long")
        b = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return b

    def at_end(self):
        return self.pos == len(self.data)

    def call_spec(self, arena_bytes):
        """The call's tensors, checked against an arena of `arena_bytes`. A spec parsed before
        from the same bytes for the same arena size is returned again (the parent sends one
        size set's spec with every request of it): callers never change a CallSpec."""
        start = self.pos
        for n in _SPEC_LENGTHS:
            known = _SPECS.get((arena_bytes, bytes(self.data[start:start + n])))
            if known is not None:
                self.pos = start + n
                return known
        n_in, n_out = self.take("=II")
        if n_in + n_out > MAX_TENSORS:
            raise ProtocolError("too many tensors")
        spec = CallSpec()
        for k in range(n_in + n_out):
            dtype, ndim = self.take("=iI")
            if ndim > MAX_DIMS:
                raise ProtocolError("too many dimensions")
            shape = self.take_list(f"={ndim}q")
            n_strides = self.take("=I")
            if n_strides not in (0, ndim):
                raise ProtocolError("stride count differs from rank")
            strides = self.take_list(f"={n_strides}q")
            slot = Slot(dtype, shape, strides, self.take("=Q"))
            slot.byte_range(arena_bytes)
            (spec.inputs if k < n_in else spec.outputs).append(slot)
        if len(_SPECS) >= MAX_KNOWN_SPECS:
            _SPECS.clear()
            _SPEC_LENGTHS.clear()
        n = self.pos - start
        _SPECS[arena_bytes, bytes(self.data[start:self.pos])] = spec
        if n not in _SPEC_LENGTHS:
            _SPEC_LENGTHS.append(n)
        return spec


# Specs parsed so far, by arena size and their bytes, and the lengths of those bytes: parsing a
# spec's bytes always consumes the same bytes, so a known spec's bytes at the read position are
# that spec.
MAX_KNOWN_SPECS = 64
_SPECS = {}
_SPEC_LENGTHS = []


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("=I", len(b)) + b


def hello_payload(seccomp, rlimits, notes):
    return struct.pack("=BB", int(seccomp), int(rlimits)) + _string("\n".join(notes))


def reply_payload(status=OK, rc=0, flushed_bytes=0, ns=(), message="", copy_ns=0):
    # Error messages are cut short; an OK reply's message is a checker's summary, kept whole.
    message = message if status == OK else message[:4000]
    return (struct.pack("=IiQQI", status, rc, flushed_bytes, copy_ns, len(ns)) +
            struct.pack(f"={len(ns)}q", *ns) + _string(message))


class Channel:
    """Frames over the control socket (file descriptor `fd`)."""

    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)

    def send(self, mtype, payload=b"", fd=-1):
        frame = struct.pack("=II", mtype, len(payload)) + payload
        if fd >= 0:  # the descriptor travels with the frame's first bytes
            sent = socket.send_fds(self.sock, [frame], [fd])
            frame = frame[sent:]
        if frame:
            self.sock.sendall(frame)

    def _exactly(self, n, fds):
        chunks, got = [], 0
        while got < n:
            data, ancdata, _, _ = self.sock.recvmsg(n - got, socket.CMSG_SPACE(8 * 4))
            for level, kind, cdata in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    usable = len(cdata) - len(cdata) % 4
                    fds.extend(struct.unpack(f"={usable // 4}i", cdata[:usable]))
            if not data:
                raise EOFError("the parent went away")
            chunks.append(data)
            got += len(data)
        return b"".join(chunks)

    def receive(self):
        """Returns (type, payload, fds); EOFError when the parent closed the socket."""
        fds = []
        mtype, length = struct.unpack("=II", self._exactly(8, fds))
        if length > MAX_PAYLOAD:
            raise ProtocolError("frame too large")
        payload = self._exactly(length, fds) if length else b""
        return mtype, payload, fds
