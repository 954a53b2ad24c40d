"""The bridge's server loop: `python3 kope_bridge_main.py --serve --control-fd 3 --kernels DIR ...`
with the arguments kope-runner takes (src/runner/runner_main.cc).

Confinement: the parent starts the bridge inside bubblewrap exactly like kope-runner; the bridge
applies the resource limits itself. It installs no seccomp filter (torch.compile runs the C++
compiler, which needs exec): the hello message says so, and kope reports it with the outcome.

A task's reference runner also serves the checking requests (checker.py): it shares memory with
a ModelNew candidate's runner, which maps it with MAP_SHARED and works there without copies.
"""
import argparse
import json
import mmap
import os
import resource
import sys
import types

from . import clock
from . import protocol as p
from .diagnostics import RequestProfile, describe_error, device_memory_note  # noqa: F401
from . import shared_device
from . import toolchain

# Arenas kept mapped at once (the smallest goes first).
MAX_MAPPED_ARENAS = 3


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="kope-bridge")
    ap.add_argument("--serve", action="store_true", required=True)
    ap.add_argument("--control-fd", type=int, required=True)
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--cpu-seconds", type=int, default=0)
    ap.add_argument("--max-file-bytes", type=int, default=0)
    ap.add_argument("--max-address-space-bytes", type=int, default=0)
    ap.add_argument("--max-processes", type=int, default=0)
    ap.add_argument("--max-data-bytes", type=int, default=0)
    ap.add_argument("--allow-network", action="store_true")
    ap.add_argument("--device", default="")
    ap.add_argument("--max-device-bytes", type=int, default=0)
    # A task's runner (the reference, the torch.compile reference point) imports
    # torch.compile's front end while it waits; a candidate's spare does not: that import takes
    # longer than PyTorch's own, and a spare
    # not yet ready when the next candidate comes makes that candidate wait.
    ap.add_argument("--preload-compiler", action="store_true")
    # NAME=VALUE for this process's environment: the extension toolchain (toolchain.py).
    ap.add_argument("--env", action="append", default=[])
    return ap.parse_args(argv)


def apply_limits(args):
    """The same rlimits as kope-runner; returns notes on any that could not be set."""
    notes = []
    limits = [(resource.RLIMIT_CPU, args.cpu_seconds), (resource.RLIMIT_FSIZE, args.max_file_bytes),
              (resource.RLIMIT_AS, args.max_address_space_bytes),
              (resource.RLIMIT_DATA, args.max_data_bytes), (resource.RLIMIT_CORE, None)]
    if os.geteuid() != 0:
        limits.append((resource.RLIMIT_NPROC, args.max_processes))
    for which, value in limits:
        if value == 0:
            continue
        value = 0 if value is None else value
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError) as e:
            notes.append(f"rlimit {which}: {e}")
    return notes


def warm_up(torch, device, compiler):
    """What a spare runner does while it waits, instead of in its first requests: it gets its
    CUDA context, and a task's runner (`compiler`) what torch.compile() imports (dynamo and
    inductor's front end: seconds of imports, which the torch.compile runner's LOAD paid
    otherwise). torch.compile() of a function compiles nothing until it is called."""
    torch.empty(1, device=device)
    if compiler:
        try:
            torch.compile(lambda x: x)
        except Exception:  # noqa: BLE001 (no torch.compile here: the LOAD that needs it says so)
            pass


class Server:
    def __init__(self, args, channel):
        self.args = args
        self.channel = channel
        self.kernels_dir = os.path.normpath(args.kernels)
        self.device = "cpu"
        if args.device:
            self.device = "cuda:0"  # CUDA_VISIBLE_DEVICES selects the GPU
        self.kernel = None
        # Arenas mapped, by (device, inode, bytes); the current one's fields are copied below.
        # An arena mapped again keeps its mapping, mirror and pinning: the evaluator maps a
        # candidate's bench arena, its smaller check arenas, then the bench arena again, and
        # hands a spare the next candidate's arena ahead of time.
        self.arenas = {}
        self.current = None  # the current arena's entry in self.arenas
        self.arena = None  # mmap
        self.arena_bytes = 0
        self.host = None  # torch uint8 tensor over the arena
        self.mirror = None  # device copy of the arena (GPU runner)
        self.host_address = 0
        # The current arena is device memory the reference runner shares (MAP_SHARED on a GPU):
        # the kernel's tensors live there, nothing is copied, and the reference checks them.
        self.device_shared = False
        self.shared = None  # that arena, while mapped
        self.checker = None  # serves the checking requests when this runner is a reference
        # The mirror holds the inputs as the parent last wrote them: set by a TIME's upload,
        # cleared by MAP (the parent writes new inputs before it maps again) and by CALL (the
        # call's inputs are its own). kope-runner's GPU path does the same.
        self.inputs_resident = False
        # DRAW's timing modes drew the inputs into the mirror: the arena's host pages hold none,
        # and an upload would copy them over the drawn ones. Until the next MAP (the parent
        # writes the arena before it maps it) an upload is a bad request.
        self.host_stale = False
        self.copy_ns = 0  # this request's copies between the arena and the GPU

    def run(self):
        import torch  # once per runner, never per call
        self.torch = torch
        torch.set_grad_enabled(False)
        self.cap_device_memory(0)
        from .checker import Checker
        self.checker = Checker(self)
        if self.device != "cpu":
            warm_up(torch, self.device, self.args.preload_compiler)
        clock.bind(torch, self.device)  # before any problem or candidate code is imported
        profile = RequestProfile.from_environment()
        while True:
            try:
                mtype, payload, fds = self.channel.receive()
            except (EOFError, ConnectionError):
                return 0
            map_fd = fds[0] if fds and mtype in (p.MAP, p.MAP_SHARED) else -1
            for fd in fds:
                if fd != map_fd:
                    os.close(fd)
            if mtype == p.QUIT:
                # Nothing of this runner outlives it: ending without the interpreter's
                # finalization (PyTorch's teardown: most of a second) hands the parent its
                # exit at once, and the next evaluation's result comes back that much sooner.
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)
            reader = p.Reader(payload)
            reply_fd = -1
            try:
                handler = {p.LOAD: self.load, p.MAP: self.map, p.CALL: self.call,
                           p.TIME: self.time, p.MAP_SHARED: self.map_shared,
                           p.SHARE: self.checker.share, p.REF_CALL: self.checker.reference_call,
                           p.POISON: self.checker.poison, p.CHECK: self.checker.check,
                           p.DRAW: self.checker.draw}.get(mtype)
                if handler is None:
                    raise p.ProtocolError("unexpected message type")
                if profile is not None:
                    profile.enable()
                if mtype in (p.MAP, p.MAP_SHARED):
                    reply = handler(reader, map_fd)
                elif mtype == p.SHARE:
                    reply, reply_fd = handler(reader)
                else:
                    reply = handler(reader)
            except p.ProtocolError as e:
                reply = p.reply_payload(p.BAD_REQUEST, message=str(e))
            except Exception as e:  # noqa: BLE001 (a check that failed: the GPU's memory full)
                reply = p.reply_payload(p.KERNEL_ERROR, rc=1, message=describe_error(e))
            finally:
                if profile is not None:
                    profile.disable()
                if map_fd >= 0:
                    os.close(map_fd)
            self.channel.send(p.REPLY, reply, reply_fd)

    # -- requests -----------------------------------------------------------------------------
    def load(self, r):
        path = os.path.normpath(r.string(4096))
        if not r.at_end():
            raise p.ProtocolError("malformed LOAD")
        if self.kernel is not None:
            raise p.ProtocolError("a kernel is already loaded")
        if os.path.dirname(path) != self.kernels_dir:
            raise p.ProtocolError(f"kernels are loaded from {self.kernels_dir} only")
        from .kernels import TorchKernel
        try:
            with open(path) as f:
                spec = json.load(f)
            if spec.get("mode") != "modelnew":
                # Arenas mapped ahead were a candidate's: a task's kernel maps its own.
                for arena in self.arenas.values():
                    self.release_arena(arena)
                self.arenas.clear()
                self.release_shared()
                self.arena = self.host = self.mirror = self.current = None
                self.arena_bytes = self.host_address = 0
                self.device_shared = False
            self.kernel = TorchKernel(spec, self.device)
        except Exception as e:  # the problem or candidate failed to load: the kernel's fault
            return p.reply_payload(p.LOAD_ERROR, message=describe_error(e))
        return p.reply_payload()

    def map(self, r, fd):
        nbytes = r.take("=Q")
        pin = r.take("=B") if not r.at_end() else 1
        if not r.at_end() or fd < 0 or nbytes == 0 or pin > 1:
            raise p.ProtocolError("malformed MAP")
        st = os.fstat(fd)
        if st.st_size < nbytes:
            raise p.ProtocolError("the arena descriptor is smaller than announced")
        self.inputs_resident = False
        self.host_stale = False
        self.device_shared = False
        key = (st.st_dev, st.st_ino, nbytes)
        arena = self.arenas.get(key)
        if arena is None:
            arena = self.arenas[key] = self.new_arena(fd, nbytes)
        while len(self.arenas) > MAX_MAPPED_ARENAS:
            # The smallest other one goes: small arenas are the cheap ones to map again.
            smallest = min((k for k in self.arenas if k != key), key=lambda k: k[2])
            self.release_arena(self.arenas.pop(smallest))
        self.current = arena
        self.arena, self.host, self.mirror = arena.mm, arena.host, arena.mirror
        self.arena_bytes, self.host_address = nbytes, arena.host.data_ptr()
        # Room for the mirrors and for this arena's input snapshots, besides the kernel's own.
        self.cap_device_memory(self.mirrored_bytes() + nbytes, nbytes)
        if pin:
            self.pin_current()  # now, under MAP's timeout, rather than in a timed call
        return p.reply_payload()

    def map_shared(self, r, fd):
        """The arena the reference runner shares: on a GPU its device memory, imported as this
        runner's tensors (the previous shared arena is unmapped); on the host a memfd, mapped
        as MAP maps the parent's arenas."""
        if self.device == "cpu":
            return self.map(r, fd)
        nbytes = r.take("=Q")
        if not r.at_end() or fd < 0 or nbytes == 0:
            raise p.ProtocolError("malformed MAP_SHARED")
        self.release_shared()
        allocation = shared_device.import_fd(fd, nbytes)
        self.shared = types.SimpleNamespace(
            allocation=allocation, tensor=shared_device.tensor(self.torch, allocation, self.device))
        self.current = None
        self.arena, self.host, self.mirror = None, None, self.shared.tensor
        self.arena_bytes, self.host_address = nbytes, 0
        self.device_shared = True
        self.host_stale = False
        self.cap_device_memory(self.mirrored_bytes(), nbytes)
        self.inputs_resident = False
        return p.reply_payload()

    def release_shared(self):
        if self.shared is not None:
            if self.mirror is self.shared.tensor:
                self.mirror = None
                self.arena_bytes = 0
            self.shared.tensor = None
            clock.synchronize()
            self.shared.allocation.close()
            self.shared = None

    def new_arena(self, fd, nbytes):
        torch = self.torch
        arena = types.SimpleNamespace(nbytes=nbytes, mirror=None, pinned=0, pin_tried=False)
        arena.mm = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        arena.host = torch.frombuffer(arena.mm, dtype=torch.uint8)
        if self.device != "cpu":
            # Before the mirror is allocated: all mirrors, and this arena's input snapshots.
            self.cap_device_memory(self.mirrored_bytes() + 2 * nbytes, nbytes)
            arena.mirror = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
        return arena

    def mirrored_bytes(self):
        """The bytes of the arenas mapped, each mirrored on the GPU."""
        return sum(a.nbytes for a in self.arenas.values())

    def pin_current(self):
        """Page-locked, the arena copies to and from the GPU at full speed (as kope-runner's).
        Done when it is mapped, unless the parent said its inputs will be drawn on the GPU
        (MAP's pin flag): pinning populates every page (seconds for ten gigabytes), and such an
        arena is never copied. A copy pins an arena that is not pinned yet."""
        arena = self.current
        if self.device == "cpu" or arena is None or arena.pin_tried:
            return
        arena.pin_tried = True
        address = arena.host.data_ptr()
        cudart = self.torch.cuda.cudart()
        if cudart.cudaHostRegister(address, arena.nbytes, 0) == 0:
            arena.pinned = address
        else:
            clear = getattr(cudart, "cudaGetLastError", None)
            if clear is not None:
                clear()  # the failure is not a later kernel's error
            clock.synchronize()  # pageable copies still work

    def release_arena(self, arena):
        if arena.pinned:
            self.torch.cuda.cudart().cudaHostUnregister(arena.pinned)
        arena.mirror = None
        if self.device != "cpu":
            self.torch.cuda.empty_cache()

    def cap_device_memory(self, harness_bytes, tensor_bytes=0):
        """The kernel may allocate max_device_bytes on the GPU beyond what the bridge holds for
        it (the arenas' mirrors and a verified call's input snapshots), as in kope-runner,
        where the harness's own allocations are not counted; or twice its tensors' bytes
        (`tensor_bytes`, the arena's) where that is more: PyTorch code allocates its results
        and temporaries as it goes (KernelBench's 38_L1Norm_ takes 17 GB beyond its 17 GB
        of tensors). Memory shared by descriptor is outside PyTorch's allocator and its cap."""
        if self.device == "cpu" or not self.args.max_device_bytes:
            return
        allowance = max(self.args.max_device_bytes, 2 * tensor_bytes)
        total = self.torch.cuda.get_device_properties(0).total_memory
        self.torch.cuda.set_per_process_memory_fraction(
            min(1.0, (allowance + harness_bytes) / total), 0)

    def ready(self):
        if self.kernel is None:
            raise p.ProtocolError("no kernel loaded")
        if self.arena_bytes == 0:
            raise p.ProtocolError("no arena mapped")

    def view(self, base, slot):
        from .kernels import torch_dtype
        offset, nbytes = slot.byte_range(self.arena_bytes)
        dtype = torch_dtype(slot.dtype)
        if nbytes == 0:
            return self.torch.empty(slot.shape, dtype=dtype, device=base.device)
        strides = slot.strides or p.contiguous_strides(slot.shape)
        return base[offset:offset + nbytes].view(dtype).as_strided(slot.shape, strides)

    def tensors(self, spec):
        base = self.mirror if self.mirror is not None else self.host
        return ([self.view(base, s) for s in spec.inputs], [self.view(base, s) for s in spec.outputs])

    def ranges(self, spec):
        return [s.byte_range(self.arena_bytes) for s in spec.inputs + spec.outputs]

    def upload(self, spec):
        """Copies the call's inputs to the GPU. Outputs are not uploaded: every kernel's results
        are copied whole into them (TorchKernel.store), so the poison the parent wrote there
        could never show through."""
        if self.mirror is not None and not self.device_shared:
            if self.host_stale:
                raise p.ProtocolError("the inputs were drawn on the GPU: the arena's host "
                                      "copy is stale until the next MAP")
            start = clock.now_ns()
            self.pin_current()
            for s in spec.inputs:
                offset, nbytes = s.byte_range(self.arena_bytes)
                self.mirror[offset:offset + nbytes].copy_(self.host[offset:offset + nbytes],
                                                          non_blocking=True)
            clock.synchronize()
            self.copy_ns += clock.now_ns() - start

    def snapshot_inputs(self, spec):
        """Device copies of a verified call's inputs, to tell whether the call wrote them."""
        if self.mirror is None or self.device_shared:
            return None  # the kernel works on memory the checker reads: it sees any write
        start = clock.now_ns()
        copies = []
        for s in spec.inputs:
            offset, nbytes = s.byte_range(self.arena_bytes)
            copies.append(self.mirror[offset:offset + nbytes].clone())
        self.copy_ns += clock.now_ns() - start
        return copies

    def download(self, spec, inputs_before):
        """Copies the call's outputs to the arena, and any input the call modified (the parent
        compares the inputs with what it wrote: kope-runner copies them back too)."""
        if self.mirror is not None:
            clock.synchronize()
            if self.device_shared:
                return
            start = clock.now_ns()
            self.pin_current()
            ranges = [s.byte_range(self.arena_bytes) for s in spec.outputs]
            for (offset, nbytes), before in zip([s.byte_range(self.arena_bytes)
                                                 for s in spec.inputs], inputs_before):
                if not self.torch.equal(self.mirror[offset:offset + nbytes], before):
                    ranges.append((offset, nbytes))
            for offset, nbytes in ranges:
                self.host[offset:offset + nbytes].copy_(self.mirror[offset:offset + nbytes])
            self.copy_ns += clock.now_ns() - start

    def call(self, r):
        self.ready()
        spec = r.call_spec(self.arena_bytes)
        if not r.at_end():
            raise p.ProtocolError("trailing bytes after CALL")
        self.inputs_resident = False
        return self.timed_calls([spec], 1, False, verified=True)

    def time(self, r):
        self.ready()
        count, flush, n = r.take("=I"), r.take("=B"), r.take("=I")
        if n == 0 or n > p.MAX_ROTATION or count > p.MAX_TIMED_CALLS:
            raise p.ProtocolError("malformed TIME")
        rotation = [r.call_spec(self.arena_bytes) for _ in range(n)]
        if not r.at_end():
            raise p.ProtocolError("trailing bytes after TIME")
        return self.timed_calls(rotation, count, bool(flush), verified=False)

    def timed_calls(self, rotation, count, flush, verified):
        """A verified call (CALL) uploads its inputs and leaves its outputs in the arena. Timed
        batches (TIME) upload the inputs once after each MAP or CALL and drop the outputs once
        checked for count, dtype and size: the parent never reads them, and a batch of 1 ms
        calls would otherwise spend most of its time copying (a store into the arena copies
        the output once more: 3 ms for 6.4 GB, at every TIME request of a large problem)."""
        from .kernels import Tally
        tally = Tally()
        self.copy_ns = 0
        try:  # a copy that fails (the GPU's memory full) is the call's error, as the kernel's
            views = []
            for spec in rotation:
                if verified or not self.inputs_resident:
                    self.upload(spec)
                views.append(self.tensors(spec))
            inputs_before = self.snapshot_inputs(rotation[0]) if verified else None
            if not verified:
                self.inputs_resident = True
            prepared = [self.kernel.prepare(inputs) for inputs, _ in views]
            kept = []

            def last(k, results):
                if verified:  # one call, on one set: its results go to the arena
                    kept.append(results)
                else:
                    # The last call on each set: its results are what the task's outputs
                    # take (the torch.compile reference point is never CALLed).
                    self.kernel.checked(results, views[k][1])

            self.kernel.timed_calls(
                prepared, count, [self.ranges(spec) for spec in rotation] if flush else None,
                self.host_address, last, tally)
            if verified:
                self.kernel.store(kept.pop(), views[0][1])
                self.download(rotation[0], inputs_before)
        except p.ProtocolError:
            raise
        except Exception as e:  # any failure of the problem's or the candidate's code
            return p.reply_payload(p.KERNEL_ERROR, rc=1, flushed_bytes=tally.flushed,
                                   ns=tally.ns, message=describe_error(e), copy_ns=self.copy_ns)
        return p.reply_payload(ns=tally.ns, flushed_bytes=tally.flushed, copy_ns=self.copy_ns,
                               message="" if verified else tally.side_stream_note())


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # torch.compile's caches, extension builds, the problem's and candidate's source files and
    # the user name torch.compile asks for live in the sandbox's own tmpfs.
    work = os.getcwd()
    toolchain.apply_environment(args.env)
    os.environ.setdefault("USER", "kope")
    toolchain.scratch_folders(work, "cuda" if args.device else "cpu")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    os.environ.setdefault("KOPE_BRIDGE_MODULES", os.path.join(work, "modules"))  # problem.py
    # Under cap_device_memory's cap, PyTorch's segments of fixed size leave gigabytes reserved
    # but unusable between a large problem's tensors (KernelBench's 96_HuberLoss: 12 GB
    # allocated, 4 GB reserved and free, a 2 MB allocation failed); segments that grow do not.
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    notes = apply_limits(args)
    notes.append("python bridge: bubblewrap and rlimits, no seccomp filter (torch.compile "
                 "runs a compiler)")
    channel = p.Channel(args.control_fd)
    channel.send(p.HELLO, p.hello_payload(False, True, notes))
    return Server(args, channel).run()
