"""GPU memory shared between two processes by a file descriptor (CUDA's virtual memory
management API, through ctypes on libcuda).

The checking process (the task's reference runner) allocates a candidate's tensors with
`export`, which returns the allocation and a POSIX file descriptor; the parent passes the
descriptor to the candidate's runner over the control socket (SCM_RIGHTS), which maps the same
memory with `import_fd`. Descriptors cross bubblewrap's PID namespaces, where CUDA's legacy IPC
handles do not. Both sides see the memory as a torch uint8 tensor (`tensor`).

Every call must run on a thread where torch has made the device's primary context current.
"""
import ctypes
import os

_HANDLE_POSIX_FD = 0x1
_ALLOCATION_PINNED = 0x1
_LOCATION_DEVICE = 0x1
_ACCESS_READWRITE = 0x3
_GRANULARITY_RECOMMENDED = 0x1


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class SharedDeviceError(RuntimeError):
    pass


_cuda = None


def _driver():
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
    return _cuda


def _check(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        _driver().cuGetErrorName(result, ctypes.byref(name))
        raise SharedDeviceError(f"{what} failed: {(name.value or b'?').decode()} ({result})")


def _prop(device):
    prop = _AllocationProp()
    prop.type = _ALLOCATION_PINNED
    prop.requestedHandleTypes = _HANDLE_POSIX_FD
    prop.location = _Location(_LOCATION_DEVICE, device)
    return prop


def _granularity(prop):
    g = ctypes.c_size_t()
    _check(_driver().cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(prop),
                                                   _GRANULARITY_RECOMMENDED),
           "cuMemGetAllocationGranularity")
    return g.value


class Allocation:
    """`nbytes` of device memory mapped at `address` in this process; `fd` is its exportable
    descriptor (-1 once given away or for an imported allocation)."""

    def __init__(self, handle, address, size, nbytes, fd):
        self.handle, self.address, self.size, self.nbytes, self.fd = handle, address, size, nbytes, fd

    def close(self):
        cuda = _driver()
        if self.address:
            cuda.cuMemUnmap(ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
            cuda.cuMemAddressFree(ctypes.c_uint64(self.address), ctypes.c_size_t(self.size))
            self.address = 0
        if self.handle is not None:
            cuda.cuMemRelease(self.handle)
            self.handle = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _map(handle, size, device):
    cuda = _driver()
    address = ctypes.c_uint64()
    _check(cuda.cuMemAddressReserve(ctypes.byref(address), ctypes.c_size_t(size),
                                    ctypes.c_size_t(0), ctypes.c_uint64(0), ctypes.c_uint64(0)),
           "cuMemAddressReserve")
    try:
        _check(cuda.cuMemMap(address, ctypes.c_size_t(size), ctypes.c_size_t(0), handle,
                             ctypes.c_uint64(0)), "cuMemMap")
        access = _AccessDesc(_Location(_LOCATION_DEVICE, device), _ACCESS_READWRITE)
        _check(cuda.cuMemSetAccess(address, ctypes.c_size_t(size), ctypes.byref(access),
                                   ctypes.c_size_t(1)), "cuMemSetAccess")
    except SharedDeviceError:
        cuda.cuMemUnmap(address, ctypes.c_size_t(size))
        cuda.cuMemAddressFree(address, ctypes.c_size_t(size))
        raise
    return address.value


def export(nbytes, device=0):
    """A fresh allocation of at least `nbytes` with its descriptor."""
    cuda = _driver()
    prop = _prop(device)
    g = _granularity(prop)
    size = (nbytes + g - 1) // g * g
    handle = ctypes.c_uint64()
    _check(cuda.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop),
                            ctypes.c_uint64(0)), "cuMemCreate")
    try:
        address = _map(handle, size, device)
    except SharedDeviceError:
        cuda.cuMemRelease(handle)
        raise
    fd = ctypes.c_int(-1)
    result = cuda.cuMemExportToShareableHandle(ctypes.byref(fd), handle, _HANDLE_POSIX_FD,
                                               ctypes.c_uint64(0))
    allocation = Allocation(handle, address, size, nbytes, fd.value)
    if result != 0:
        allocation.close()
        _check(result, "cuMemExportToShareableHandle")
    return allocation


def import_fd(fd, nbytes, device=0):
    """Maps the allocation behind `fd` (which stays the caller's to close)."""
    cuda = _driver()
    prop = _prop(device)
    g = _granularity(prop)
    size = (nbytes + g - 1) // g * g
    handle = ctypes.c_uint64()
    _check(cuda.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                               _HANDLE_POSIX_FD), "cuMemImportFromShareableHandle")
    try:
        address = _map(handle, size, device)
    except SharedDeviceError:
        cuda.cuMemRelease(handle)
        raise
    return Allocation(handle, address, size, nbytes, -1)


class _ArrayInterface:
    def __init__(self, address, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (address, False), "version": 3,
                                         "strides": None, "stream": None}


def tensor(torch, allocation, device):
    """A uint8 tensor over the allocation's first nbytes (no copy; the allocation must outlive
    it)."""
    return torch.as_tensor(_ArrayInterface(allocation.address, allocation.nbytes), device=device)
