"""The CUDA plugin's messages name a device by the user's device number, not by the
plugin's own count.  No GPU is needed: the plugin is given one fake device."""
import re
import types

import pytest

from pygomp.runtime.plugin import DeviceInfo, Image, KernelInfo, PluginError

cuda = pytest.importorskip("pygomp.plugins.cuda.plugin")


@pytest.fixture
def plugin():
    p = cuda.CudaPlugin()
    p._devices = [DeviceInfo(name="fake GPU", kind="gpu",
                             properties={"shared_memory_per_block": 1024})]
    p._state[0] = types.SimpleNamespace(blocks={})     # initialized, with no memory
    p.set_number(0, 3)                                 # the user's device 3
    return p


def test_free_of_an_unknown_address(plugin):
    with pytest.raises(PluginError, match=re.escape(
            "device 3 (cuda 0): free: 0xdead is no block of this device")):
        plugin.free(0, 0xdead)


def test_a_kernel_that_fails(plugin):
    class Failed:
        def synchronize(self):
            raise RuntimeError("an illegal address")
    with pytest.raises(PluginError, match=re.escape(
            "device 3 (cuda 0): kernel k failed: RuntimeError: an illegal address")):
        plugin.wait(0, cuda._Event(Failed(), 0, "k", plugin))


def test_too_much_shared_memory(plugin):
    image = Image("cuda", b"", (KernelInfo("k", team_bytes=4096),))
    with pytest.raises(PluginError, match=re.escape(
            "kernel k needs 4096 bytes of shared memory per block; device 3 (cuda 0) has "
            "1024")):
        plugin.load_image(0, image, 1, 0)
