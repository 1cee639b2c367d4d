#!/usr/bin/env python3
"""ncu_points.py: one launch per grid point, for Nsight Compute.

    ncu --clock-control none --kernel-name regex:fa_fwd \
        --section SpeedOfLight --section WarpStateStats ... \
        python3 bench/ncu_points.py 128,0,8192,fagen 64,1,1024,baseline

Each argument is D,causal,S,schedule (fagen: the default, ws or
baseline); the shapes are bench.py's (batch 16384/S, heads 2048/D, bf16).
Each point launches its kernel once, after the JIT, so ncu sees exactly
one launch per point."""
import sys

import torch

import fagen

SCHED = {"fagen": None, "ws": "fa_fwd_sm90.fa",
         "baseline": "fa_fwd_baseline_sm90.fa"}


def main():
    with torch.inference_mode():
        for arg in sys.argv[1:]:
            d, causal, s, name = arg.split(",")
            d, causal, s = int(d), bool(int(causal)), int(s)
            shape = (16384 // s, 2048 // d, s, d)
            q, k, v = (torch.randn(shape, device="cuda",
                                   dtype=torch.bfloat16) for _ in range(3))
            fagen.attention(q, k, v, causal=causal, schedule=SCHED[name])
            torch.cuda.synchronize()
            print("launched", arg, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
