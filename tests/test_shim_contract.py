"""The numbers and layouts that csrc/shim.c, pygomp/abi.py and pygomp/build.py each
write down by hand agree (the acc_* routine numbers are checked in test_shim_acc.py)."""
from __future__ import annotations

import re
from pathlib import Path

from pygomp import abi, build

SHIM = (Path(__file__).parent.parent / "csrc" / "shim.c").read_text()


def _enum(first: str) -> dict:
    """The enum of shim.c whose first name is ``first``: name -> value."""
    body = re.search(r"enum \{\s*(" + first + r" = .*?)\};", SHIM, re.S).group(1)
    return {name: int(value) for name, value in re.findall(r"(\w+) = (\d+)", body)}


def test_construct_numbers():
    assert _enum("OP_TARGET") == {n: getattr(abi, n) for n in
                                  ("OP_TARGET", "OP_DATA", "OP_UPDATE", "OP_ENTER", "OP_EXIT")}


def test_openacc_data_numbers():
    names = ("ACC_DATA", "ACC_ENTER", "ACC_EXIT", "ACC_ENTER_EXIT", "ACC_UPDATE",
             "ACC_DECLARE", "ACC_WAIT")
    assert _enum("ACC_DATA") == {n: getattr(abi, n) for n in names}


def test_pygomp_tables():
    """build.py's target type and table struct, as shim.c and abi.py read them: one
    8-byte word a field after the 8-byte magic."""
    shim_type = re.search(r"#define TARGET_TYPE (0x[0-9a-f]+)", SHIM).group(1)
    assert int(shim_type, 16) == build.TARGET_TYPE
    assert abi.MAGIC == build.MAGIC.encode() + b"\0" and len(abi.MAGIC) == 8
    struct = re.search(r"struct pygomp_table \{(.*?)\};", build.PRELUDE, re.S).group(1)
    fields = re.findall(r"(\w+)(?:\[\d+\])?;", struct)
    assert fields == ["magic", "meta", "n_codes", "codes", "sizes"]
    assert [abi.META, abi.N_CODES, abi.CODES, abi.SIZES] == [1, 2, 3, 4]
