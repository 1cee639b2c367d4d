#!/usr/bin/env python3
"""coverage.py ROOT [--strict] [--min N] [-v]: which diagnostics have a golden.

Lists the format strings of the diag_error/diag_warn/vf_fail call sites
under ROOT/compiler and ROOT/grammar (adjacent string literals joined),
turns each into a pattern (a conversion matches any text) and looks for
it in the messages of every tests/golden/*/*.err and .warn file.  Prints
the covered count and, with -v, the uncovered sites.  Issue #25: every
message class has a golden, so a message changes only on purpose; the
few that no schedule can trigger are in ALLOWED below, each with why.
With --strict it fails when a class is neither covered nor allowed, and
when an ALLOWED entry has gone stale (a golden now covers it, or the
compiler no longer has it).  With --min N it fails when fewer than N
classes are covered.
"""
import glob
import os
import re
import sys

# Message classes no golden input can trigger, with the reason for each
# (issue #25).  Keyed by the format string, as coverage.py -v prints it.
ALLOWED = {
    # a backstop: sema's target checks (sg_need_target, the MMA's
    # target-chosen op) reject every target-only operation first
    "'%s' is not available on %s":
        'unreachable: sema rejects target-only operations first',
    # each buffer is at most 2^40 bytes, so this needs millions of
    # declarations: far past a golden's 40 lines
    "the shared-memory offset of '%s' overflows a 64-bit integer":
        'a limit that only a huge input reaches',
    # register layouts are wgmma_acc/wgmma_a (sm_90a), tmem_rows (sm_100a)
    # and rows(L); every pair of kinds has its own message above it
    "register tiles with layouts '%s' and '%s' meet here, and no "
    "conversion between them exists":
        'unreachable: no pair of register layout kinds gets here',
    # i32 tiles (a gather's indices) come from rowid/colid, which are
    # refused first on every layout the gather is not lowered for
    # (tests/golden/ptx/gather_wgmma_a.fa)
    "'gload' of a tile of layout '%s' (a gather) is not lowered to PTX "
    "for %s yet":
        'unreachable: its index tiles are refused first',
    # the same for a scatter's index tiles (tests/golden/ptx/scatter.fa)
    "a scatter of a tile of layout '%s' is not lowered to PTX for %s yet":
        'unreachable: its index tiles are refused first',
    # argc() is only called with lo == hi (sirops.c)
    "'%s' takes %d to %d operands, found %d":
        'unreachable: no operation takes a range of operand counts',
}

CALL = re.compile(r'\b(diag_error|diag_warn|vf_fail)\s*\(')
STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
CONV = re.compile(r'%[-+ #0]*\*?\d*(?:\.\*|\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXeEfgGcsp%]')


def sites(root):
    for path in sorted(glob.glob(os.path.join(root, 'compiler', '**', '*.c'),
                                 recursive=True) +
                       [os.path.join(root, 'grammar', 'parser.y')]):
        text = open(path, encoding='utf-8').read()
        for m in CALL.finditer(text):
            # the call's text up to its closing parenthesis, and the runs
            # of adjacent literals that are its own arguments (not those
            # of a call nested in it, e.g. attr(d, "packed"))
            depth, i, runs, run = 1, m.end(), [], None
            while i < len(text) and depth:
                c = text[i]
                if c == '"':
                    j = i + 1
                    while text[j] != '"':
                        j += 2 if text[j] == '\\' else 1
                    if depth == 1:
                        if run is None:
                            run = []
                            runs.append(run)
                        run.append(text[i + 1:j])
                    i = j
                elif c == '(':
                    depth += 1
                elif c == ')':
                    depth -= 1
                if not c.isspace() and c != '"':
                    run = None
                i += 1
            # diag_warn(ctx, NAME, span, FMT, ...) and
            # vf_fail(sim, span, CHECK, FMT, ...): the format is the second
            skip = 0 if m.group(1) == 'diag_error' else 1
            if len(runs) <= skip:
                continue
            fmt = ''.join(runs[skip])
            if fmt in ('%s', '%s [%s] (%s)', '%s [%s]'):
                continue  # a message built elsewhere
            line = text.count('\n', 0, m.start()) + 1
            yield os.path.relpath(path, root), line, fmt


def pattern(fmt):
    out, last = [], 0
    for m in CONV.finditer(fmt):
        out.append(re.escape(fmt[last:m.start()].encode().decode(
            'unicode_escape')))
        out.append('%' if m.group(0) == '%%' else '.*')
        last = m.end()
    out.append(re.escape(fmt[last:].encode().decode('unicode_escape')))
    return re.compile(''.join(out))


def main():
    args = sys.argv[1:]
    verbose = '-v' in args
    strict = '--strict' in args
    args = [a for a in args if a not in ('-v', '--strict')]
    need = 0
    if '--min' in args:
        k = args.index('--min')
        need = int(args[k + 1])
        del args[k:k + 2]
    root = args[0] if args else '.'
    msgs = []
    for f in glob.glob(os.path.join(root, 'tests', 'golden', '*', '*.err')) + \
            glob.glob(os.path.join(root, 'tests', 'golden', '*', '*.warn')):
        for line in open(f, encoding='utf-8', errors='replace'):
            m = re.match(r'.*?: (?:error|warning|note): (.*)$', line)
            if m:
                msgs.append(m.group(1))
    seen, covered, missing, stale = set(), 0, [], []
    for path, line, fmt in sites(root):
        if fmt in seen:
            continue
        seen.add(fmt)
        pat = pattern(fmt)
        if any(pat.search(x) for x in msgs):
            covered += 1
            if fmt in ALLOWED:
                stale.append(f'{path}:{line}: allowed but covered: {fmt}')
        elif fmt not in ALLOWED:
            missing.append(f'{path}:{line}: {fmt}')
    stale += [f'allowed but not in the compiler: {f}' for f in ALLOWED
              if f not in seen]
    print(f'coverage: {covered} of {len(seen)} message classes have a '
          f'golden .err or .warn, {len(seen) - covered - len(missing)} '
          f'are allowed without one, {len(missing)} with neither')
    if verbose or strict:
        for m in missing:
            print('  uncovered', m)
        for m in stale:
            print('  stale', m)
    if strict and (missing or stale):
        print('coverage: add a golden for each uncovered class (or, if no '
              'schedule can trigger it, an ALLOWED entry saying why), and '
              'drop stale ALLOWED entries', file=sys.stderr)
        return 1
    if covered < need:
        print(f'coverage: fewer than --min {need}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
