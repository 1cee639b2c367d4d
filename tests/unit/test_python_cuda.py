"""test_python_cuda.py: issue #17, fagen's Python package finds ptxas and
nvJitLink in NVIDIA's CUDA wheels (nvidia-cuda-nvcc, nvidia-nvjitlink)
where libfagen would find no toolkit's, leaves a toolkit and the
environment variables alone, and names what is missing when there is
nothing.  Fake wheels and toolkits in a temporary directory; no GPU, no
PyTorch, no libfagen."""
import os
import stat
import tempfile

from fagen import _cuda

NOWHERE = "/nonexistent/cuda"


def touch(path, executable=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def find(env, site):
    return _cuda.assemblers(env=env, path=[site], default_home=NOWHERE)


def main():
    # the dynamic linker's own libnvJitLink would be a toolkit's: hide it
    _cuda._NVJITLINK_NAMES = ("libfagen-test-no-such-library.so",)
    with tempfile.TemporaryDirectory() as tmp:
        bare = {"PATH": os.path.join(tmp, "empty")}
        cu13 = os.path.join(tmp, "cu13")
        ptxas = touch(os.path.join(cu13, "nvidia/cu13/bin/ptxas"), True)
        nvj = touch(os.path.join(cu13, "nvidia/cu13/lib/libnvJitLink.so.13"))

        # no toolkit: the CUDA 13 wheels' tools, named to libfagen
        got = find(bare, cu13)
        assert got["ptxas"] == (ptxas, "wheel"), got
        assert got["nvjitlink"] == (nvj, "wheel"), got
        assert got["set"] == {"FAGEN_PTXAS": ptxas,
                              "FAGEN_NVJITLINK_LIB": nvj}, got
        assert _cuda.missing_message(got) is None

        # CUDA 12's wheels have a folder each
        cu12 = os.path.join(tmp, "cu12")
        p12 = touch(os.path.join(cu12, "nvidia/cuda_nvcc/bin/ptxas"), True)
        n12 = touch(os.path.join(cu12,
                                 "nvidia/nvjitlink/lib/libnvJitLink.so.12"))
        got = find(bare, cu12)
        assert got["set"] == {"FAGEN_PTXAS": p12,
                              "FAGEN_NVJITLINK_LIB": n12}, got

        # a ptxas that cannot run is no ptxas
        os.chmod(ptxas, 0o644)
        assert find(bare, cu13)["ptxas"] == (None, "missing")
        os.chmod(ptxas, 0o755)

        # a toolkit (on PATH, or CUDA_HOME) is libfagen's own choice
        kit = os.path.join(tmp, "kit")
        kptxas = touch(os.path.join(kit, "bin/ptxas"), True)
        knvj = touch(os.path.join(kit, "lib64/libnvJitLink.so"))
        got = find({"PATH": os.path.join(kit, "bin")}, cu13)
        assert got["ptxas"] == (kptxas, "toolkit"), got
        assert got["nvjitlink"] == (nvj, "wheel"), got
        assert got["set"] == {"FAGEN_NVJITLINK_LIB": nvj}, got
        got = find(dict(bare, CUDA_HOME=kit), cu13)
        assert got["ptxas"] == (kptxas, "toolkit"), got
        assert got["nvjitlink"] == (knvj, "toolkit"), got
        assert got["set"] == {}, got

        # the variables always win
        env = dict(bare, FAGEN_PTXAS="/my/ptxas",
                   FAGEN_NVJITLINK_LIB="/my/libnvJitLink.so")
        got = find(env, cu13)
        assert got["ptxas"] == ("/my/ptxas", "environment"), got
        assert got["nvjitlink"] == ("/my/libnvJitLink.so", "environment")
        assert got["set"] == {}, got

        # nothing anywhere: both missing, and the warning says what to do
        got = find(bare, os.path.join(tmp, "empty"))
        assert got["ptxas"] == (None, "missing"), got
        assert got["nvjitlink"] == (None, "missing"), got
        msg = _cuda.missing_message(got)
        for want in ("neither ptxas nor libnvJitLink", "nvidia-cuda-nvcc",
                     "nvidia-nvjitlink", "pip install 'fagen[cuda]'",
                     "never cached"):
            assert want in msg, (want, msg)
    print("test_python_cuda: ok")


if __name__ == "__main__":
    main()
