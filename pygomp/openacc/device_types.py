"""OpenACC's device types and async values (openacc.h's numbers), and which pygomp
devices each type names (see the package's docstring)."""
from __future__ import annotations

from ..runtime import devices
from ..runtime.mapping import MappingError

device_none, device_default, device_host, device_host_nonshm = 0, 1, 2, 3
device_not_host, device_nvidia, device_radeon, device_opencl = 4, 5, 8, 16
async_noval, async_sync = -1, -2

TYPES = {"none": device_none, "default": device_default, "host": device_host,
         "host_nonshm": device_host_nonshm, "not_host": device_not_host,
         "nvidia": device_nvidia, "cuda": device_nvidia, "radeon": device_radeon,
         "opencl": device_opencl}
NAMES = {v: k for k, v in reversed(TYPES.items())}
PLUGIN_TYPES = {"host": device_host, "cuda": device_nvidia, "opencl": device_opencl}


def check_type(t):
    if t not in NAMES:
        raise MappingError(f"unknown device type {t}")


def type_of(dev) -> int:
    """The OpenACC device type of a pygomp device."""
    return device_host if dev.is_initial else PLUGIN_TYPES.get(dev.plugin.name,
                                                               device_not_host)


def region_type(dev) -> int:
    """What a compute region on ``dev`` is to acc_on_device: the host plugin's regions
    are host code with memory of its own (host and host_nonshm are both true)."""
    return device_host_nonshm if not dev.is_initial and dev.plugin.name == "host" \
        else type_of(dev)


def devices_of(t) -> list:
    """The devices of type ``t``, in their OpenACC numbering."""
    devs = devices.all_devices()
    if t == device_host:
        return devs[-1:]
    if t == device_not_host:
        return devs[:-1]
    if t == device_host_nonshm:
        return [d for d in devs[:-1] if d.plugin.name == "host"]
    return [d for d in devs[:-1] if type_of(d) == t and t != device_none]
