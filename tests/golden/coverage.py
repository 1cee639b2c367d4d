#!/usr/bin/env python3
"""coverage.py ROOT [--min N] [-v]: which compiler diagnostics have a golden.

Lists the format strings of the diag_error/diag_warn/vf_fail call sites
under ROOT/compiler and ROOT/grammar (adjacent string literals joined),
turns each into a pattern (a conversion matches any text) and looks for
it in the messages of every tests/golden/*/*.err and .warn file.  Prints
the covered count and, with -v, the uncovered sites.  It is a ratchet,
not a proof: with --min N it fails when fewer than N message classes are
covered, so a golden cannot silently go away; it does not yet demand
one golden per class (issue #25: many classes are internal limits or
need a target feature no golden exercises yet; see -v for the list).
"""
import glob
import os
import re
import sys

CALL = re.compile(r'\b(diag_error|diag_warn|vf_fail)\s*\(')
STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
CONV = re.compile(r'%[-+ #0]*\*?\d*(?:\.\*|\.\d+)?(?:hh|h|ll|l|z|j|t)?[diouxXeEfgGcsp%]')


def sites(root):
    for path in sorted(glob.glob(os.path.join(root, 'compiler', '**', '*.c'),
                                 recursive=True) +
                       [os.path.join(root, 'grammar', 'parser.y')]):
        text = open(path, encoding='utf-8').read()
        for m in CALL.finditer(text):
            # the call's text up to its closing parenthesis
            depth, i = 1, m.end()
            while i < len(text) and depth:
                c = text[i]
                if c == '"':
                    j = i + 1
                    while text[j] != '"':
                        j += 2 if text[j] == '\\' else 1
                    i = j
                elif c == '(':
                    depth += 1
                elif c == ')':
                    depth -= 1
                i += 1
            args = text[m.end():i - 1]
            lits = STR.findall(args)
            if m.group(1) == 'diag_warn' and lits:
                lits = lits[1:]  # the warning's name
            # the format: the first run of adjacent literals
            run = re.search(r'"(?:[^"\\]|\\.)*"(?:\s*"(?:[^"\\]|\\.)*")*',
                            args)
            if not run:
                continue
            fmt = ''.join(STR.findall(run.group(0)))
            if m.group(1) == 'diag_warn':
                rest = args[run.end():]
                run = re.search(r'"(?:[^"\\]|\\.)*"(?:\s*"(?:[^"\\]|\\.)*")*',
                                rest)
                if not run:
                    continue
                fmt = ''.join(STR.findall(run.group(0)))
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
    args = [a for a in args if a != '-v']
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
    seen, covered, missing = set(), 0, []
    for path, line, fmt in sites(root):
        if fmt in seen:
            continue
        seen.add(fmt)
        pat = pattern(fmt)
        if any(pat.search(x) for x in msgs):
            covered += 1
        else:
            missing.append(f'{path}:{line}: {fmt}')
    print(f'coverage: {covered} of {len(seen)} message classes have a '
          f'golden .err or .warn')
    if verbose:
        for m in missing:
            print('  uncovered', m)
    if covered < need:
        print(f'coverage: fewer than --min {need}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
