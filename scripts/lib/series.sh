# SPDX-License-Identifier: GPL-2.0
# The series as mails in patches/, the exported mirrors, and the checks on
# both: export, verify, lint (checkpatch), bisect, and 'test'.

# Kernel path prefix -> mirror directory. Only files the series adds are
# mirrored, at their path below the prefix.
MIRRORS=(
	"arch/x86/kernel/:arch-x86-kernel/"
	"arch/x86/include/uapi/:include-uapi/"
	"include/uapi/:include-uapi/"
	"tools/testing/selftests/:selftests/"
	"Documentation/:Documentation/"
)
MIRROR_DIRS=(arch-x86-kernel include-uapi selftests Documentation)

# mirror_path KERNEL_PATH: the mirror file for a kernel path, or nothing.
mirror_path() {
	local m
	for m in "${MIRRORS[@]}"; do
		case "$1" in
			"${m%%:*}"*) printf '%s%s\n' "${m#*:}" "${1#"${m%%:*}"}"; return 0 ;;
		esac
	done
}

# The MAINTAINERS lines the series adds, from a tree-ish pair.
maintainers_snippet() {
	local from=$1 to=$2
	git -C "$KTREE" diff --no-color -U0 "$from" "$to" -- MAINTAINERS |
		sed -n 's/^+\([^+]\)/\1/p; s/^+$//p'
}

export_series() {
	local base head n f tmp m
	base=$(kbase)
	head=$(kgit rev-parse "refs/heads/$BRANCH")
	n=$(kgit rev-list --count "$base..$head")
	tmp=$BUILD/export.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	if [ "$n" -gt 0 ]; then
		kgit format-patch -q --cover-letter --base="$base" \
			--subject-prefix="RFC PATCH" -o "$tmp" "$base..$head"
		# The cover letter's text lives in the repo (patches/cover-letter.txt
		# is its source); keep format-patch's shortlog and diffstat.
		if [ -f "$TOP/patches/cover-letter.txt" ]; then
			python3 "$TOP/scripts/lib/cover.py" "$TOP/patches/cover-letter.txt" \
				"$tmp"/0000-cover-letter.patch
		fi
	fi
	find "$TOP/patches" -maxdepth 1 -name '*.patch' -delete 2>/dev/null || true
	mkdir -p "$TOP/patches"
	: >"$TOP/patches/series"
	for f in "$tmp"/*.patch; do
		[ -f "$f" ] || continue
		mv "$f" "$TOP/patches/"
		# The cover letter is no patch: git am must not see it.
		case "${f##*/}" in 0000-*) continue ;; esac
		echo "${f##*/}" >>"$TOP/patches/series"
	done
	# Mirrors: exactly the files the series adds.
	for m in "${MIRROR_DIRS[@]}"; do rm -rf "${TOP:?}/$m"; done
	kgit diff --name-only --diff-filter=A "$base" "$head" | while read -r f; do
		m=$(mirror_path "$f")
		[ -n "$m" ] || continue
		mkdir -p "$TOP/$(dirname "$m")"
		kgit show "$head:$f" >"$TOP/$m"
		[ -x "$KTREE/$f" ] && chmod +x "$TOP/$m"
		echo "mirror $m"
	done
	maintainers_snippet "$base" "$head" >"$TOP/MAINTAINERS-snippet"
	[ -s "$TOP/MAINTAINERS-snippet" ] || rm -f "$TOP/MAINTAINERS-snippet"
	mkdir -p "$STATE"
	series_hash >"$STATE/patches-hash"
	echo "$head" >"$STATE/applied-head"
	echo "exported $n patches to patches/"
}

do_export() {
	do_deps
	[ -d "$KTREE/.git" ] || [ -f "$KTREE/.git" ] || die "no kernel tree: run 'scripts/bts tree' first"
	step export export_series
	step verify verify_series
}

# Apply patches/ to the base in a scratch index (no checkout) and compare
# the resulting tree with every mirror, both ways.
verify_series() {
	local idx tree p f m bad=0 listed
	idx=$BUILD/verify.index
	rm -f "$idx"
	GIT_INDEX_FILE=$idx kgit read-tree "$(kbase)"
	while read -r p; do
		[ -n "$p" ] || continue
		GIT_INDEX_FILE=$idx kgit apply --cached "$p" ||
			{ echo "patches/${p##*/} does not apply"; return 1; }
	done < <(series_files)
	# Every patch file must be in series, or be the cover letter.
	for p in "$TOP"/patches/*.patch; do
		[ -f "$p" ] || continue
		case "${p##*/}" in 0000-cover-letter.patch) continue ;; esac
		grep -qxF "${p##*/}" "$TOP/patches/series" ||
			{ echo "patches/${p##*/} is not listed in patches/series"; bad=1; }
	done
	tree=$(GIT_INDEX_FILE=$idx kgit write-tree)
	rm -f "$idx"
	listed=$BUILD/verify.expected
	: >"$listed"
	while read -r f; do
		m=$(mirror_path "$f")
		[ -n "$m" ] || continue
		echo "$m" >>"$listed"
		if [ ! -f "$TOP/$m" ]; then
			echo "MISSING mirror $m (the series adds $f)"
			bad=1
		elif ! kgit cat-file blob "$tree:$f" | cmp -s - "$TOP/$m"; then
			echo "MISMATCH $m differs from $f as the series adds it"
			bad=1
		fi
	done < <(kgit diff --name-only --diff-filter=A "$(kbase)" "$tree")
	for m in "${MIRROR_DIRS[@]}"; do
		[ -d "$TOP/$m" ] || continue
		(cd "$TOP" && find "$m" -type f) | while read -r f; do
			grep -qxF "$f" "$listed" ||
				{ echo "EXTRA mirror $f: the series does not add it"; exit 1; }
		done || bad=1
	done
	if ! diff -u <(maintainers_snippet "$(kbase)" "$tree") \
		<(cat "$TOP/MAINTAINERS-snippet" 2>/dev/null); then
		echo "MISMATCH MAINTAINERS-snippet differs from the series' MAINTAINERS hunk"
		bad=1
	fi
	[ $bad -eq 0 ] && echo "patches/ reproduces every mirror ($(wc -l <"$listed") files)"
	return $bad
}

do_verify() {
	do_tree
	step verify verify_series
}

checkpatch_series() {
	local p out n=0 bad=0
	while read -r p; do
		[ -n "$p" ] || continue
		n=$((n + 1))
		out=$(cd "$KTREE" && perl scripts/checkpatch.pl --strict "$p" 2>&1) || true
		printf '%s\n' "$out" | sed 's/^/    /'
		if printf '%s\n' "$out" | grep -q '^total: 0 errors, 0 warnings, 0 checks'; then
			record PASS "checkpatch --strict ${p##*/}"
		else
			record FAIL "checkpatch --strict ${p##*/}"
			bad=1
		fi
	done < <(series_files)
	echo "$n patches checked"
	return $bad
}

record() {
	[ -n "${RESULTS:-}" ] && echo "$1 $2" >>"$RESULTS"
	echo "$1 $2"
}

# Build every commit of the series on its own, in a separate worktree, with
# the debug configuration (the one 'test' already built: ccache hits).
bisect_series() {
	local wt obj c n=0 bad=0 flav=debug
	wt=$BUILD/bisect/linux
	obj=$BUILD/bisect/kbuild-$flav
	if [ ! -e "$wt/.git" ]; then
		rm -rf "$wt"
		kgit worktree prune
		kgit worktree add -q --detach "$wt" "$(kbase)"
	fi
	mkdir -p "$obj"
	ccache_env
	for c in $(kgit rev-list --reverse "$(kbase)..refs/heads/$BRANCH"); do
		n=$((n + 1))
		git -C "$wt" checkout -q --detach "$c"
		# olddefconfig drops symbols an early commit lacks: start afresh
		cp "$(kobj "$flav")/.config" "$obj/.config"
		echo "== $(git -C "$wt" log -1 --oneline)"
		if kmake_in "$wt" "$obj" olddefconfig bzImage modules; then
			record PASS "builds on its own: $(git -C "$wt" log -1 --format=%s)"
		else
			record FAIL "builds on its own: $(git -C "$wt" log -1 --format=%s)"
			bad=1
		fi
	done
	echo "$n commits built"
	return $bad
}

# sparse (C=2) and W=1 on every kernel C file the series changes, at the
# base and at the series' head, in the bisect worktree: the series must not
# add a warning.  Messages are compared without line numbers.
static_check_series() {
	local wt obj rev c f n out bad=0
	local -a files objs
	wt=$BUILD/bisect/linux
	obj=$BUILD/bisect/kbuild-debug
	[ -e "$wt/.git" ] || die "run bisect first: it prepares $wt"
	mapfile -t files < <(kgit diff --name-only "$(kbase)" "refs/heads/$BRANCH" -- '*.c' |
		grep -v '^tools/' || true)
	if [ ${#files[@]} -eq 0 ]; then
		echo "the series changes no kernel C file"
		return 0
	fi
	ccache_env
	for rev in base head; do
		c=$(kbase)
		[ $rev = head ] && c=$(kgit rev-parse "refs/heads/$BRANCH")
		git -C "$wt" checkout -q --detach "$c"
		cp "$(kobj debug)/.config" "$obj/.config"
		objs=()
		for f in "${files[@]}"; do
			[ -f "$wt/$f" ] && objs+=("${f%.c}.o")
		done
		out=$BUILD/static-$rev.log
		kmake_in "$wt" "$obj" olddefconfig >/dev/null
		kmake_in "$wt" "$obj" W=1 C=2 "${objs[@]}" >"$out" 2>&1 ||
			{ tail -20 "$out"; bad=1; }
		grep -E '(warning|error):' "$out" | sed -E "s|$wt/||; s/:[0-9]+(:[0-9]+)?:/:/" |
			sort -u >"$BUILD/static-$rev.txt" || true
	done
	n=$(comm -13 "$BUILD/static-base.txt" "$BUILD/static-head.txt" | tee /dev/stderr | wc -l)
	echo "${#files[@]} files checked with sparse and W=1: $n new warnings"
	if [ "$n" -eq 0 ] && [ $bad -eq 0 ]; then
		record PASS "sparse and W=1: no new warning in ${#files[@]} files"
	else
		record FAIL "sparse and W=1: no new warning in ${#files[@]} files"
		return 1
	fi
}

do_lint() {
	do_tree
	step checkpatch checkpatch_series
	step verify verify_series
}

do_bisect() {
	do_tree
	[ -f "$(kobj debug)/.config" ] || step config-debug make_config debug
	step bisect bisect_series
	step static-check static_check_series
}

parser_tests() {
	python3 "$TOP/scripts/tests/test_judge.py" -v
	record PASS "console/TAP parser tests on recorded logs"
	python3 "$TOP/scripts/tests/mutate_judge.py"
	record PASS "parser tests catch every mutation of the parser"
}

do_parser_tests() {
	step parser-tests parser_tests
}

do_test() {
	RESULTS=$BUILD/results.txt
	export RESULTS
	mkdir -p "$BUILD"
	: >"$RESULTS"
	local rc=0 pass fail
	do_deps
	step parser-tests parser_tests
	do_tree
	step checkpatch checkpatch_series
	step verify verify_series && record PASS "patches/ reproduces the mirrors"
	do_build debug
	step bisect bisect_series
	step static-check static_check_series
	do_qemu
	step "initramfs-debug" make_initramfs debug
	step "boot-debug" boot_guest debug
	echo "==> judge-debug (console: $BUILD/guest-debug/console.log)"
	judge_guest debug || rc=1
	pass=$(grep -c '^PASS' "$RESULTS" || true)
	fail=$(grep -c '^FAIL' "$RESULTS" || true)
	echo "==> scripts/bts test: $( [ $rc -eq 0 ] && [ "$fail" -eq 0 ] && echo PASS || echo FAIL) in $(elapsed "$T0")"
	echo "$pass passed, $fail failed"
	[ $rc -eq 0 ] && [ "$fail" -eq 0 ]
}
