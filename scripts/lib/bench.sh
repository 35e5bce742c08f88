# SPDX-License-Identifier: GPL-2.0
# scripts/bts bench: the cost of our QEMU's BTS emulation, measured side by
# side in one run. The same kernel and initramfs boot under stock QEMU 7.2
# (same source and configure line, no patches) and under ours; the guest
# times a branchy loop (tests/qemu-bts/bench/bts_bench.cpp) with BTS off
# and, under ours, with BTS on (circular buffer, no PMI).

BENCH_REPS=${BTS_BENCH_REPS:-7}
BENCH_N_OFF=${BTS_BENCH_N_OFF:-20000000}
BENCH_N_ON=${BTS_BENCH_N_ON:-500000}
BENCH_ROUNDS=${BTS_BENCH_ROUNDS:-2}

bench_boot() {
	local flav=$1 variant=$2 dir=$BUILD/bench/$2-$3 qemu args
	if [ "$variant" = stock ]; then
		qemu=$(cat "$BUILD/qemu-bin-stock")
		args="$BENCH_REPS,$BENCH_N_OFF"
	else
		qemu=$(qemu_bin)
		args="$BENCH_REPS,$BENCH_N_OFF,$BENCH_N_ON"
	fi
	# Stock QEMU rejects our CPU properties: boot it with the plain model.
	if [ "$variant" = stock ]; then
		qemu_cpu_props() { :; }
	fi
	boot_guest "$flav" "$dir" "bts_bench=$args" "$qemu"
	grep -q '^BTS-GUEST-END' "$dir/tap.log" ||
		{ echo "the $variant guest did not finish"; return 1; }
	grep '^BTS-BENCH' "$dir/tap.log"
}

bench_report() {
	python3 - "$BUILD/bench" <<'EOF'
import glob
import statistics
import sys


def per_iter(variant, mode):
    vals = []
    for path in sorted(glob.glob("%s/%s-*/tap.log" % (sys.argv[1], variant))):
        for line in open(path):
            f = line.split()
            if len(f) >= 4 and f[0] == "BTS-BENCH" and f[1] == mode:
                vals.append(int(f[3]) / int(f[2]))
    if not vals:
        sys.exit("no '%s' measurement for %s" % (mode, variant))
    return vals


rows = [("stock QEMU 7.2", per_iter("stock", "off")),
        ("ours, BTS off", per_iter("ours", "off")),
        ("ours, BTS on (circular)", per_iter("ours", "on"))]
print("branchy loop, guest RDTSC ticks per iteration")
print("  %-26s %9s %9s %9s  %s" % ("", "min", "median", "max", "runs"))
for name, v in rows:
    print("  %-26s %9.1f %9.1f %9.1f  %d" % (name, min(v), statistics.median(v), max(v), len(v)))
s, o, n = (r[1] for r in rows)
print("ratios (min / min, then median / median)")
print("  ours BTS off / stock         %6.3f  %6.3f  (target <= 1.02)" % (min(o) / min(s), statistics.median(o) / statistics.median(s)))
print("  ours BTS on  / ours BTS off  %6.1f  %6.1f" % (min(n) / min(o), statistics.median(n) / statistics.median(o)))
EOF
}

do_bench() {
	local flav=${1:-debug}
	check_flavour "$flav"
	do_build "$flav"
	do_qemu
	step qemu-stock build_qemu stock
	step "initramfs-$flav" make_initramfs "$flav"
	rm -rf "$BUILD/bench"
	local r
	# Alternate the emulators so that a slow phase of the host hits both.
	for r in $(seq 1 "$BENCH_ROUNDS"); do
		step "bench-stock-$r" bench_boot "$flav" stock "$r"
		step "bench-ours-$r" bench_boot "$flav" ours "$r"
	done
	bench_report | tee "$BUILD/bench/report.txt"
}
