#!/usr/bin/env python3
"""sweep.py FAGEN [SCHEDULE...]: the verifier's mutation sweep (issue #14).

For every shipped schedule (schedules/*.fa) it makes one-line mutants:
  delete   each synchronizing line (wait, arrive, expect, commit,
           tma_commit, tma_wait, mma_commit, mma_wait, bsync, barrive,
           cp_async_commit, cp_async_wait, sem_wait, sem_add)
  loosen   each 'cp_async_wait N' made 'cp_async_wait N + 1' (one group
           more left in flight)
  flip     each wait's parity ('wait B, P;' -> 'wait B, (P) ^ 1;')
  swap     each barrier name of a synchronizing line, for the next
           barrier of the same kind declared (mbar or nbar)
  move     each arrive, commit or barrive moved above the statement
           before it (the access it releases)
  mask     each TMA multicast's mask made this CTA's alone (issue #27)
  stage    each reduction's 'via=B[i]' or 'cluster=B[i]' with a
           computed stage i made 'B[0]' (one stage)
and runs 'FAGEN MUTANT --check' under every variant of the schedule (its
'// VARIANTS:' lines and its rows of tests/shipped/variants.txt).  A
mutant is caught when some variant rejects it.  Prints each accepted
mutant, with the reason tests/mutate/accepted.txt gives for it, and the
rejection rate; exits 1 when an accepted mutant has no reason there or
the rate is under MIN_PCT (default 0).  -j N runs N checks at once."""
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SYNC = re.compile(r"^\s*(wait|arrive|expect|bsync|barrive|commit|tma_commit|"
                  r"tma_wait|mma_commit|mma_wait|cp_async_commit|"
                  r"cp_async_wait|sem_wait|sem_add)\b[^;]*;\s*(//.*)?$")
CPWAIT = re.compile(r"^(\s*cp_async_wait\s+)(\d+)(;.*)$", re.S)
RELEASE = re.compile(r"^\s*(arrive|commit|barrive)\b[^;]*;\s*(//.*)?$")
WAIT = re.compile(r"^(\s*wait\s+[^,;]+,\s*)([^;]+?)(;\s*(//.*)?)$")
DECL = re.compile(r"^\s*(mbar|nbar)\s+([A-Za-z_]\w*)")
STAGE = re.compile(r"\b(via|cluster)=(\w+)\[([^\]]*[^\]\d\s][^\]]*)\]")
MASK = re.compile(r"\bmulticast=([^;]*?)(?=\s+\w+=|;|$)")


def variants(path):
    vs = []
    with open(path) as f:
        for line in f:
            m = re.match(r"^// VARIANTS: *(.*)$", line)
            if m:
                v = m.group(1).strip()
                vs.append([] if v == "-" else v.split())
    rel = os.path.relpath(path, ROOT)
    tab = os.path.join(ROOT, "tests", "shipped", "variants.txt")
    if os.path.exists(tab):
        for line in open(tab):
            if line.startswith("#") or not line.strip():
                continue
            f = line.split()
            if len(f) >= 2 and f[1] == rel and f[2:] not in vs:
                vs.append(f[2:])
    return vs or [[]]


def mutants(lines):
    """(kind, line number, description, new lines) for each mutant."""
    bars = {"mbar": [], "nbar": []}
    for ln in lines:
        m = DECL.match(ln)
        if m and m.group(2) not in bars[m.group(1)]:  # once: a static
            bars[m.group(1)].append(m.group(2))       # if may declare
                                                       # it in each branch
    out = []
    for i, ln in enumerate(lines):
        m = STAGE.search(ln)
        if m:  # a reduction's stages: always the first (one stage)
            new = ln[:m.start(3)] + "0" + ln[m.end(3):]
            out.append(("stage", i + 1, ln.strip(),
                        lines[:i] + [new] + lines[i + 1:]))
        m = MASK.search(ln)
        if m:  # a multicast to this CTA only: the peers miss their part
            new = ln[:m.start(1)] + "1 << cluster_rank" + ln[m.end(1):]
            out.append(("mask", i + 1, ln.strip(),
                        lines[:i] + [new] + lines[i + 1:]))
        if not SYNC.match(ln):
            continue
        n = i + 1
        text = ln.strip()
        out.append(("delete", n, text, lines[:i] + lines[i + 1:]))
        w = CPWAIT.match(ln)
        if w:
            new = "%s%d%s" % (w.group(1), int(w.group(2)) + 1, w.group(3))
            out.append(("loosen", n, text, lines[:i] + [new] + lines[i + 1:]))
        w = WAIT.match(ln)
        if w:
            new = "%s(%s) ^ 1%s\n" % (w.group(1), w.group(2), w.group(3))
            out.append(("flip", n, text, lines[:i] + [new] + lines[i + 1:]))
        op = text.split()[0]
        kind = "nbar" if op in ("bsync", "barrive") else "mbar"
        for name in bars[kind]:
            if not re.search(r"\b%s\b" % re.escape(name), ln):
                continue
            others = [b for b in bars[kind] if b != name]
            if not others:
                continue
            k = bars[kind].index(name)
            other = bars[kind][(k + 1) % len(bars[kind])]
            new = re.sub(r"\b%s\b" % re.escape(name), other, ln, count=1)
            out.append(("swap", n, "%s (%s -> %s)" % (text, name, other),
                        lines[:i] + [new] + lines[i + 1:]))
            break
        if RELEASE.match(ln):
            j = i - 1
            while j >= 0 and (not lines[j].strip() or
                              lines[j].strip().startswith("//")):
                j -= 1
            prev = lines[j] if j >= 0 else ""
            indent = lambda s: len(s) - len(s.lstrip("\t "))
            if (j >= 0 and prev.rstrip().endswith(";") and
                    indent(prev) == indent(ln) and
                    (j == 0 or lines[j - 1].rstrip().endswith((";", "{", "}"))
                     or not lines[j - 1].strip() or
                     lines[j - 1].strip().startswith("//"))):
                new = lines[:j] + [ln, prev] + lines[j + 1:i] + lines[i + 1:]
                out.append(("move", n, "%s (above line %d)" % (text, j + 1),
                            new))
    return out


def load_reasons():
    """tests/mutate/accepted.txt: 'KIND FILE:LINE reason' per line."""
    r = {}
    p = os.path.join(ROOT, "tests", "mutate", "accepted.txt")
    if os.path.exists(p):
        for line in open(p):
            if line.startswith("#") or not line.strip():
                continue
            key, _, why = line.rstrip("\n").partition(" -- ")
            r[key.strip()] = why.strip()
    return r


def main():
    args = sys.argv[1:]
    jobs = 2
    if len(args) >= 2 and args[0] == "-j":
        jobs = int(args[1])
        args = args[2:]
    if not args:
        print(__doc__)
        return 2
    fagen = os.path.abspath(args[0])
    files = args[1:] or sorted(
        os.path.join("schedules", f) for f in os.listdir(
            os.path.join(ROOT, "schedules")) if f.endswith(".fa"))
    os.chdir(ROOT)
    tmp = tempfile.mkdtemp()
    reasons = load_reasons()
    work = []
    for f in files:
        lines = open(f).readlines()
        vs = variants(f)
        for k, (kind, n, text, new) in enumerate(mutants(lines)):
            mp = os.path.join(tmp, "%s.%d.fa" % (os.path.basename(f), k))
            with open(mp, "w") as o:
                o.writelines(new)
            work.append((f, kind, n, text, mp, vs))

    def check(w):
        f, kind, n, text, mp, vs = w
        for v in vs:
            r = subprocess.run([fagen, mp, "--check"] + v,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                return True
        return False

    with ThreadPoolExecutor(jobs) as ex:
        res = list(ex.map(check, work))
    total = len(work)
    caught = sum(res)
    unexplained = 0
    byfile = {}
    for w, hit in zip(work, res):
        f, kind, n, text = w[:4]
        t = byfile.setdefault(f, [0, 0])
        t[0] += 1
        t[1] += hit
        if hit:
            continue
        key = "%s %s:%d" % (kind, f, n)
        why = reasons.get(key)
        if why is None:
            unexplained += 1
            why = "UNEXPLAINED"
        print("accepted: %s: %s -- %s" % (key, text, why))
    for f, (t, c) in sorted(byfile.items()):
        print("%-36s %4d mutants, %4d caught (%d%%)" % (f, t, c,
              c * 100 // t if t else 100))
    pct = caught * 100 // total if total else 100
    print("mutants: %d, caught: %d (%d%%), unexplained: %d" % (
        total, caught, pct, unexplained))
    for w in work:
        os.unlink(w[4])
    os.rmdir(tmp)
    return 1 if unexplained or pct < int(os.environ.get("MIN_PCT", 0)) else 0


if __name__ == "__main__":
    sys.exit(main())
