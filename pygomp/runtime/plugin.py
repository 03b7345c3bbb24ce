"""The plugin interface, version 1 (after libgomp's GOMP_OFFLOAD_* functions).

A plugin drives one kind of device.  It sees device numbers local to itself
(0..num_devices()-1), device addresses as ints and byte counts; it never sees the
interval map.  Host memory is passed as int addresses.

A subclass implements the `_..._impl` hooks.  The public methods here check their
arguments and turn any failure of a hook into one `PluginError` whose message names
the plugin, the device, the operation and the sizes.  A plugin is registered under the
entry-point group ``pygomp.plugins``; the entry point names a subclass of `Plugin`.

Calling convention of `run`: ``args`` is a list of 64-bit words, one a kernel
argument: a device address for a mapped item, or the raw bits of a firstprivate value
(an int, or a float's bit pattern zero-extended).  ``launch`` is
``(num_gangs, num_workers, vector_length)``; 0 leaves a level to the plugin.
"""
from __future__ import annotations

from dataclasses import dataclass, field

API_VERSION = 1


class PluginError(RuntimeError):
    """A device operation failed; the message names device, operation and sizes."""


@dataclass(frozen=True)
class DeviceInfo:
    """What a plugin tells about one of its devices (for selection and `info`)."""
    name: str
    kind: str = "cpu"            # "cpu", "gpu" or "accelerator"; GPUs are numbered first
    platform: str = ""
    memory: int = 0              # bytes of device memory, 0 if unknown
    properties: dict = field(default_factory=dict, hash=False, compare=False)

    def matches(self, word: str) -> bool:
        word = word.lower()
        return word in self.name.lower() or word in self.platform.lower()


@dataclass(frozen=True)
class LoadedImage:
    """Device addresses of an image's functions and variables, in table order."""
    functions: list
    variables: list


class Plugin:
    """Base class: checks, locking-free validation and error text; hooks below."""
    name = "?"            # the name used in PYGOMP_DEVICES
    target = "?"          # the image kind it loads (a key of OffloadImage.images)
    api_version = API_VERSION
    capabilities = frozenset()   # e.g. {"fp64", "int64_atomics", "generic_address_space"}

    # -- discovery ---------------------------------------------------------
    def devices(self) -> list[DeviceInfo]:
        """Every device this plugin finds on this machine (cached)."""
        if not hasattr(self, "_devices"):
            self._devices = list(self._devices_impl())
        return self._devices

    def num_devices(self) -> int:
        return len(self.devices())

    def select(self, selector: str) -> list[int]:
        """Plugin-local numbers chosen by a PYGOMP_DEVICES selector.

        The selector is ``word[:word...]``: a word that is an integer picks the
        n-th of the devices matched so far, any other word keeps the devices whose
        name or platform contains it (case-insensitive); empty keeps all.
        """
        found = list(range(self.num_devices()))
        for word in filter(None, selector.split(":")):
            if word.isdigit():
                found = found[int(word):int(word) + 1]
            else:
                found = [i for i in found if self.devices()[i].matches(word)]
        return found

    # -- checked operations --------------------------------------------------
    def init_device(self, dev: int) -> None:
        self._call("init", dev, "", self._init_impl, dev)

    def fini_device(self, dev: int) -> None:
        self._call("fini", dev, "", self._fini_impl, dev)

    def load_image(self, dev: int, image, n_functions: int, n_variables: int) -> LoadedImage:
        loaded = self._call("load_image", dev, "", self._load_image_impl, dev, image)
        if len(loaded.functions) != n_functions or len(loaded.variables) != n_variables:
            self.unload_image(dev, image)
            raise PluginError(
                f"{self.name} device {dev}: load_image: image has {len(loaded.functions)} "
                f"functions and {len(loaded.variables)} variables, the table "
                f"{n_functions} and {n_variables}")
        return loaded

    def unload_image(self, dev: int, image) -> None:
        self._call("unload_image", dev, "", self._unload_image_impl, dev, image)

    def alloc(self, dev: int, size: int) -> int:
        _check_size(size)
        addr = self._call("alloc", dev, lambda: f"{size} bytes", self._alloc_impl, dev, size)
        if not addr:
            raise PluginError(f"{self.name} device {dev}: alloc: out of memory for {size} bytes")
        return addr

    def free(self, dev: int, addr: int) -> None:
        self._call("free", dev, lambda: f"at {addr:#x}", self._free_impl, dev, addr)

    def host2dev(self, dev: int, dst: int, src: int, size: int) -> None:
        _check_size(size)
        if size:
            self._call("host2dev", dev, lambda: f"{size} bytes from host {src:#x} to device {dst:#x}",
                       self._host2dev_impl, dev, dst, src, size)

    def dev2host(self, dev: int, dst: int, src: int, size: int) -> None:
        _check_size(size)
        if size:
            self._call("dev2host", dev, lambda: f"{size} bytes from device {src:#x} to host {dst:#x}",
                       self._dev2host_impl, dev, dst, src, size)

    def dev2dev(self, dev: int, dst: int, src: int, size: int) -> None:
        _check_size(size)
        if size:
            self._call("dev2dev", dev, lambda: f"{size} bytes from device {src:#x} to device {dst:#x}",
                       self._dev2dev_impl, dev, dst, src, size)

    def run(self, dev: int, fn: int, args: list[int], launch=(0, 0, 0)) -> None:
        self._call("run", dev, lambda: f"function {fn:#x} with {len(args)} arguments, "
                                        f"launch {tuple(launch)}",
                   self._run_impl, dev, fn, args, launch)

    def target_hooks(self):
        """The compiler's dialect for this plugin's target (see pygomp.compiler)."""
        raise NotImplementedError(f"plugin {self.name} has no compiler target")

    def _call(self, op, dev, what, hook, *args):
        """Run a hook; ``what`` (a string or a function giving one) describes the call
        in the error message, and is only evaluated on failure."""
        if not 0 <= dev < len(self.devices()):
            raise PluginError(f"{self.name}: {op}: no device {dev} "
                              f"(the plugin has {self.num_devices()})")
        try:
            return hook(*args)
        except PluginError:
            raise
        except Exception as e:
            what = what() if callable(what) else what
            detail = f" {what}" if what else ""
            raise PluginError(f"{self.name} device {dev}: {op}{detail} failed: "
                              f"{type(e).__name__}: {e}") from e

    # -- hooks a plugin implements ------------------------------------------
    def _devices_impl(self): raise NotImplementedError
    def _init_impl(self, dev): pass
    def _fini_impl(self, dev): pass
    def _load_image_impl(self, dev, image) -> LoadedImage: raise NotImplementedError
    def _unload_image_impl(self, dev, image): pass
    def _alloc_impl(self, dev, size) -> int: raise NotImplementedError
    def _free_impl(self, dev, addr): raise NotImplementedError
    def _host2dev_impl(self, dev, dst, src, size): raise NotImplementedError
    def _dev2host_impl(self, dev, dst, src, size): raise NotImplementedError
    def _dev2dev_impl(self, dev, dst, src, size): raise NotImplementedError
    def _run_impl(self, dev, fn, args, launch): raise NotImplementedError


def _check_size(size):
    if not isinstance(size, int) or size < 0:
        raise PluginError(f"invalid size {size!r}: a byte count must be an int >= 0")
