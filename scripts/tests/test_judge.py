#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/lib/judge.py on recorded guest logs.

logs/clean/ is a real guest run (console and TAP channel) of the debug
kernel; logs/kselftest-*.tap are TAP as the stock kselftest runner prints
it. Each failing case takes a clean log and changes one thing the way a
broken kernel or test would: the judge must pass the clean run and fail
every other one, for the right reason.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import judge  # noqa: E402

LOGS = os.path.join(HERE, "logs")


def lines(name):
    with open(os.path.join(LOGS, name), errors="replace") as f:
        return f.readlines()


def clean_expect(tap):
    """Expectations the host passes for the recorded clean run."""
    _, _, _, info = judge.parse_tap(tap)
    return [(k, info[k][-1]) for k in ("uname-r", "uname-v", "cpus-online",
                                       "vendor", "family", "kmemleak")]


def splice(console, text):
    """Insert a splat into a recorded console log just before its end."""
    extra = [l + "\n" for l in text.strip("\n").split("\n")]
    return console[:-3] + extra + console[-3:]


class Base(unittest.TestCase):
    def setUp(self):
        self.console = lines("clean/console.log")
        self.tap = lines("clean/tap.log")
        self.expect = clean_expect(self.tap)

    def run_judge(self, console=None, tap=None, expect=None, status="0"):
        return judge.judge(self.console if console is None else console,
                           self.tap if tap is None else tap,
                           self.expect if expect is None else expect,
                           status)

    def assertFailsWith(self, failures, needle):
        self.assertTrue(failures, "the judge passed a broken run")
        self.assertTrue(any(needle in f for f in failures),
                        "no failure mentions %r: %r" % (needle, failures))


class CleanRun(Base):
    def test_clean_run_passes(self):
        failures, leaves, splats, _, checks = self.run_judge()
        self.assertEqual(failures, [])
        self.assertEqual(splats, [])
        self.assertTrue(leaves, "the clean run has TAP results")
        self.assertTrue(all(ok for ok, _ in checks))


class TapResults(Base):
    def kselftest(self, name):
        return self.tap[:-1] + lines(name) + self.tap[-1:]

    def test_kselftest_pass_counts_leaves(self):
        failures, leaves, _, _, _ = self.run_judge(
            tap=self.kselftest("kselftest-pass.tap"))
        self.assertEqual(failures, [])
        # 3 harness subtests inside one runner result: the leaves are the 3
        descs = [r.desc for r in leaves]
        self.assertIn("global.one", descs)
        self.assertNotIn("selftests: ptrace_bts: bts_test", descs)

    def test_fail(self):
        failures, _, _, _, _ = self.run_judge(
            tap=self.kselftest("kselftest-fail.tap"))
        self.assertFailsWith(failures, "not ok global.two")

    def test_skip_is_failure(self):
        failures, _, _, _, _ = self.run_judge(
            tap=self.kselftest("kselftest-skip.tap"))
        self.assertFailsWith(failures, "SKIP is a failure")

    def test_runner_timeout(self):
        failures, _, _, _, _ = self.run_judge(
            tap=self.kselftest("kselftest-timeout.tap"))
        self.assertFailsWith(failures, "TIMEOUT")

    def test_kselftest_without_output(self):
        tap = self.tap[:-1] + ["TAP version 13\n", "1..1\n",
                               "# selftests: ptrace_bts: bts_trace\n",
                               "ok 1 selftests: ptrace_bts: bts_trace\n"] + self.tap[-1:]
        failures, _, _, _, _ = self.run_judge(tap=tap)
        self.assertFailsWith(failures, "printed no TAP results")

    def test_bail_out(self):
        tap = self.tap[:-1] + ["TAP version 13\n", "1..8\n",
                               "not ok 1 perf_event_open\n",
                               "Bail out! no perf BTS sampling\n"] + self.tap[-1:]
        failures, _, _, _, _ = self.run_judge(tap=tap)
        self.assertFailsWith(failures, "Bail out! no perf BTS sampling")
        self.assertFailsWith(failures, "planned 8 results, printed 1")

    def test_truncated_plan(self):
        failures, _, _, _, _ = self.run_judge(
            tap=self.kselftest("kselftest-truncated.tap"))
        self.assertFailsWith(failures, "planned 3 results, printed 2")


class GuestEnd(Base):
    def test_timeout_without_end_marker(self):
        tap = [l for l in self.tap if l.strip() != "BTS-GUEST-END"]
        failures, _, _, _, _ = self.run_judge(tap=tap, status="timeout")
        self.assertFailsWith(failures, "no BTS-GUEST-END")
        self.assertFailsWith(failures, "host timeout")

    def test_no_guest_output_at_all(self):
        failures, _, _, _, _ = self.run_judge(tap=[], status="0")
        self.assertFailsWith(failures, "never started")

    def test_qemu_error_status(self):
        failures, _, _, _, _ = self.run_judge(status="1")
        self.assertFailsWith(failures, "QEMU exited with status 1")


class HostChecks(Base):
    def test_wrong_kernel_booted(self):
        expect = [(k, v + "-other" if k == "uname-r" else v)
                  for k, v in self.expect]
        failures, _, _, _, checks = self.run_judge(expect=expect)
        self.assertFailsWith(failures, "host check: guest uname-r")
        self.assertFalse(all(ok for ok, _ in checks))

    def test_missing_cpu_flag(self):
        failures, _, _, _, _ = self.run_judge(
            expect=self.expect + [("flags", "has:fpu,no_such_flag")])
        self.assertFailsWith(failures, "host check: guest flags")

    def test_present_cpu_flags(self):
        failures, _, _, _, _ = self.run_judge(
            expect=self.expect + [("flags", "has:fpu,lm")])
        self.assertEqual(failures, [])


class Splats(Base):
    def check(self, fixture, kind):
        console = splice(self.console, "".join(lines(fixture)))
        failures, _, splats, _, _ = self.run_judge(console=console)
        self.assertFailsWith(failures, "console.log:")
        self.assertIn(kind, [k for k, _, _ in splats])
        return splats

    def test_kasan(self):
        self.check("splat-kasan.txt", "KASAN")

    def test_ubsan(self):
        self.check("splat-ubsan.txt", "UBSAN")

    def test_lockdep(self):
        self.check("splat-lockdep.txt", "lockdep")

    def test_atomic_sleep(self):
        self.check("splat-atomic-sleep.txt", "atomic-sleep")

    def test_bug(self):
        self.check("splat-bug.txt", "BUG")

    def test_warning(self):
        self.check("splat-warning.txt", "WARNING")

    def test_oops(self):
        self.check("splat-oops.txt", "Oops")

    def test_kmemleak(self):
        self.check("splat-kmemleak.txt", "kmemleak")

    def test_unknown_nmi(self):
        self.check("splat-unknown-nmi.txt", "unknown-NMI")

    def test_list_corruption(self):
        self.check("splat-list.txt", "list-corruption")

    def test_boot_messages_are_not_splats(self):
        # The recorded boot says 'kasan: KernelAddressSanitizer initialized'
        # and 'kmemleak: Kernel memory leak detector initialized'.
        text = "".join(self.console)
        self.assertIn("KernelAddressSanitizer initialized", text)
        self.assertEqual(judge.find_splats(self.console), [])


if __name__ == "__main__":
    unittest.main()
