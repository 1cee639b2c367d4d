"""PTX assemblers from NVIDIA's CUDA wheels, for a machine with no toolkit.

libfagen assembles PTX with nvJitLink or ptxas, which it looks for in a
CUDA toolkit ($FAGEN_NVJITLINK_LIB / $FAGEN_PTXAS, the dynamic linker's
path, $CUDA_HOME, $CUDA_PATH, PATH, /usr/local/cuda; docs/API.md).  With
neither it falls back to the driver's JIT, which assembles every kernel
again in every process (nothing is cached).  `pip install fagen[cuda]`
brings the two as wheels (nvidia-cuda-nvcc, nvidia-nvjitlink); they land
in site-packages/nvidia/, where libfagen does not look.  assemblers()
finds them and, where libfagen would find no toolkit's, names them to
libfagen through $FAGEN_PTXAS and $FAGEN_NVJITLINK_LIB before it is
loaded (issue #17).  An environment variable already set always wins.
"""

import ctypes
import os
import sys
import warnings

# Where each tool sits in its wheels, newest CUDA first: CUDA 13's
# wheels share nvidia/cu13/, CUDA 12's have a folder each.
_WHEEL_PTXAS = ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas")
_WHEEL_NVJITLINK = ("cu13/lib/libnvJitLink.so.13",
                    "nvjitlink/lib/libnvJitLink.so.12")
_NVJITLINK_NAMES = ("libnvJitLink.so.13", "libnvJitLink.so.12",
                    "libnvJitLink.so")


def _homes(env):
    return [h for h in (env.get("CUDA_HOME"), env.get("CUDA_PATH")) if h]


def toolkit_ptxas(env, default_home="/usr/local/cuda"):
    """The ptxas libfagen would find without help (its search), or None."""
    dirs = [os.path.join(h, "bin") for h in _homes(env)]
    dirs += [d for d in env.get("PATH", "").split(os.pathsep) if d]
    dirs.append(os.path.join(default_home, "bin"))
    for d in dirs:
        p = os.path.join(d, "ptxas")
        if os.access(p, os.X_OK):
            return p
    return None


def toolkit_nvjitlink(env, default_home="/usr/local/cuda"):
    """The nvJitLink libfagen would find without help, or None."""
    for name in _NVJITLINK_NAMES:
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            pass
    for h in _homes(env) + [default_home]:
        p = os.path.join(h, "lib64", "libnvJitLink.so")
        if os.path.exists(p):
            return p
    return None


def wheel_dirs(path=None):
    """The nvidia/ folders of the CUDA wheels on path (sys.path)."""
    dirs = []
    for entry in sys.path if path is None else path:
        d = os.path.join(entry or os.curdir, "nvidia")
        if os.path.isdir(d) and d not in dirs:
            dirs.append(d)
    return dirs


def _in_wheels(dirs, rels, executable):
    for d in dirs:
        for rel in rels:
            p = os.path.join(d, rel)
            if os.access(p, os.X_OK) if executable else os.path.isfile(p):
                return p
    return None


def assemblers(env=None, path=None, default_home="/usr/local/cuda"):
    """What libfagen will assemble PTX with: a dict with 'ptxas' and
    'nvjitlink', each (where, how) with how one of 'environment',
    'toolkit', 'wheel', or (None, 'missing'); and 'set', the variables
    to add to env so that libfagen finds the wheels' tools."""
    env = os.environ if env is None else env
    dirs = wheel_dirs(path)
    out = {"set": {}}
    for key, var, toolkit, rels, exe in (
            ("ptxas", "FAGEN_PTXAS", toolkit_ptxas, _WHEEL_PTXAS, True),
            ("nvjitlink", "FAGEN_NVJITLINK_LIB", toolkit_nvjitlink,
             _WHEEL_NVJITLINK, False)):
        t = None if env.get(var) else toolkit(env, default_home)
        if env.get(var):
            out[key] = (env[var], "environment")
        elif t:
            out[key] = (t, "toolkit")
        else:
            p = _in_wheels(dirs, rels, exe)
            out[key] = (p, "wheel") if p else (None, "missing")
            if p:
                out["set"][var] = p
    return out


def missing_message(found):
    """A warning for found (assemblers()) when both tools are missing,
    naming them and the wheels that bring them; None otherwise."""
    if found["ptxas"][0] or found["nvjitlink"][0]:
        return None
    return ("fagen: no PTX assembler: neither ptxas nor libnvJitLink was "
            "found ($FAGEN_PTXAS, $FAGEN_NVJITLINK_LIB, $CUDA_HOME, "
            "$CUDA_PATH, PATH, /usr/local/cuda, or the nvidia-cuda-nvcc "
            "and nvidia-nvjitlink wheels); kernels are assembled by the "
            "CUDA driver at every load and never cached.  Install them "
            "with: pip install 'fagen[cuda]'")


def use_wheels():
    """Called before libfagen is loaded: point it at the wheels' tools
    where it would find no toolkit's, and warn when there is neither."""
    found = assemblers()
    os.environ.update(found["set"])
    msg = missing_message(found)
    if msg:
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    return found
