"""argus markers for training code: steps and phases through
libargus-marker.so (uprobed by the argus agent) and NVTX when CUDA is there.
A no-op when the library is absent.

    import argus
    for n, batch in enumerate(loader):
        argus.step(n)
        with argus.phase("forward"):
            ...

The library is looked up in ARGUS_MARKER_LIB, next to this file, then at
/usr/lib/argus/libargus-marker.so.
"""
import contextlib
import ctypes
import os

_DEFAULT = "/usr/lib/argus/libargus-marker.so"


def _load():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libargus-marker.so")
    for path in (os.environ.get("ARGUS_MARKER_LIB"), here, _DEFAULT):
        if path and os.path.exists(path):
            try:
                lib = ctypes.CDLL(path)
                lib.argus_step.argtypes = [ctypes.c_uint64]
                lib.argus_phase_begin.argtypes = [ctypes.c_char_p]
                return lib
            except (OSError, AttributeError):
                continue
    return None


def _nvtx():
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.nvtx
    except Exception:
        pass
    return None


_lib = _load()
_nv = _nvtx()
_step_open = False


def step(n):
    """Step n begins (and the previous one ends)."""
    global _step_open
    if _lib is not None:
        _lib.argus_step(int(n))
    if _nv is not None:
        if _step_open:
            _nv.range_pop()
        _nv.range_push("step")
        _step_open = True


@contextlib.contextmanager
def phase(name):
    """A named phase (forward, backward, optimizer...) inside the step."""
    if _lib is not None:
        _lib.argus_phase_begin(name.encode()[:63])
    if _nv is not None:
        _nv.range_push(name)
    try:
        yield
    finally:
        if _nv is not None:
            _nv.range_pop()
        if _lib is not None:
            _lib.argus_phase_end()
