"""_fglib.py: libfagen's generic calls for the benchmarks (compile a
schedule with -D defines, create its kernel, launch it with named
arguments on PyTorch's stream), through ctypes and fagen's loader."""
import ctypes

import torch

import fagen
from fagen import _Arg, _Tensor


class _Opts(ctypes.Structure):      # fg_compile_options
    _fields_ = [("defines", ctypes.POINTER(ctypes.c_char_p)),
                ("ndefines", ctypes.c_int), ("arch", ctypes.c_char_p),
                ("werror", ctypes.c_int), ("no_verify", ctypes.c_int),
                ("debug_hangs", ctypes.c_int), ("mods", ctypes.c_char_p),
                ("mods_name", ctypes.c_char_p)]


_LIB = None


def lib_ctx():
    """libfagen and the current device's fg_ctx, the calls typed."""
    global _LIB
    lib = fagen._load()
    if _LIB is None:
        vp, cp = ctypes.c_void_p, ctypes.c_char_p
        lib.fg_compile_string.argtypes = [vp, cp, cp, ctypes.c_size_t, vp,
                                          vp]
        lib.fg_kernel_create.argtypes = [vp, cp, ctypes.c_size_t, vp]
        lib.fg_launch.argtypes = [vp, vp, vp, ctypes.c_int]
        lib.fg_program_free.argtypes = [vp]
        lib.fg_program_ptx.argtypes = [vp, vp]
        lib.fg_program_ptx.restype = cp
        lib.fg_program_diagnostics.argtypes = [vp]
        lib.fg_program_diagnostics.restype = cp
        _LIB = lib
    dev = torch.device("cuda", torch.cuda.current_device())
    return lib, fagen._device.ctx(torch, lib, dev)


def compile_kernel(path, defines, ptx_filter=None):
    """(kernel, "") or (None, the first diagnostic line); ptx_filter, if
    given, rewrites the PTX text first (experiments)."""
    lib, ctx = lib_ctx()
    text = open(path, "rb").read()
    arr = (ctypes.c_char_p * len(defines))(*[d.encode() for d in defines])
    o = _Opts(defines=arr, ndefines=len(defines), no_verify=1)
    prog = ctypes.c_void_p()
    st = lib.fg_compile_string(ctx, path.encode(), text, len(text),
                               ctypes.byref(o), ctypes.byref(prog))
    if st:
        msg = lib.fg_program_diagnostics(prog) if prog else b""
        return None, ((msg or b"").decode().splitlines() or ["?"])[0]
    k = ctypes.c_void_p()
    ptx = lib.fg_program_ptx(prog, None)
    if ptx_filter:
        ptx = ptx_filter(ptx.decode()).encode()
    st = lib.fg_kernel_create(ctx, ptx, 0, ctypes.byref(k))
    lib.fg_program_free(prog)
    return (k, "") if not st else (None, "fg_kernel_create: %d" % st)


def arg(name, v):
    """A named fg_arg: int, float or a tensor's address."""
    if isinstance(v, torch.Tensor):
        return _Arg(name=name.encode(), kind=3, t=_Tensor(ptr=v.data_ptr()))
    if isinstance(v, float):
        return _Arg(name=name.encode(), kind=2, f=v)
    return _Arg(name=name.encode(), kind=1, i=v)


def launcher(k, args):
    """A function that launches k with args (name -> value) on the current
    stream, which must not be the legacy default stream; it keeps the
    tensors of args alive."""
    lib, ctx = lib_ctx()
    arr = (_Arg * len(args))(*[arg(n, v) for n, v in args.items()])

    def go():
        st = lib.fg_launch(k, ctypes.c_void_p(
            torch.cuda.current_stream().cuda_stream), arr, len(arr))
        if st:
            raise RuntimeError("fg_launch %d: %s" % (st, lib.fg_errmsg(
                ctx).decode()))
    go.args = args      # the tensors live as long as the launcher
    return go
