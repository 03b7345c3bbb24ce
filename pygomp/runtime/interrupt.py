"""Ctrl-C that leaves the runtime consistent.

Python raises KeyboardInterrupt in the main thread wherever it is; inside the runtime,
between the steps of a map's update, that would leave an entry half removed or memory
never freed.  So SIGINT's handler (put in by `install` where the program kept Python's
default) raises it at once in the caller's code or in a wait (threading's); inside the
runtime, when the runtime's outermost frame returns (a trace function on that frame
alone), so that the runtime's own steps, and its cleanup on errors, run whole.

A plugin whose kernel Ctrl-C stopped raises `stopped()` from the launch, so that the
construct copies nothing back; that KeyboardInterrupt stands for the SIGINT, which
is not raised a second time.
"""
from __future__ import annotations

import _signal         # signal without its enums
import _thread
import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ROOTS = (_PACKAGE + os.sep, os.path.join(os.path.dirname(_PACKAGE), "plugins") + os.sep,
          "<pygomp")                # code the runtime makes (repeats.py)
_state = {"pending": False}


def _outermost(frame):
    """The outermost frame of the runtime's (pygomp's, a built-in plugin's) that the
    interrupted code runs in, through libraries it called (the standard one, pyopencl);
    None where the caller's code or a wait in threading was interrupted."""
    import sysconfig
    paths = sysconfig.get_paths()
    libraries = tuple({paths["stdlib"], paths["purelib"], paths["platlib"], "<frozen"})
    if frame is None or frame.f_code.co_filename == os.path.join(paths["stdlib"],
                                                                  "threading.py"):
        return None
    outer = None
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_ROOTS):
            outer = frame
        elif not name.startswith(libraries):
            break                       # the caller's code
        frame = frame.f_back
    return outer


def _on_sigint(signum, frame):
    outer = _outermost(frame)
    if outer is None:
        _state["pending"] = False
        raise KeyboardInterrupt
    if _state["pending"]:
        return                          # raised when that frame returns already
    _state["pending"] = True
    tracer = sys.gettrace()             # a debugger's or coverage's: kept

    def at_return(f, event, arg):
        if event == "return" and f is outer:
            sys.settrace(tracer)
            if _state["pending"]:
                _state["pending"] = False
                raise KeyboardInterrupt
        return at_return
    outer.f_trace_lines = False
    outer.f_trace = at_return
    if tracer is None:
        sys.settrace(_untraced)         # frame tracing on, in this thread alone


def _untraced(frame, event, arg):
    return None


def install() -> None:
    """Put `_on_sigint` in, where SIGINT has Python's own handler and this is the main
    thread (the only one that may set a handler).  An embedded Python (a C program
    under libpygomp.so) names that handler too, but never put it in: SIGINT keeps what
    the program gave it (as a rule, to end it)."""
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler and _handled():
        try:
            _signal.signal(_signal.SIGINT, _on_sigint)
        except ValueError:          # another thread
            return
        _state["main"] = _thread.get_ident()


def _handled() -> bool:
    """Whether SIGINT has a handler in C (neither SIG_DFL nor SIG_IGN)."""
    import ctypes
    old = ctypes.create_string_buffer(256)          # a struct sigaction, and more
    if ctypes.CDLL(None).sigaction(_signal.SIGINT, None, old) != 0:
        return False
    return int.from_bytes(old.raw[:ctypes.sizeof(ctypes.c_void_p)], sys.byteorder) > 1


def ours() -> bool:
    """Whether SIGINT's handler is this module's: then a stopped kernel raises."""
    return _signal.getsignal(_signal.SIGINT) is _on_sigint


def stopped() -> KeyboardInterrupt:
    """The error a launch that Ctrl-C stopped raises (in whichever thread); in the
    main thread it stands for the SIGINT, which is then not raised a second time."""
    if _thread.get_ident() == _state.get("main"):
        _state["pending"] = False
    return KeyboardInterrupt("a kernel was stopped by Ctrl-C (SIGINT)")
