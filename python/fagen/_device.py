"""Where fagen's calls run: the tensors' device, the fg_ctx and the
stream (issue #18).

On the GPU (the default) tensors are CUDA tensors, each CUDA device has
an fg_ctx of its own, and a call runs on torch's current stream.  In
simulator mode (use_simulator's choice, else $FAGEN_SIM: "1" or "sm_90a",
"sm_100a") libfagen runs every kernel on its CPU simulator
(docs/TARGETS.md, section 8): tensors are CPU tensors, whose data_ptr()
libfagen takes as device pointers, each simulated target has an fg_ctx,
and every call gets CU_STREAM_PER_THREAD (the simulator's streams are
synchronous and it refuses the legacy stream 0), so nothing touches
torch.cuda.  The modules take their device checks, contexts and streams
from here, so the two modes differ in this file only.
"""

import ctypes
import os
import threading

__all__ = ["use_simulator", "simulator"]

CU_STREAM_PER_THREAD = 0x2
_TARGETS = {"1": "sm_90a", "sm_90a": "sm_90a", "sm_100a": "sm_100a",
            "sm_120a": "sm_120a", "0": "", "": ""}
_choice = None      # use_simulator's: a target, "" (the GPU) or None
_lock = threading.Lock()
_ctxs = {}          # CUDA device index, or simulated target -> fg_ctx *
_per_thread = {}    # device index -> torch's handle on the per-thread stream
_last = {}          # device index -> the thread of the last launch there
_ASK = object()     # check, ctx, stream: sim not given, ask simulator()
_raw_stream = None  # torch's current stream of a device index, as an int


class _Options(ctypes.Structure):   # fg_options
    _fields_ = [
        ("alloc", ctypes.c_void_p), ("alloc_ud", ctypes.c_void_p),
        ("cache_dir", ctypes.c_char_p), ("log_level", ctypes.c_int),
        ("log", ctypes.c_void_p), ("log_ud", ctypes.c_void_p),
        ("device", ctypes.c_int), ("jit", ctypes.c_uint),
        ("driver_lib", ctypes.c_char_p), ("schedule_dir", ctypes.c_char_p),
        ("sim", ctypes.c_char_p),
        ("target", ctypes.c_char_p),   # NULL: $FAGEN_TARGET, else the
    ]                                  # device's own


def use_simulator(target="sm_90a"):
    """Run fagen's calls from now on on libfagen's CPU simulator of
    target ("sm_90a", or "sm_100a" for Blackwell; True or "1": "sm_90a"),
    on CPU tensors; False, "" or "0": on the GPU whatever $FAGEN_SIM
    says; None: as $FAGEN_SIM says (the default).  For the whole
    process; the kernels already compiled for the other mode are kept."""
    global _choice
    if target is None:
        _choice = None
        return
    if target is True or target is False:
        target = "sm_90a" if target else ""
    if not isinstance(target, str) or target not in _TARGETS:
        raise ValueError("use_simulator(%r): the target is 'sm_90a', "
                         "'sm_100a' or 'sm_120a' (True: 'sm_90a'), False for "
                         "the GPU, "
                         "or None for $FAGEN_SIM" % (target,))
    _choice = _TARGETS[target]


def simulator():
    """The simulated target fagen's calls run on ("sm_90a" or "sm_100a"),
    or None for the GPU: use_simulator's choice, else $FAGEN_SIM's."""
    if _choice is not None:
        return _choice or None
    env = os.environ.get("FAGEN_SIM", "")
    if env not in _TARGETS:
        raise ValueError("FAGEN_SIM=%s: expected 1, sm_90a, sm_100a or "
                         "sm_120a "
                         "(0 or nothing: the GPU)" % env)
    return _TARGETS[env] or None


def default():
    """The device of fagen's tensors where a caller names none: "cuda",
    or "cpu" on the simulator."""
    return "cuda" if simulator() is None else "cpu"


def check(name, t, sim=_ASK):
    """t (a torch.Tensor, named name in the message) is where fagen's
    calls take their tensors: on a CUDA device, or on the CPU in
    simulator mode; ValueError if not.  sim: simulator()'s answer where
    the caller has it (one call's decision for all its tensors)."""
    if sim is _ASK:
        sim = simulator()
    if sim is None:
        if not t.is_cuda:
            raise ValueError("%s is on %s: fagen needs CUDA tensors"
                             % (name, t.device))
    elif t.device.type != "cpu":
        raise ValueError("%s is on %s: fagen runs on the simulator (%s: "
                         "FAGEN_SIM or fagen.use_simulator), which takes "
                         "CPU tensors" % (name, t.device, sim))


def _index(torch, device):
    """device's CUDA index: device an int (a tensor's get_device()) or a
    torch.device, without an index the current device."""
    if isinstance(device, int):
        return device
    return device.index if device.index is not None else \
        torch.cuda.current_device()


def ctx(torch, lib, device, sim=_ASK):
    """The fg_ctx of calls on tensors on device (a torch.device, or a
    CUDA device's index): one per CUDA device, or one per simulated
    target.  sim: as check's."""
    if sim is _ASK:
        sim = simulator()
    key = _index(torch, device) if sim is None else sim
    c = _ctxs.get(key)      # made once, never removed: no lock needed
    if c is not None:
        return c
    with _lock:
        if key not in _ctxs:
            # sim "" keeps the GPU whatever $FAGEN_SIM says, as decided
            o = _Options(device=0 if sim else key,
                         sim=(sim or "").encode())
            c = ctypes.c_void_p()
            st = lib.fg_ctx_create(ctypes.byref(c), ctypes.byref(o))
            if st:
                from . import FagenError, _STATUS
                raise FagenError(_STATUS[st], "fg_ctx_create failed")
            _ctxs[key] = c.value
        return _ctxs[key]


def stream(torch, device, sim=_ASK):
    """The stream a libfagen call on device gets.  On the simulator:
    CU_STREAM_PER_THREAD.  On the GPU: torch's current stream of device,
    or, where that is the legacy default stream (which libfagen does not
    launch on), the calling thread's per-thread default stream, made to
    wait for the legacy stream first.  The legacy stream waits for every
    blocking stream, the other threads' per-thread streams included, but
    two per-thread streams do not wait for each other: without the wait,
    a backward that autograd runs on its device thread could read what
    the forward, launched from the main thread, had not written yet.
    The wait is made only when the calling thread is not the one of the
    device's last such launch: a per-thread stream waits for the legacy
    stream's earlier work by itself (it is a blocking stream), and for
    the same thread's earlier launches by its order, so only another
    thread's launches need the event (which otherwise costs a gap of
    about 15 us between back-to-back kernels, docs/PERF.md).  device: a
    torch.device or a CUDA device's index; sim: as check's."""
    global _raw_stream
    if sim is _ASK:
        sim = simulator()
    if sim is not None:
        return CU_STREAM_PER_THREAD
    idx = _index(torch, device)
    if _raw_stream is None:
        # the handle as an int, without the torch.cuda.Stream object
        # current_stream builds (torch's own get_raw_stream, for
        # Inductor's generated code); the public call where it is absent
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream",
                              None) or \
            (lambda i: torch.cuda.current_stream(i).cuda_stream)
    raw = _raw_stream(idx)
    if raw:
        return raw
    me = threading.get_ident()
    # the thread of the device's last launch from the legacy stream: a
    # dict read (atomic), the same answer as under the lock, as if this
    # call had taken it first
    if _last.get(idx) == me:
        return CU_STREAM_PER_THREAD
    with _lock:
        if _last.get(idx) == me:
            return CU_STREAM_PER_THREAD
        ext = _per_thread.get(idx)
        if ext is None:
            ext = _per_thread[idx] = torch.cuda.ExternalStream(
                CU_STREAM_PER_THREAD, device=torch.device("cuda", idx))
        ext.wait_stream(torch.cuda.current_stream(idx))
        _last[idx] = me
    return CU_STREAM_PER_THREAD


def capturing(torch):
    """Whether torch is capturing a CUDA graph on the current stream
    (never on the simulator)."""
    return simulator() is None and torch.cuda.is_current_stream_capturing()
