#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge one guest run of scripts/bts from its two serial logs.

console.log is the kernel console (ttyS0): scanned for splats.
tap.log is what the guest's tests printed (ttyS1): TAP streams from the
project's guest checks and from kselftest's runner, plus 'BTS-GUEST key=value'
lines that the host asserts on.

The run fails on: a missing end marker (timeout, crash, hang), a TAP result
that is 'not ok', any SKIP, a TAP plan that does not match the results, a
host assertion that does not hold, or any kernel splat.
"""

import argparse
import re
import sys

SPLATS = [
    ("KASAN", re.compile(r"BUG: KASAN: ")),
    ("UBSAN", re.compile(r"UBSAN: ")),
    ("lockdep", re.compile(
        r"WARNING: (possible circular locking|possible recursive locking|"
        r"inconsistent lock state|suspicious RCU usage|"
        r"possible irq lock inversion|lock held when returning)|"
        r"INFO: trying to register non-static key|BUG: held lock freed|"
        r"DEBUG_LOCKS_WARN_ON")),
    ("atomic-sleep", re.compile(r"BUG: (sleeping function called from invalid"
                                r" context|scheduling while atomic)")),
    ("kmemleak", re.compile(r"unreferenced object 0x[0-9a-f]+|"
                            r"kmemleak: \d+ new suspected memory leaks")),
    ("list-corruption", re.compile(r"list_(add|del) corruption")),
    ("BUG", re.compile(r"\bBUG: |kernel BUG at ")),
    ("WARNING", re.compile(r"\bWARNING: ")),
    ("Oops", re.compile(r"\bOops\b")),
    ("panic", re.compile(r"Kernel panic")),
    ("stall", re.compile(r"INFO: (rcu|task .* blocked for more than)|"
                         r"rcu: INFO: |watchdog: BUG: soft lockup")),
    ("call-trace", re.compile(r"Call Trace:")),
    ("unchecked-msr", re.compile(r"unchecked MSR access error")),
    ("unknown-NMI", re.compile(r"NMI received for unknown reason|"
                               r"Dazed and confused")),
]

RESULT = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*-?\s*(.*)$")
PLAN = re.compile(r"^1\.\.(\d+)")
DIRECTIVE = re.compile(r"#\s*(SKIP|TODO|XFAIL|TIMEOUT)\b", re.I)
PREFIX = re.compile(r"^# ?")
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")


def find_splats(console_lines):
    """Return (kind, line number, text) for every splat line, once per line."""
    found = []
    for no, raw in enumerate(console_lines, 1):
        line = TIMESTAMP.sub("", raw.rstrip("\r\n"))
        for kind, rx in SPLATS:
            if rx.search(line):
                found.append((kind, no, line.strip()))
                break
    return found


class Result:
    def __init__(self, depth, ok, num, desc, line):
        self.depth, self.ok, self.num, self.desc, self.line = (
            depth, ok, num, desc, line)
        self.directive = None
        m = DIRECTIVE.search(desc)
        if m:
            self.directive = m.group(1).upper()
        self.children = 0


def parse_tap(tap_lines):
    """Parse TAP, nested through '# ' prefixes as kselftest prints it.

    Returns (results, leaves, problems, info): every result line, the leaf
    results (those with no nested results of their own), structural problems
    (plan mismatches) and the BTS-GUEST key/values.
    """
    results, problems, info = [], [], {}
    # per depth: [plan, count] of the stream currently open at that depth
    streams = {}
    for no, raw in enumerate(tap_lines, 1):
        line = raw.rstrip("\r\n")
        if line.startswith("BTS-GUEST "):
            key, _, val = line[len("BTS-GUEST "):].partition("=")
            info.setdefault(key, []).append(val)
            continue
        depth = 0
        while True:
            m = PREFIX.match(line)
            if not m or not (line.startswith("# ") or line == "#"):
                break
            rest = line[m.end():]
            if not (RESULT.match(rest) or PLAN.match(rest) or
                    rest.startswith(("# ", "TAP version", "Bail out!"))):
                break
            line = rest
            depth += 1
        if line.startswith("Bail out!"):
            problems.append("tap.log:%d: %s" % (no, line))
            continue
        if line.startswith("TAP version"):
            _close(streams, depth, problems)
            streams[depth] = [None, 0, no]
            continue
        m = PLAN.match(line)
        if m:
            st = streams.setdefault(depth, [None, 0, no])
            if st[0] is not None and st[1] >= st[0]:
                _close(streams, depth, problems)
                st = streams.setdefault(depth, [None, 0, no])
            st[0] = int(m.group(1))
            continue
        m = RESULT.match(line)
        if m:
            r = Result(depth, m.group(1) == "ok",
                       int(m.group(2)) if m.group(2) else None,
                       m.group(3), no)
            results.append(r)
            st = streams.setdefault(depth, [None, 0, no])
            st[1] += 1
            # A result closes the nested streams printed before it.
            for d in [d for d in streams if d > depth]:
                _close(streams, d, problems)
            continue
    for d in sorted(streams, reverse=True):
        _close(streams, d, problems)
    _mark_children(results)
    leaves = [r for r in results if r.children == 0]
    return results, leaves, problems, info


def _close(streams, depth, problems):
    st = streams.pop(depth, None)
    if st is None:
        return
    plan, count, start = st
    if plan is None:
        if count:
            problems.append("TAP stream at line %d (depth %d) has %d results"
                            " and no plan" % (start, depth, count))
    elif plan != count:
        problems.append("TAP stream at line %d (depth %d) planned %d results,"
                        " printed %d" % (start, depth, plan, count))


def _mark_children(results):
    # kselftest prints a test's nested results before the test's own line:
    # a result at depth d owns the results at depth d+1 printed since the
    # previous result at depth <= d.
    pending = {}
    for r in results:
        r.children = pending.pop(r.depth + 1, 0)
        for d in [d for d in pending if d > r.depth + 1]:
            del pending[d]
        pending[r.depth] = pending.get(r.depth, 0) + 1


def judge(console_lines, tap_lines, expect, qemu_status):
    """Return (failures, leaves, splats, info, host_checks)."""
    failures = []
    results, leaves, problems, info = parse_tap(tap_lines)
    failures += problems
    text = [l.rstrip("\r\n") for l in tap_lines]
    if "BTS-GUEST-BEGIN" not in text:
        failures.append("the guest never started its tests (no BTS-GUEST-BEGIN)")
    elif "BTS-GUEST-END" not in text:
        failures.append("the guest did not finish (no BTS-GUEST-END): "
                        "timeout, hang or crash")
    if qemu_status == "timeout":
        failures.append("QEMU was killed by the host timeout")
    elif qemu_status not in ("0", ""):
        failures.append("QEMU exited with status %s" % qemu_status)
    for r in results:
        if not r.ok and r.directive != "TODO":
            failures.append("tap.log:%d: not ok %s" % (r.line, r.desc))
        elif r.directive == "SKIP":
            failures.append("tap.log:%d: SKIP is a failure here: %s"
                            % (r.line, r.desc))
        # A kselftest runner line owns the TAP its program printed: a
        # program that printed none ran no test (or its output was lost).
        if r.desc.startswith("selftests: ") and r.children == 0:
            failures.append("tap.log:%d: %s printed no TAP results"
                            % (r.line, r.desc))
    splats = find_splats(console_lines)
    for kind, no, line in splats:
        failures.append("console.log:%d: %s: %s" % (no, kind, line))
    host_checks = []
    for key, want in expect:
        got = info.get(key, [None])[-1]
        if want.startswith("has:"):
            words = want[4:].split(",")
            ok = got is not None and all(w in got.split() for w in words)
            host_checks.append((ok, "guest %s has %s" % (key, want[4:])))
        else:
            ok = got == want
            host_checks.append((ok, "guest %s is '%s'" % (key, want)))
        if not ok:
            failures.append("host check: guest %s is '%s', expected '%s'"
                            % (key, got, want))
    return failures, leaves, splats, info, host_checks


def read_lines(path):
    """The lines of a log, or none if the run did not write it."""
    try:
        with open(path, errors="replace") as f:
            return f.readlines()
    except FileNotFoundError:
        return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("console")
    ap.add_argument("tap")
    ap.add_argument("--expect", action="append", default=[],
                    metavar="KEY=VALUE",
                    help="assert a BTS-GUEST value; VALUE 'has:a,b' asserts"
                         " that these words are in it")
    ap.add_argument("--qemu-status", default="0",
                    help="QEMU's exit status, or 'timeout'")
    ap.add_argument("--results", help="append PASS/FAIL lines to this file")
    ap.add_argument("--quiet-tap", action="store_true",
                    help="do not echo the TAP log")
    args = ap.parse_args()

    console, tap = read_lines(args.console), read_lines(args.tap)
    expect = [tuple(e.split("=", 1)) for e in args.expect]
    failures, leaves, splats, info, host_checks = judge(
        console, tap, expect, args.qemu_status)

    if not args.quiet_tap:
        print("---- guest TAP (%s) ----" % args.tap)
        for line in tap:
            print(line.rstrip("\r\n"))
    passed = sum(1 for r in leaves if r.ok and r.directive != "SKIP")
    passed += sum(1 for ok, _ in host_checks if ok)
    skipped = sum(1 for r in leaves if r.directive == "SKIP")
    failed = sum(1 for r in leaves if not r.ok) + sum(
        1 for ok, _ in host_checks if not ok)
    print("---- summary ----")
    print("kernel:   %s %s" % (info.get("uname-r", ["?"])[-1],
                               info.get("uname-v", ["?"])[-1]))
    print("cpu:      %s family %s model %s, cpus %s" % (
        info.get("vendor", ["?"])[-1], info.get("family", ["?"])[-1],
        info.get("model", ["?"])[-1], info.get("cpus-online", ["?"])[-1]))
    for ok, what in host_checks:
        print("host:     %s %s" % ("ok    " if ok else "FAILED", what))
    print("tests:    %d passed, %d failed, %d skipped (%d TAP results)" % (
        passed, failed, skipped, len(leaves)))
    print("splats:   %s" % ("none" if not splats else len(splats)))
    for f in failures:
        print("FAIL:     %s" % f)
    print("result:   %s" % ("PASS" if not failures else "FAIL"))
    if args.results:
        with open(args.results, "a") as f:
            for r in leaves:
                good = r.ok and r.directive != "SKIP"
                f.write("%s guest: %s\n" % ("PASS" if good else "FAIL", r.desc))
            for ok, what in host_checks:
                f.write("%s host: %s\n" % ("PASS" if ok else "FAIL", what))
            other = [x for x in failures
                     if not x.startswith(("tap.log:", "host check:"))]
            for x in other:
                f.write("FAIL run: %s\n" % x)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
