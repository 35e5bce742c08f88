# SPDX-License-Identifier: GPL-2.0
# The kernel tree: Debian's linux-source-6.12 as a git repo with one base
# commit, or a user's own tree (KERNEL_TREE) through a separate worktree,
# with the series from patches/ applied on branch $BRANCH.

if [ -n "${KERNEL_TREE:-}" ]; then
	KTREE=$BUILD/linux-ext
	STATE=$BUILD/state-ext
	KIND=ext-
else
	KTREE=$BUILD/linux
	STATE=$BUILD/state
	KIND=
fi

kgit() { git -C "$KTREE" "$@"; }

# Commit identity for 'git am' when the user has none configured.
git_ident() {
	if ! git config user.email >/dev/null 2>&1; then
		printf '%s\n' -c user.name="scripts/bts" -c user.email="scripts-bts@invalid"
	fi
}

# The commit the series applies to.
kbase() {
	if [ -n "${KERNEL_TREE:-}" ]; then
		cat "$STATE/ext-base"
	else
		kgit rev-parse refs/heads/base
	fi
}

deb_tree_prepare() {
	local ver kver have tmp
	ver=$(dpkg-query -W -f='${Version}' "$KPKG" 2>/dev/null) ||
		die "$KPKG is not installed: run 'scripts/bts deps'"
	if [ -d "$KTREE/.git" ]; then
		have=$(kgit log -1 --format=%B refs/heads/base 2>/dev/null |
			sed -n 's/^Debian-Package-Version: //p')
		if [ "$have" = "$ver" ]; then
			echo "base tree is $KPKG $ver"
			return 0
		fi
		echo "base tree is $KPKG '$have', package is $ver: moving it aside"
		mv "$KTREE" "$KTREE.old-${have:-unknown}-$$"
		rm -rf "$STATE"
	fi
	tmp=$BUILD/linux.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	echo "extracting $KTARBALL"
	tar -C "$tmp" --strip-components=1 -xf "$KTARBALL"
	# Debian's top-level .gitignore ends with a block that ignores every
	# top-level entry (its packaging repo holds only debian/). In a source
	# tree that block hides every new file of the series from git, so the
	# base commit drops it and keeps upstream's rules.
	perl -0pi -e 's{\n#\n# Debian packaging: ignore everything.*?\n!/debian/\n}{\n}s' \
		"$tmp/.gitignore"
	! grep -qx '/\*' "$tmp/.gitignore" ||
		die "could not drop Debian's '/*' rule from .gitignore"
	kver=$(make -s -C "$tmp" kernelversion)
	git -C "$tmp" init -q -b base
	git -C "$tmp" config gc.auto 0
	git -C "$tmp" add -f -A
	GIT_AUTHOR_DATE=$BASE_DATE GIT_COMMITTER_DATE=$BASE_DATE \
		git -C "$tmp" "${BASE_IDENT[@]}" commit -q \
		-m "Linux $kver as shipped in Debian's $KPKG $ver" \
		-m "Debian's top-level .gitignore block that ignores every top-level
entry is dropped, so that new files in the tree are visible to git." \
		-m "Debian-Package-Version: $ver"
	mv "$tmp" "$KTREE"
	echo "base commit $(kgit rev-parse --short base): Linux $kver ($KPKG $ver)"
}

ext_tree_prepare() {
	local base
	git -C "$KERNEL_TREE" rev-parse --git-dir >/dev/null 2>&1 ||
		die "KERNEL_TREE=$KERNEL_TREE is not a git tree"
	[ -f "$KERNEL_TREE/Makefile" ] && [ -d "$KERNEL_TREE/arch/x86" ] ||
		die "KERNEL_TREE=$KERNEL_TREE does not look like a Linux tree"
	base=$(git -C "$KERNEL_TREE" rev-parse --verify "${KERNEL_BASE:-HEAD}^{commit}")
	mkdir -p "$STATE"
	if [ ! -e "$KTREE/.git" ]; then
		if git -C "$KERNEL_TREE" rev-parse -q --verify "refs/heads/$BRANCH" >/dev/null; then
			die "$KERNEL_TREE already has a branch '$BRANCH' that scripts/bts did not create here; set BTS_BRANCH=<new name>"
		fi
		git -C "$KERNEL_TREE" worktree add -q --detach "$KTREE" "$base"
		echo "worktree $KTREE of $KERNEL_TREE at $(git -C "$KTREE" rev-parse --short HEAD)"
	fi
	if [ "$(cat "$STATE/ext-base" 2>/dev/null)" != "$base" ]; then
		echo "$base" >"$STATE/ext-base"
		rm -f "$STATE/patches-hash"
		BTS_FORCE=1
	fi
	echo "series base: $(git -C "$KERNEL_TREE" log -1 --oneline "$base")"
}

# The patch files of the series, in order, as listed in patches/series.
series_files() {
	local f
	[ -f "$TOP/patches/series" ] || return 0
	while read -r f; do
		case "$f" in ''|'#'*) continue ;; esac
		printf '%s\n' "$TOP/patches/$f"
	done <"$TOP/patches/series"
}

series_hash() {
	local -a files
	mapfile -t files < <(series_files)
	hash_files "$TOP/patches/series" "${files[@]}"
}

apply_series() {
	local want have head applied p n=0
	local -a ident
	mapfile -t ident < <(git_ident)
	want=$(series_hash)
	have=$(cat "$STATE/patches-hash" 2>/dev/null || true)
	head=$(kgit rev-parse -q --verify "refs/heads/$BRANCH" || true)
	applied=$(cat "$STATE/applied-head" 2>/dev/null || true)
	if [ -n "$head" ] && [ "$have" = "$want" ]; then
		echo "series unchanged (patches $want), branch $BRANCH at $(kgit rev-parse --short "$head")"
		[ "$(kgit symbolic-ref -q HEAD)" = "refs/heads/$BRANCH" ] ||
			kgit checkout -q "$BRANCH"
		return 0
	fi
	if [ -n "$head" ] && [ "$head" != "$applied" ] && [ -z "${BTS_FORCE:-}" ]; then
		die "branch $BRANCH in $KTREE has commits that are not in patches/ and patches/ changed: run 'scripts/bts export' first, or set BTS_FORCE=1 to discard the branch"
	fi
	[ -z "$(kgit status --porcelain --untracked-files=no)" ] ||
		die "$KTREE has uncommitted changes; commit or stash them first"
	kgit checkout -q -f -B "$BRANCH" "$(kbase)"
	while read -r p; do
		[ -n "$p" ] || continue
		[ -f "$p" ] || die "patches/series names ${p##*/}, which does not exist"
		if ! kgit "${ident[@]}" am -q -3 "$p"; then
			kgit am --abort || true
			die "git am failed on patches/${p##*/}"
		fi
		n=$((n + 1))
	done < <(series_files)
	mkdir -p "$STATE"
	echo "$want" >"$STATE/patches-hash"
	kgit rev-parse HEAD >"$STATE/applied-head"
	echo "applied $n patches on $(kgit rev-parse --short "$(kbase)"): branch $BRANCH at $(kgit rev-parse --short HEAD)"
}

tree_prepare() {
	if [ -n "${KERNEL_TREE:-}" ]; then
		ext_tree_prepare
	else
		deb_tree_prepare
	fi
	apply_series
}

do_tree() {
	do_deps
	step tree tree_prepare
}
