# SPDX-License-Identifier: GPL-2.0
# The guest: an initramfs with busybox, the installed selftests and the
# project's guest checks; boot it in QEMU TCG and judge both serial logs.

# Intel family 6 model (Penryn: Core 2, model 23). Every feature of this
# model is one TCG implements, and it is not one of the Nehalem..Ivy Bridge
# parts with the BTS 'from' erratum (AAJ122).
GUEST_CPU=${BTS_CPU:-Penryn}
GUEST_SMP=2
# SeaBIOS lists one MP-table entry per package, and QEMU 7.2 makes -smp 2
# one package of two cores: ask for two sockets so our ACPI-less kernel
# finds both CPUs.
GUEST_TOPOLOGY="sockets=$GUEST_SMP,cores=1,threads=1"
GUEST_MEM=2G
BOOT_TIMEOUT=${BTS_TIMEOUT:-1500}

# Copy an ELF file's shared libraries (as the host's loader resolves them)
# into the initramfs root, at the same paths.  A static program has none
# (ldd fails on it).
copy_libs() {
	local root=$1 elf=$2 lib
	{ ldd "$elf" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

make_initramfs() {
	local flav=$1 root f out
	root=$BUILD/initramfs-$flav
	out=$BUILD/initramfs-$flav.cpio
	rm -rf "$root"
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,bts-tests}
	cp /bin/busybox "$root/bin/busybox"
	install -m 755 "$TOP/guest/init" "$root/init"
	install -m 755 "$TOP/guest/timeout" "$root/usr/bin/timeout"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' \
		>"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	if [ -d "$BUILD/guest-tests-$flav" ]; then
		cp -a "$BUILD/guest-tests-$flav/." "$root/bts-tests/"
	fi
	if [ -d "$BUILD/guest-bench-$flav" ]; then
		cp -a "$BUILD/guest-bench-$flav" "$root/bts-bench"
	fi
	if [ -x "$BUILD/kselftest-$KIND$flav/run_kselftest.sh" ]; then
		cp -a "$BUILD/kselftest-$KIND$flav" "$root/kselftest"
	fi
	# Shared libraries of every dynamically linked program we ship.
	while IFS= read -r -d '' f; do
		head -c 4 "$f" | grep -q 'ELF' || continue
		copy_libs "$root" "$f"
	done < <(find "$root/bts-tests" "$root/bts-bench" "$root/kselftest" -type f -perm -u+x -print0 2>/dev/null)
	(cd "$root" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) >"$out"
	echo "initramfs $out: $(du -h "$out" | cut -f1)"
}

# BTS_QEMU=/path/to/qemu-system-x86_64 boots with another build (for
# checking the tests against a deliberately broken emulator).
qemu_bin() { if [ -n "${BTS_QEMU:-}" ]; then echo "$BTS_QEMU"; else cat "$BUILD/qemu-bin"; fi; }

# Boot once; leaves console.log, tap.log and qemu-status in $BUILD/guest-$flav
# (or DIR). EXTRA is appended to the kernel command line, QEMU overrides
# the emulator, $BOOT_KERNEL (if set) the kernel image.
boot_guest() {
	local flav=$1 dir=${2:-$BUILD/guest-$1} extra=${3:-} qemu=${4:-} obj rc
	obj=$(kobj "$flav")
	[ -n "$qemu" ] || qemu=$(qemu_bin)
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "qemu: $qemu"
	echo "timeout: ${BOOT_TIMEOUT}s"
	set +e
	timeout -k 10 "$BOOT_TIMEOUT" "$qemu" \
		-nodefaults -no-user-config -machine pc -accel tcg \
		-cpu "$GUEST_CPU$(qemu_cpu_props)" -smp "$GUEST_SMP,$GUEST_TOPOLOGY" -m "$GUEST_MEM" \
		-kernel "${BOOT_KERNEL:-$obj/arch/x86/boot/bzImage}" \
		-initrd "$BUILD/initramfs-$flav.cpio" \
		-append "console=ttyS0,115200 rdinit=/init pti=on panic=-1 kmemleak=on $extra" \
		-display none -no-reboot -monitor none \
		-serial "file:$dir/console.log" -serial "file:$dir/tap.log"
	rc=$?
	set -e
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo timeout >"$dir/qemu-status"
	else
		echo $rc >"$dir/qemu-status"
	fi
	echo "qemu exit: $(cat "$dir/qemu-status")"
	tail -n 5 "$dir/console.log"
	return 0
}

judge_guest() {
	local flav=$1 obj dir
	shift
	obj=$(kobj "$flav")
	dir=$BUILD/guest-$flav
	python3 "$TOP/scripts/lib/judge.py" "$dir/console.log" "$dir/tap.log" \
		--qemu-status "$(cat "$dir/qemu-status")" \
		--expect "uname-r=$(cat "$obj/bts-release")" \
		--expect "uname-v=$(cat "$obj/bts-version")" \
		--expect "cpus-online=0-$((GUEST_SMP - 1))" \
		--expect "vendor=GenuineIntel" \
		--expect "family=6" \
		--expect "flags=has:bts,dtes64,ds_cpl,arch_perfmon" \
		--expect "kmemleak=$([ "$flav" = debug ] && echo on || echo off)" \
		${RESULTS:+--results "$RESULTS"} "$@"
}

do_boot() {
	local flav=$1
	check_flavour "$flav"
	step "initramfs-$flav" make_initramfs "$flav"
	step "boot-$flav" boot_guest "$flav"
	echo "==> judge-$flav (console: $BUILD/guest-$flav/console.log)"
	judge_guest "$flav"
}

do_run() {
	local flav=$1
	check_flavour "$flav"
	do_build "$flav"
	do_qemu
	do_boot "$flav"
}

# The project's guest checks (QEMU BTS validation): C++ programs from
# tests/qemu-bts and the test-only module, built against this kernel.
build_guest_tests() {
	local flav=$1 obj out kmod bench src
	obj=$(kobj "$flav")
	out=$BUILD/guest-tests-$flav
	kmod=$BUILD/kmod-$flav
	bench=$BUILD/guest-bench-$flav
	rm -rf "$out" "$kmod" "$bench"
	mkdir -p "$out" "$bench"
	ccache_env
	for src in "$TOP"/tests/qemu-bts/*.cpp; do
		[ -f "$src" ] || continue
		ccache g++ -std=gnu++17 -O2 -g -Wall -Wextra -Werror \
			-I"$TOP/tests/qemu-bts" -o "$out/$(basename "$src" .cpp)" "$src"
	done
	cp -a "$TOP/tests/qemu-bts/kmod" "$kmod"
	kmake "$obj" M="$kmod" W=1 modules
	install -m 644 "$kmod/bts_emu_test.ko" "$out/"
	ccache g++ -std=gnu++17 -O2 -Wall -Wextra -Werror \
		-o "$bench/bts_bench" "$TOP/tests/qemu-bts/bench/bts_bench.cpp"
	install -m 644 "$kmod/bts_emu_test.ko" "$bench/"
	ls -l "$out" "$bench"
}
