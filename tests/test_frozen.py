"""The immutable records the kernel types and a plugin's units are made of
(pygomp.frozen): what the dataclasses they replace gave."""
import pickle

import numpy as np
import pytest

from pygomp.compiler import types as T
from pygomp.compiler.annotate import ArrayAnn
from pygomp.runtime.plugin import DeviceArray, KernelInfo, LoadedImage, Source


def test_types_compare_hash_pickle_and_show_by_their_fields():
    a = T.Array(T.FLOAT32, 2)
    assert a == T.Array(T.scalar("float32"), 2, "global", ()) == T.Array(T.FLOAT32, ndim=2)
    assert a != T.Array(T.FLOAT32, 2, space="local") and a != T.FLOAT32
    assert len({a, T.Array(T.FLOAT32, 2), T.Array(T.FLOAT64, 2)}) == 2
    assert pickle.loads(pickle.dumps(a)) == a and pickle.loads(pickle.dumps(T.VOID)) == T.VOID
    assert repr(T.INT64) == "Scalar(name='int64', c='int64_t')"
    assert str(a) == "array(float32, 2d)" and str(T.VOID) == "void"
    assert ArrayAnn(None, 1, "x").accepts(a) is False and ArrayAnn(None, 2, "x").accepts(a)


def test_records_are_immutable_and_take_their_arguments_as_a_dataclass_does():
    s = Source("void k(void) {}", (KernelInfo("k"),))
    with pytest.raises(AttributeError, match="cannot assign to field 'source'"):
        s.source = ""
    with pytest.raises(AttributeError):
        del s.kernels
    assert s == Source("void k(void) {}", kernels=(KernelInfo("k"),)) and s.variables == ()
    assert LoadedImage([1], []) == LoadedImage(functions=[1], variables=[])
    for bad in (lambda: Source(), lambda: Source("", (), (), ()),
                lambda: Source("", source=""), lambda: Source("", names=())):
        with pytest.raises(TypeError, match="Source()"):
            bad()


def test_a_device_array_is_equal_only_to_itself():
    x = np.zeros(3)
    a, b = DeviceArray(16, x.dtype, (3,), x), DeviceArray(16, x.dtype, (3,), x)
    assert a == a and a != b and len({a, b}) == 2 and a.ndim == 1 and a.owner is x


def test_kernel_info_fills_its_entries_and_levels_and_round_trips():
    k = KernelInfo("k", args=("p", "i64"), private=((8, (1,)),))
    assert k.entries == ("k",) and k.levels == ("gwv",) and k.private_part([0, 3]) == 24
    assert pickle.loads(pickle.dumps(k)) == k and hash(k) == hash(KernelInfo(**k.as_dict()))
    assert k.as_dict()["args"] == ("p", "i64")
    with pytest.raises(ValueError, match="kernel k: 2 entries but 1 levels"):
        KernelInfo("k", ("a", "b"), levels=("g",))
