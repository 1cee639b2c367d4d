#!/usr/bin/env python3
"""shipped.py FAGEN [--update]: the broken schedules of issue #14, made
from the shipped ones.  Each case of tests/mutate/shipped.txt names a
schedule, a line (its exact text, first occurrence) to delete, the -D
arguments ('-': none; 'LINE @N': its N-th occurrence) and the first diagnostic line 'fagen --check' must
print for the mutant, with the mutant's path written as the schedule's
(line numbers are the mutant's).  --update rewrites the expected lines."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TAB = os.path.join(ROOT, "tests", "mutate", "shipped.txt")


def main():
    fagen = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv[2:]
    os.chdir(ROOT)
    out, fails, n = [], 0, 0
    tmp = tempfile.mkdtemp()
    for line in open(TAB):
        if line.startswith("#") or not line.strip():
            out.append(line)
            continue
        f = [x.strip() for x in line.rstrip("\n").split("|", 3)] + [""] * 4
        sched, text, args, want = f[:4]
        lines = open(sched).readlines()
        nth = 1
        if "@" in text:  # 'LINE @N': its N-th occurrence
            text, nth = text.rsplit("@", 1)
            text, nth = text.strip(), int(nth)
        k = [i for i, l in enumerate(lines) if l.strip() == text][nth - 1:]
        if not k:
            print("FAIL %s: no line '%s'" % (sched, text))
            fails += 1
            out.append(line)
            continue
        mp = os.path.join(tmp, os.path.basename(sched))
        with open(mp, "w") as f:
            f.writelines(lines[:k[0]] + lines[k[0] + 1:])
        r = subprocess.run([fagen, mp, "--check"] + ([] if args == "-" else
                           args.split()), capture_output=True, text=True)
        got = r.stderr.split("\n")[0].replace(mp, sched)
        n += 1
        if update:
            out.append("%s | %s | %s | %s\n" % (sched, text if nth == 1 else
                       "%s @%d" % (text, nth), args, got))
        elif r.returncode == 0 or got != want:
            print("FAIL %s: deleting line %d '%s' (%s)\n  want: %s\n  got:  %s"
                  % (sched, k[0] + 1, text, args, want, got))
            fails += 1
        os.unlink(mp)
    os.rmdir(tmp)
    if update:
        open(TAB, "w").writelines(out)
    print("shipped mutants: %d, failed: %d" % (n, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
