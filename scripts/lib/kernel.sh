# SPDX-License-Identifier: GPL-2.0
# Kernel and selftest builds: allnoconfig plus the fragments in config/.

check_flavour() {
	case "$1" in
		run|debug) ;;
		*) die "unknown flavour '$1' (run or debug)" ;;
	esac
}

kobj() { printf '%s\n' "$BUILD/kbuild-$KIND$1"; }

fragments() {
	printf '%s\n' "$TOP/config/base.config" "$TOP/config/bts.config"
	[ "$1" = debug ] && printf '%s\n' "$TOP/config/debug.config"
	return 0
}

# kmake_in TREE OBJ ARGS...: make in kernel tree TREE with output in OBJ
kmake_in() {
	local tree=$1 obj=$2
	shift 2
	make -C "$tree" O="$obj" CC="$TOP/scripts/lib/kcc" HOSTCC="ccache gcc" \
		KBUILD_BUILD_USER=bts KBUILD_BUILD_HOST=ptrace-bts \
		-j"$JOBS" "$@"
}

kmake() { kmake_in "$KTREE" "$@"; }

# Every line of every fragment must survive olddefconfig: a dependency we
# missed must fail the build, not silently drop an option.
check_config() {
	local config=$1 frag line key val bad=0
	shift
	for frag in "$@"; do
		while IFS= read -r line; do
			case "$line" in CONFIG_*=*) ;; *) continue ;; esac
			key=${line%%=*}
			val=${line#*=}
			if [ "$val" = n ]; then
				if grep -q "^$key=" "$config"; then
					echo "${frag##*/}: $key should be unset, is $(grep "^$key=" "$config")"
					bad=1
				fi
			elif ! grep -qxF "$line" "$config"; then
				echo "${frag##*/}: wanted $line, got: $(grep "^$key=\|^# $key is not set" "$config" || echo absent)"
				bad=1
			fi
		done <"$frag"
	done
	return $bad
}

make_config() {
	local flav=$1 obj scratch
	local -a frags
	obj=$(kobj "$flav")
	scratch=$BUILD/kconfig-$flav
	mapfile -t frags < <(fragments "$flav")
	mkdir -p "$obj" "$scratch"
	kmake "$scratch" allnoconfig
	(cd "$KTREE" && scripts/kconfig/merge_config.sh -m -O "$scratch" \
		"$scratch/.config" "${frags[@]}")
	kmake "$scratch" olddefconfig
	check_config "$scratch/.config" "${frags[@]}"
	if ! cmp -s "$scratch/.config" "$obj/.config"; then
		cp "$scratch/.config" "$obj/.config"
		echo "new .config for $flav"
	fi
}

build_kernel() {
	local obj
	obj=$(kobj "$1")
	ccache_env
	kmake "$obj" bzImage modules
	kmake "$obj" -s kernelrelease >"$obj/bts-release"
	sed -n 's/^#define UTS_VERSION "\(.*\)"$/\1/p' \
		"$obj/include/generated/utsversion.h" >"$obj/bts-version"
	echo "built $(cat "$obj/bts-release") $(cat "$obj/bts-version")"
	ccache -s | grep -Ei 'hits|misses' || true
}

# Selftest collections of the series: every selftests directory that the
# series adds a Makefile to.
selftest_targets() {
	kgit diff --name-only --diff-filter=A "$(kbase)" "refs/heads/$BRANCH" -- \
		tools/testing/selftests |
		sed -n 's|^tools/testing/selftests/\(.*\)/Makefile$|\1|p'
}

build_selftests() {
	local flav=$1 obj inst targets
	obj=$(kobj "$flav")
	inst=$BUILD/kselftest-$KIND$flav
	targets=$(selftest_targets | tr '\n' ' ')
	rm -rf "$inst"
	mkdir -p "$inst"
	if [ -z "${targets// /}" ]; then
		echo "the series adds no selftests yet"
		return 0
	fi
	kmake "$obj" headers
	make -C "$KTREE/tools/testing/selftests" O="$BUILD/kselftest-obj-$KIND$flav" \
		TARGETS="$targets" KHDR_INCLUDES="-isystem $obj/usr/include" \
		INSTALL_PATH="$inst" -j"$JOBS" install
	# Without g++-multilib the Makefile leaves out the 32-bit (compat)
	# programs with only a warning; here they are required.
	if [ -f "$KTREE/tools/testing/selftests/ptrace_bts/Makefile" ] &&
		grep -q '_32' "$KTREE/tools/testing/selftests/ptrace_bts/Makefile" &&
		[ ! -x "$inst/ptrace_bts/bts_trace_32" ]; then
		die "the 32-bit ptrace_bts selftests were not built: is g++-multilib installed?"
	fi
	echo "installed selftests for: $targets"
}

do_build() {
	local flav=$1
	check_flavour "$flav"
	do_tree
	step "config-$flav" make_config "$flav"
	step "kernel-$flav" build_kernel "$flav"
	step "selftests-$flav" build_selftests "$flav"
	step "guest-tests-$flav" build_guest_tests "$flav"
}
