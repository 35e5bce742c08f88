#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tell which kselftest fails on which deliberately broken kernel.

'scripts/bts breaks' boots a kernel built with tests/kernel-breaks/breaks.patch
and runs the ptrace_bts kselftests once per breakage (guest/init, bts_breaks=).
Each boot directory holds tap.log, console.log and qemu-status.  In tap.log a
run of one program under one breakage sits between 'BTS-BREAK brk=B prog=P'
and 'BTS-BREAK-END rc=R'; on the console, 'BTS-BREAK brk=B' starts the part
that belongs to breakage B.

The check fails when:
 - a run without breakage ('none') is not clean: a test that is not ok or
   skipped, a program that exits non-zero, or a splat;
 - a breakage that was asked for did not run, or nothing caught it: no test
   said 'not ok', every program exited 0 and the console shows no splat;
 - (with --complete) a test never said 'not ok' under any breakage and is
   not listed, with the reason, in the unbreakable file.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from judge import find_splats, parse_tap, read_lines as read  # noqa: E402

START = re.compile(r"^BTS-BREAK brk=(\S+) prog=(\S+)$")
END = re.compile(r"^BTS-BREAK-END rc=(\d+)$")
CONSOLE_MARK = re.compile(r"BTS-BREAK brk=(\S+)\s*$")
DIRECTIVE = re.compile(r"\s*#\s*(SKIP|TODO|XFAIL|TIMEOUT)\b.*$", re.I)


class Run:
    """One program under one breakage."""

    def __init__(self, brk, prog):
        self.brk, self.prog, self.rc, self.lines = brk, prog, None, []
        self.results = {}      # (num, name) -> 'ok' | 'not ok' | 'skip'
        self.problems = []

    def finish(self):
        results, _, problems, _ = parse_tap(self.lines)
        self.problems = problems
        for r in results:
            if r.depth != 0:
                continue
            name = DIRECTIVE.sub("", r.desc).strip()
            if r.directive == "SKIP":
                state = "skip"
            else:
                state = "ok" if r.ok else "not ok"
            self.results[(r.num, name)] = state


def parse_boot(path):
    """Return (runs, splats by breakage, qemu status) of one boot."""
    runs, cur = [], None
    for raw in read(os.path.join(path, "tap.log")):
        line = raw.rstrip("\r\n")
        m = START.match(line)
        if m:
            cur = Run(m.group(1), m.group(2))
            runs.append(cur)
            continue
        m = END.match(line)
        if m and cur:
            cur.rc = int(m.group(1))
            cur.finish()
            cur = None
            continue
        if cur:
            cur.lines.append(line)
    if cur:
        cur.finish()    # the guest died during this run: rc stays None
    splats = {}
    console = read(os.path.join(path, "console.log"))
    bounds = []
    for no, raw in enumerate(console):
        m = CONSOLE_MARK.search(raw)
        if m:
            bounds.append((no, m.group(1)))
    starts = [(0, "boot")] + bounds
    for i, (first, brk) in enumerate(starts):
        last = starts[i + 1][0] if i + 1 < len(starts) else len(console)
        part = console[first:last]
        for kind, no, text in find_splats(part):
            splats.setdefault(brk, []).append(
                "%s console.log:%d %s" % (kind, first + no, text[:100]))
    status = "".join(read(os.path.join(path, "qemu-status"))).strip()
    return runs, splats, status


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", required=True, help="breaks.list")
    ap.add_argument("--unbreakable", required=True,
                    help="tests no breakage can reach, with reasons")
    ap.add_argument("--want", required=True,
                    help="comma-separated breakages that must have run")
    ap.add_argument("--complete", action="store_true",
                    help="every breakage ran: every test must have failed")
    ap.add_argument("boots", nargs="+")
    args = ap.parse_args()

    what = {}
    for raw in read(args.list):
        f = raw.rstrip("\n").split("\t")
        if len(f) >= 2 and f[0].isdigit():
            what[f[0]] = f[1]
    exempt = []
    for raw in read(args.unbreakable):
        f = raw.rstrip("\n").split("\t")
        if len(f) >= 3 and not raw.startswith("#"):
            exempt.append((f[0], f[1], f[2]))

    runs, splats, errors = [], {}, []
    for boot in args.boots:
        r, s, status = parse_boot(boot)
        runs += r
        for k, v in s.items():
            splats.setdefault(k, []).extend(v)
        if status not in ("0", ""):
            errors.append("%s: QEMU status %s" % (boot, status))

    # The tests are what the unbroken runs printed.
    tests = []
    for run in (r for r in runs if r.brk == "none"):
        for key, state in run.results.items():
            t = (run.prog,) + key
            if t not in tests:
                tests.append(t)
            if state != "ok":
                errors.append("unbroken run: %s %s %s: %s" % (
                    run.prog, key[0], key[1], state))
        if run.rc != 0 or run.problems:
            errors.append("unbroken run: %s exit %s %s" % (
                run.prog, run.rc, "; ".join(run.problems)))
    if not tests:
        errors.append("no unbroken run printed any test")
    for s in splats.get("none", []) + splats.get("boot", []):
        errors.append("splat outside any breakage: %s" % s)

    caught_by = {t: [] for t in tests}
    want = [b for b in args.want.split(",") if b and b != "none"]
    for b in want:
        mine = [r for r in runs if r.brk == b]
        print("break %s: %s" % (b, what.get(b, "?")))
        if not mine:
            errors.append("break %s did not run" % b)
            print("    did not run")
            continue
        failed, missing = [], []
        for prog, num, name in tests:
            run = next((r for r in mine if r.prog == prog), None)
            state = run.results.get((num, name)) if run else None
            if state in ("not ok", "skip"):
                failed.append((prog, num, name))
                caught_by[(prog, num, name)].append(b)
            elif state is None:
                missing.append((prog, num, name))
        for prog, num, name in failed:
            print("    not ok  %s %d %s" % (prog, num, name))
        progs = sorted({p for p, _, _ in missing})
        for p in progs:
            n = sum(1 for q, _, _ in missing if q == p)
            run = next((r for r in mine if r.prog == p), None)
            print("    missing %s: %d tests did not report (exit %s)" % (
                p, n, run.rc if run else "no run"))
        for s in splats.get(b, []):
            print("    splat   %s" % s)
        # A program that bails out or dies caught the breakage too, though
        # it names no test.
        exits = [r for r in mine if r.rc != 0]
        if not failed and not exits and not splats.get(b):
            errors.append("break %s (%s): no test failed, no program "
                          "failed, no splat" % (b, what.get(b, "?")))

    print()
    print("tests and the breakages they failed on:")
    for t in tests:
        prog, num, name = t
        got = caught_by[t]
        print("  %-14s %3d %-60s %s" % (prog, num, name[:60],
                                       " ".join(got) if got else "-"))
        if not got and args.complete:
            why = next((e[2] for e in exempt
                        if e[0] == prog and e[1] in name), None)
            if why:
                print("  %18s unbreakable here: %s" % ("", why))
            else:
                errors.append("%s %d %s: failed on no breakage" % t)
    print()
    for e in errors:
        print("FAIL: %s" % e)
    print("result: %s (%d tests, %d breakages)" % (
        "PASS" if not errors else "FAIL", len(tests), len(want)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
