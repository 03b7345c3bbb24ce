"""CUDA interop: the C face's acc_get_current_cuda_device, _context, acc_get_cuda_stream
and acc_set_cuda_stream, on this thread's device."""
from __future__ import annotations

from ..runtime import accqueues
from .device_types import async_noval, async_sync
from .devices import current, mine


def _cuda():
    """The CUDA handles of this thread's device (None: it has no device yet, as libgomp
    answers before the first construct or acc_init, or its device is not CUDA's)."""
    dev = mine()
    handles = None if dev is None else getattr(dev.plugin, "cuda_handles", None)
    return (dev, handles(dev.local)) if handles else (dev, None)


def cuda_device() -> int:
    """acc_get_current_cuda_device: the address of the device's CUdevice, else 0."""
    h = _cuda()[1]
    return h.device if h else 0


def cuda_context() -> int:
    """acc_get_current_cuda_context: the device's CUcontext, else 0."""
    h = _cuda()[1]
    return h.context if h else 0


def cuda_stream(q) -> int:
    """acc_get_cuda_stream: the CUstream of queue ``q`` (all of a device's queues put
    their work on its one stream) once the queue exists, else 0 (an invalid ``q``,
    acc_async_sync too)."""
    dev, h = _cuda()
    if not h or q < async_noval or accqueues.find(dev, q) is None:
        return 0
    return h.stream


def set_cuda_stream(q, stream) -> int:
    """acc_set_cuda_stream: 0 for an invalid ``q``, a NULL stream or acc_async_sync; -1
    where the device is not CUDA's (libgomp's answers).  On a CUDA device 0 as well:
    its queues share the device's one stream, which a queue cannot replace."""
    if q < async_sync or not stream:
        return 0
    current()                                   # libgomp initializes here
    return -1 if _cuda()[1] is None else 0
