#!/usr/bin/env python3
"""host_overhead.py: the host time of one fagen call (Python checks,
libfagen's checks and launch), from many calls on a tiny problem, beside
torch's own (issue #26: a memory-bound kernel of ~100 us must not wait
on its launch).

    PYTHONPATH=python FAGEN_LIB=build/libfagen.so python3 bench/host_overhead.py
"""
import time

import torch

import fagen


def per_call(f, n=2000):
    for _ in range(50):
        f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    host = (time.perf_counter() - t) / n
    torch.cuda.synchronize()
    return host * 1e6


def main():
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    print("%s: host microseconds per call (8 x 4096 bf16)" %
          torch.cuda.get_device_name())
    with torch.no_grad():
        for name, f in (
                ("fagen.rms_norm", lambda: fagen.rms_norm(x, w)),
                ("fagen.rms_norm out=", lambda: fagen.rms_norm(x, w,
                                                               out=y)),
                ("fagen.layer_norm", lambda: fagen.layer_norm(x, w)),
                ("fagen.softmax", lambda: fagen.softmax(x)),
                ("torch.rms_norm", lambda: torch.rms_norm(x, (4096,), w)),
                ("torch.softmax", lambda: torch.softmax(x, -1)),
                ("y.copy_(x)", lambda: y.copy_(x))):
            print("  %-22s %7.1f" % (name, per_call(f)))


if __name__ == "__main__":
    main()
