# SPDX-License-Identifier: GPL-2.0
# 'scripts/bts breaks': run the kselftests against deliberately broken
# kernels, to show that each test fails when the behaviour it checks breaks.
#
# tests/kernel-breaks/breaks.patch (test-only, never part of the series)
# adds the writable parameter ptrace_bts.brk: bit N switches on breakage N,
# listed in breaks.list.  The kernel is built once with the patch; the guest
# then runs every kselftest program once per breakage (guest/init,
# bts_breaks=).  Breakages marked 'alone' get a boot of their own.

BREAKS=$TOP/tests/kernel-breaks

# Build the debug kernel with breaks.patch into DIR/bzImage, then build it
# back without the patch so that the object tree matches the series again.
build_broken_kernel() {
	local obj=$1 dir=$2 rc=0
	local -a files
	mapfile -t files < <(git apply --numstat "$BREAKS/breaks.patch" | cut -f3)
	kgit diff --quiet HEAD -- "${files[@]}" ||
		die "$KTREE has uncommitted changes in the files breaks.patch changes"
	# touch: make must rebuild these files both ways, whatever the
	# timestamps an earlier build left
	kgit apply "$BREAKS/breaks.patch"
	(cd "$KTREE" && touch "${files[@]}")
	ccache_env
	kmake "$obj" bzImage || rc=$?
	[ $rc -ne 0 ] || cp "$obj/arch/x86/boot/bzImage" "$dir/bzImage"
	kgit apply -R "$BREAKS/breaks.patch"
	(cd "$KTREE" && touch "${files[@]}")
	kmake "$obj" bzImage
	return $rc
}

# break_numbers [alone|shared]: the breakages of breaks.list
break_numbers() {
	awk -F'\t' -v kind="$1" '/^[0-9]/ {
		if ((kind == "alone") == ($3 == "alone")) print $1 }' "$BREAKS/breaks.list"
}

breaks_boot() {
	local dir=$1 list=$2 n
	n=$(tr , '\n' <<<"$list" | grep -c .)
	BOOT_KERNEL=${dir%/*}/bzImage BOOT_TIMEOUT=$((300 + n * 900)) \
		boot_guest debug "$dir" "bts_breaks=$list oops=panic"
}

do_breaks() {
	local out=$BUILD/breaks b main="none" complete=--complete
	[ $# -eq 0 ] || out=$BUILD/breaks-partial
	local -a want alone=() boots=()
	if [ $# -gt 0 ]; then
		want=("$@")
		complete=
	else
		mapfile -t want < <(break_numbers shared; break_numbers alone)
	fi
	for b in "${want[@]}"; do
		grep -q "^$b	" "$BREAKS/breaks.list" || die "no breakage '$b' in breaks.list"
		if break_numbers alone | grep -qx "$b"; then
			alone+=("$b")
		else
			main+=",$b"
		fi
	done
	# unbroken again at the end, if anything was broken in between
	[ "$main" = none ] || main+=",none"
	do_build debug
	do_qemu
	rm -rf "$out"
	mkdir -p "$out"
	step breaks-kernel build_broken_kernel "$(kobj debug)" "$out"
	step initramfs-debug make_initramfs debug
	step breaks-boot-main breaks_boot "$out/main" "$main"
	boots+=("$out/main")
	for b in "${alone[@]}"; do
		step "breaks-boot-$b" breaks_boot "$out/alone-$b" "$b"
		boots+=("$out/alone-$b")
	done
	echo "==> breaks: matrix in $out/matrix.txt"
	local IFS=,
	python3 "$TOP/scripts/lib/breaks.py" --list "$BREAKS/breaks.list" \
		--unbreakable "$BREAKS/unbreakable" --want "${want[*]}" $complete \
		"${boots[@]}" >"$out/matrix.txt" || {
		grep -E '^(FAIL|result)' "$out/matrix.txt"
		return 1
	}
	grep -E '^result' "$out/matrix.txt"
}
