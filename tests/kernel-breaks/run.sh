#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Check the kselftests against deliberately broken kernels.
#
# breaks.patch (test-only, never part of the series) adds the boot
# parameter ptrace_bts.brk=MASK to arch/x86/kernel/ptrace_bts.c: bit N
# switches on breakage N (see the BRK(N) sites).  Build the debug kernel
# with the patch applied on top of the series (uncommitted), then run this:
# it boots once per group of breakages and lists the tests that failed.
# A group holds at most one breakage per test program, so each failure can
# be traced to its breakage.
set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BTS_BUILD:-$TOP/build}
LOGS=$BUILD/logs
JOBS=$(nproc)
BRANCH=ptrace-bts
KPKG=linux-source-6.12
. "$TOP/scripts/lib/common.sh"
. "$TOP/scripts/lib/tree.sh"
. "$TOP/scripts/lib/kernel.sh"
. "$TOP/scripts/lib/qemu.sh"
. "$TOP/scripts/lib/guest.sh"

# name:bits (bit numbers as in breaks.patch)
GROUPS_DEFAULT="g1:0,5,14,15,19,8,9 g2:1,6,16,20,21,22,26,10 g3:2,17,27,28,29,12 g4:3,18,30,31,32,33,13 g5:4 g6:11,23 g7:24,25 g8:7"
out=$BUILD/breaks
mkdir -p "$out"
for g in ${BTS_BREAK_GROUPS:-$GROUPS_DEFAULT}; do
	name=${g%%:*}
	mask=0
	bits=${g#*:}
	for b in ${bits//,/ }; do
		[ -n "$b" ] && mask=$((mask | (1 << b)))
	done
	echo "== $name: breaks ${g#*:} (mask $mask)"
	boot_guest debug "$out/$name" "ptrace_bts.brk=$mask" >"$out/$name.boot" 2>&1
	python3 "$TOP/scripts/lib/judge.py" "$out/$name/console.log" "$out/$name/tap.log" \
		--qemu-status "$(cat "$out/$name/qemu-status")" >"$out/$name.judge" 2>&1 || true
	grep -E '^(FAIL|result)' "$out/$name.judge" | sed 's/^/   /'
done
