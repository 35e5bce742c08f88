# SPDX-License-Identifier: GPL-2.0
# scripts/bts bench: the cost of our QEMU's BTS emulation, measured side by
# side in one run. The same kernel and initramfs boot under stock QEMU 7.2
# (same source and configure line, no patches) and under ours; the guest
# times a branchy loop (tests/qemu-bts/bench/bts_bench.cpp) with BTS off
# and, under ours, with BTS on (circular buffer, no PMI).

BENCH_REPS=${BTS_BENCH_REPS:-5}
BENCH_N_OFF=${BTS_BENCH_N_OFF:-20000000}
BENCH_N_ON=${BTS_BENCH_N_ON:-2000000}

bench_boot() {
	local flav=$1 variant=$2 dir=$BUILD/bench/$2 qemu args
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
	python3 - "$BUILD/bench/stock/tap.log" "$BUILD/bench/ours/tap.log" <<'EOF'
import statistics
import sys


def ns_per_iter(path, mode):
    vals = []
    for line in open(path):
        f = line.split()
        if len(f) >= 4 and f[0] == "BTS-BENCH" and f[1] == mode:
            vals.append(int(f[3]) / int(f[2]))
    if not vals:
        sys.exit("no '%s' measurement in %s" % (mode, path))
    return statistics.median(vals), vals


stock, s_all = ns_per_iter(sys.argv[1], "off")
off, o_all = ns_per_iter(sys.argv[2], "off")
on, n_all = ns_per_iter(sys.argv[2], "on")
print("branchy loop, median ns per iteration (each: %d runs)" % len(s_all))
print("  stock QEMU 7.2               %8.2f  (%s)" % (stock, " ".join("%.2f" % v for v in s_all)))
print("  ours, BTS off                %8.2f  (%s)" % (off, " ".join("%.2f" % v for v in o_all)))
print("  ours, BTS on (circular)      %8.2f  (%s)" % (on, " ".join("%.2f" % v for v in n_all)))
print("ratios")
print("  ours BTS off / stock         %8.3f  (target <= 1.02)" % (off / stock))
print("  ours BTS on  / ours BTS off  %8.2f" % (on / off))
EOF
}

do_bench() {
	local flav=${1:-debug}
	check_flavour "$flav"
	do_build "$flav"
	do_qemu
	step qemu-stock build_qemu stock
	step "initramfs-$flav" make_initramfs "$flav"
	step bench-stock bench_boot "$flav" stock
	step bench-ours bench_boot "$flav" ours
	bench_report | tee "$BUILD/bench/report.txt"
}
