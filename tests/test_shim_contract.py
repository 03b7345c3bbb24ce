"""The numbers and layouts that csrc/shim.c and the Python half of libpygomp.so share:
written once, in csrc/contract.py (or in the runtime module it takes them from), and
given to C by build.py; where a face keeps its own copy of a number (pygomp/build.py,
pygomp/openacc/), it agrees."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pygomp import build
from pygomp import openacc as acc
from pygomp.csrc import abi, tables
from pygomp.csrc import build as shim_build
from pygomp.csrc import contract
from pygomp.runtime import accprof

SHIM = (Path(__file__).parent.parent / "csrc" / "shim.c").read_text()


def _c_names():
    """{C name: value} of everything contract.py gives to C."""
    out = {f"{prefix}{name}": value for prefix, numbers in contract.ENUMS.items()
           for name, value in vars(numbers).items()}
    out.update({name: getattr(contract, name) for name in contract.DEFINES})
    return out


def test_gcc_reads_the_numbers_of_the_table(tmp_path):
    """The C text that build.py puts ahead of shim.c, compiled and run, prints the
    table's numbers; and a change of the table rebuilds the library."""
    names = _c_names()
    main = "".join(f'    printf("{n} %lld\\n", (long long)({n}));\n' for n in names)
    src = tmp_path / "numbers.c"
    src.write_text("#include <stdio.h>\n" + contract.c_text()
                   + "int main(void)\n{\n" + main + "    return 0;\n}\n")
    subprocess.run(["gcc", "-Wall", "-Werror", str(src), "-o", str(tmp_path / "numbers")],
                   check=True)
    out = subprocess.run([str(tmp_path / "numbers")], capture_output=True, text=True,
                         check=True).stdout
    assert dict((n, int(v)) for n, v in (line.split() for line in out.splitlines())) == names
    assert Path(contract.__file__).resolve() in shim_build.sources()


def test_shim_uses_every_number_and_defines_none():
    for name in _c_names():
        assert re.search(rf"\b{name}\b", SHIM), f"shim.c does not use {name}"
        assert not re.search(rf"#define {name}\b|\b{name} =", SHIM), \
            f"shim.c defines {name} itself"


def test_python_copies_agree():
    assert build.TARGET_TYPE == contract.TARGET_TYPE
    assert acc.async_sync == contract.ASYNC_SYNC
    prof = (Path(__file__).parent.parent / "csrc" / "prof.c").read_text()
    assert int(re.search(r"EV_LAST = (\d+)", prof).group(1)) == len(accprof.EVENTS)
    assert (acc.device_none, acc.device_host, acc.device_host_nonshm,
            acc.device_not_host) == (contract.ACC_DEVICE_NONE, contract.ACC_DEVICE_HOST,
                                     contract.ACC_DEVICE_HOST_NONSHM,
                                     contract.ACC_DEVICE_NOT_HOST)


def test_pygomp_tables():
    """build.py's table struct, as tables.py reads it: one 8-byte word per field after
    the 8-byte magic."""
    assert tables.MAGIC == build.MAGIC.encode() + b"\0" and len(tables.MAGIC) == 8
    struct = re.search(r"struct pygomp_table \{(.*?)\};", build.PRELUDE, re.S).group(1)
    fields = re.findall(r"(\w+)(?:\[\d+\])?;", struct)
    assert fields == ["magic", "meta", "n_codes", "codes", "sizes"]
    assert [tables.META, tables.N_CODES, tables.CODES, tables.SIZES] == [1, 2, 3, 4]


def test_the_python_half_defines_every_extern_python_function():
    """Each ``extern "Python"`` function that build.py declares is defined once, in one
    of the modules `abi.attach` gives cffi, and nothing else there is named pg_py_*."""
    declared = re.findall(r'extern "Python" [\w ]+?\*?\s*(pg_py_\w+)\(', shim_build.PYTHON_HALF)
    assert len(declared) == len(set(declared)) > 20
    assert sorted(abi.externs()) == sorted(declared)
