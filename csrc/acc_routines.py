"""The acc_* routines: shim.c's one-line C functions call
``pg_py_acc(routine, three words, async, &result)``, where ``routine`` is the routine's
number (`contract.Routine`, ``R_*`` in C); each number has its `pygomp.openacc` routine
here, the words read as C's arguments (`_s`: a signed int), the value as C's result.
"""
from __future__ import annotations

import ctypes

from .. import openacc as acc
from ..runtime import kinds
from ..runtime.entries import WORD
from .contract import Routine as R


def _s(w) -> int:
    """A 64-bit word as a signed C int."""
    return w - (1 << 64) if w >> 63 else w


_ACC = {    # routine -> fn(word, word, word, async queue)
    R.GET_NUM_DEVICES: lambda a, b, c, q: acc.get_num_devices(_s(a)),
    R.SET_DEVICE_TYPE: lambda a, b, c, q: acc.set_device_type(_s(a)),
    R.GET_DEVICE_TYPE: lambda a, b, c, q: acc.get_device_type(),
    R.SET_DEVICE_NUM: lambda a, b, c, q: acc.set_device_num(_s(a), _s(b)),
    R.GET_DEVICE_NUM: lambda a, b, c, q: acc.get_device_num(_s(a)),
    R.INIT: lambda a, b, c, q: acc.init(_s(a)),
    R.SHUTDOWN: lambda a, b, c, q: acc.shutdown(_s(a)),
    R.MALLOC: lambda a, b, c, q: acc.malloc(a),
    R.FREE: lambda a, b, c, q: acc.free(a),
    R.COPYIN: lambda a, b, c, q: acc.enter(a, b, kinds.TO, None, q, 1),   # kinds of
    R.CREATE: lambda a, b, c, q: acc.enter(a, b, kinds.ALLOC, None, q, 1),  # alignment 1
    R.COPYOUT: lambda a, b, c, q: acc.leave(a, b, kinds.FROM, q),
    R.COPYOUT_FINALIZE: lambda a, b, c, q: acc.leave(a, b, kinds.FORCE_FROM, q),
    R.DELETE: lambda a, b, c, q: acc.leave(a, b, kinds.RELEASE, q),
    R.DELETE_FINALIZE: lambda a, b, c, q: acc.leave(a, b, kinds.DELETE, q),
    R.UPDATE_DEVICE: lambda a, b, c, q: acc.update(a, b, True, q),
    R.UPDATE_SELF: lambda a, b, c, q: acc.update(a, b, False, q),
    R.IS_PRESENT: lambda a, b, c, q: acc.present(a, b),
    R.DEVICEPTR: lambda a, b, c, q: acc.device_address(a),
    R.HOSTPTR: lambda a, b, c, q: acc.host_address(a),
    R.MAP_DATA: lambda a, b, c, q: acc.map_data(a, b, c),
    R.UNMAP_DATA: lambda a, b, c, q: acc.unmap_data(a),
    R.MEMCPY_TO_DEVICE: lambda a, b, c, q: acc.memcpy(a, b, c, True, q),
    R.MEMCPY_FROM_DEVICE: lambda a, b, c, q: acc.memcpy(a, b, c, False, q),
    R.ATTACH: lambda a, b, c, q: acc.attach(a, q),
    R.DETACH: lambda a, b, c, q: acc.detach(a, False, q),
    R.DETACH_FINALIZE: lambda a, b, c, q: acc.detach(a, True, q),
    R.ASYNC_TEST: lambda a, b, c, q: acc.async_test(_s(a)),
    R.ASYNC_TEST_ALL: lambda a, b, c, q: acc.async_test_all(),
    R.WAIT: lambda a, b, c, q: acc.wait(_s(a)),
    R.WAIT_ALL: lambda a, b, c, q: acc.wait(),
    R.WAIT_ASYNC: lambda a, b, c, q: acc.wait_async(_s(a), _s(b)),
    R.WAIT_ALL_ASYNC: lambda a, b, c, q: acc.wait_async(None, _s(a)),
    R.GET_PROPERTY: lambda a, b, c, q: _number(acc.get_property(_s(a), _s(b), c)),
    R.GET_PROPERTY_STRING: lambda a, b, c, q: _string(acc.get_property(_s(a), _s(b), c)),
    R.CUDA_DEVICE: lambda a, b, c, q: acc.cuda_device(),
    R.CUDA_CONTEXT: lambda a, b, c, q: acc.cuda_context(),
    R.CUDA_STREAM: lambda a, b, c, q: acc.cuda_stream(_s(a)),
    R.SET_CUDA_STREAM: lambda a, b, c, q: acc.set_cuda_stream(_s(a), b),
}


def _number(value) -> int:
    return value if isinstance(value, int) else 0


_strings = {}       # text -> its C string, kept while the process runs (C keeps the pointer)


def _string(value) -> int:
    """A C string of ``value`` that stays valid (NULL for no string)."""
    if not isinstance(value, str):
        return 0
    if value not in _strings:
        _strings[value] = ctypes.create_string_buffer(value.encode())
    return ctypes.addressof(_strings[value])


_ACC_BY_NUMBER = tuple(_ACC[r] for r in vars(R).values())    # every routine has one


def pg_py_acc(routine, words, async_, result):
    """An acc_* routine: its value (None: 0) goes to ``*result``."""
    value = _ACC_BY_NUMBER[routine](words[0], words[1], words[2], async_)
    result[0] = int(value or 0) & WORD
    return 1
