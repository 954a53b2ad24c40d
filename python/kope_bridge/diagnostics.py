"""What the bridge tells about itself: a failure as the candidate's or problem's error line
(describe_error), and, for a developer, a profile of its requests (RequestProfile)."""
import os
import sys
import traceback

from . import toolchain


class RequestProfile:
    """KOPE_BRIDGE_PROFILE=DIR: this process profiles its request handlers (cProfile) and
    writes the counts so far to DIR/bridge-PID-N.pstats after every EVERY-th request, N the
    number of requests (a runner is killed, not asked to finish). Two snapshots' difference is
    what the requests between them cost. For finding where a bridge process's time goes, with
    a runner that can write DIR (a sandbox without bubblewrap); unset, nothing is profiled."""
    EVERY = 100

    def __init__(self, folder):
        import cProfile
        self.folder, self.profile, self.requests = folder, cProfile.Profile(), 0

    @classmethod
    def from_environment(cls):
        folder = os.environ.get("KOPE_BRIDGE_PROFILE")
        return cls(folder) if folder else None

    def enable(self):
        self.profile.enable()

    def disable(self):
        self.profile.disable()
        self.requests += 1
        if self.requests % self.EVERY == 0:
            try:
                self.profile.dump_stats(os.path.join(
                    self.folder, f"bridge-{os.getpid()}-{self.requests}.pstats"))
            except OSError:
                pass


def describe_error(e):
    """The error and where it happened: the candidate's or problem's line where one is on the
    stack, else the innermost frame outside the bridge."""
    build = toolchain.describe_build_error(e)
    if build is not None:
        return build
    tb = traceback.extract_tb(e.__traceback__)
    ours = [f for f in tb if os.path.basename(f.filename) in ("candidate.py", "problem.py")]
    others = [f for f in tb if "kope_bridge" not in f.filename]
    frame = (ours or others or [None])[-1]
    where = f" ({os.path.basename(frame.filename)}:{frame.lineno})" if frame else ""
    return f"{type(e).__name__}: {e}{where}{device_memory_note(e)}"


def device_memory_note(e):
    """For a GPU out-of-memory error, what the whole device had free: whether this process hit
    its cap or the GPU was full (other processes)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(e, getattr(torch, "OutOfMemoryError", ())):
        return ""
    try:
        free, total = torch.cuda.mem_get_info()
        mine = torch.cuda.memory_reserved()
    except Exception:  # noqa: BLE001 (no device to ask)
        return ""
    gib = 1 << 30
    return (f" [device: {free / gib:.1f} GiB free of {total / gib:.1f}; this process holds "
            f"{mine / gib:.1f} GiB]")
