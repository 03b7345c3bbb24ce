"""OpenACC's runtime routines and data clauses, over the same device maps as the OpenMP
face (`pygomp.runtime.mapping` keeps both rule sets), for Python and for the C shim.

The modules, by job (as libgomp splits its oacc-*.c): `device_types` (the numbers),
`devices` (the current device, init, shutdown), `queues` (async), `data` (the routines
on addresses), `arrays` (the same on numpy arrays, and the data region), `profiling`
and `cuda` (interop).  Users call them here: ``from pygomp import openacc as acc``.

Devices.  OpenACC names devices by type and number.  Here the types are:

- ``device_host`` (2): the initial device, the host itself, shared memory; also the
  type the host plugin's devices answer (`acc_get_device_type`, `type_of`): their
  regions run the host's code, which GCC 12 compiles for ``acc_device_host`` (its
  openacc.h has no ``host_nonshm``);
- ``device_host_nonshm`` (3): the host plugin's devices, the CPU with memory of its own,
  as a request (``acc_set_device_type``, ``ACC_DEVICE_TYPE=host_nonshm``);
- ``device_not_host`` (4): every offload device, numbered as pygomp numbers them;
- ``device_nvidia`` (5): the CUDA plugin's devices;
- ``device_opencl`` (16, pygomp's own value): the OpenCL plugin's devices.

``ACC_DEVICE_TYPE`` (one of the names above without ``device_``, or ``cuda``) and
``ACC_DEVICE_NUM`` (a number within that type) choose the default; unset, the default
is ``not_host`` number 0 (pygomp's device 0), or the host when there is no offload
device.  Each thread has its current device, as in libgomp.

Data routines take numpy arrays (contiguous); a mapped array is kept alive while it is
mapped.  With ``async_=q`` (``q >= 0`` or ``async_noval``) the map changes at once (as
in libgomp) and the data moves on queue q of the current device, after the queue's
earlier work (`pygomp.runtime.accqueues`); `wait` waits for it and raises the first
error of the queue's work (which stops the queue's later work).  Errors are
`pygomp.MappingError`s worded as libgomp words them.
"""
from __future__ import annotations

from ..runtime.accprof import (EVENTS, ev_alloc, ev_compute_construct_end,  # noqa: F401
                              ev_compute_construct_start, ev_create, ev_delete,
                              ev_device_init_end, ev_device_init_start,
                              ev_device_shutdown_end, ev_device_shutdown_start,
                              ev_enqueue_download_end, ev_enqueue_download_start,
                              ev_enqueue_launch_end, ev_enqueue_launch_start,
                              ev_enqueue_upload_end, ev_enqueue_upload_start,
                              ev_enter_data_end, ev_enter_data_start, ev_exit_data_end,
                              ev_exit_data_start, ev_free, ev_none, ev_runtime_shutdown,
                              ev_update_end, ev_update_start, ev_wait_end, ev_wait_start)
from .arrays import (copyin, copyout, create, data, delete, deviceptr,  # noqa: F401
                     is_present, update_device, update_self)
from .cuda import cuda_context, cuda_device, cuda_stream, set_cuda_stream  # noqa: F401
from .data import (allocations, attach, detach, device_address, enter,  # noqa: F401
                   free, host_address, leave, malloc, map_data, memcpy, present,
                   unmap_data, update)
from .device_types import (TYPES, async_noval, async_sync, device_default,  # noqa: F401
                           device_host, device_host_nonshm, device_none, device_not_host,
                           device_nvidia, device_opencl, device_radeon, devices_of,
                           region_type, type_of)
from .devices import (current, get_device_num, get_device_type,  # noqa: F401
                      get_num_devices, get_property, init, on_device, property_driver,
                      property_free_memory, property_memory, property_name,
                      property_vendor, set_device_num, set_device_type, shutdown)
from .profiling import prof_record, prof_register, prof_unregister, profiled  # noqa: F401
from .queues import (async_test, async_test_all, run, wait, wait_async,  # noqa: F401
                     wait_list)
