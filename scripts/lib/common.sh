# SPDX-License-Identifier: GPL-2.0
# Shared helpers of scripts/bts: progress, logs, packages.

T0=$(date +%s)

say() { printf '%s\n' "$*"; }
die() { printf 'scripts/bts: %s\n' "$*" >&2; exit 1; }

elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# step NAME CMD...: run CMD with its output in $LOGS/NAME.log, print the
# step's name and elapsed time; on failure print the log's path and tail.
step() {
	local name=$1 t log rc
	shift
	mkdir -p "$LOGS"
	log=$LOGS/$name.log
	t=$(date +%s)
	printf '==> %-22s ' "$name"
	set +e
	( set -e; "$@" ) >"$log" 2>&1
	rc=$?
	set -e
	if [ $rc -ne 0 ]; then
		printf 'FAILED after %s (exit %d)\n' "$(elapsed "$t")" "$rc"
		say "    step: $name"
		say "    log:  $log"
		say "    last 30 lines:"
		tail -n 30 "$log" | sed 's/^/    | /'
		exit 1
	fi
	printf 'ok   %s  (total %s)\n' "$(elapsed "$t")" "$(elapsed "$T0")"
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian packages every verb may need. One list, installed once.
DEPS=(
	"$KPKG" build-essential g++-multilib flex bison bc libelf-dev libssl-dev
	cpio xz-utils
	ccache sparse busybox-static rsync kmod python3 perl git
	dpkg-dev ninja-build meson pkg-config libglib2.0-dev libpixman-1-dev
	zlib1g-dev libfdt-dev
)

missing_pkgs() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || printf '%s\n' "$p"
	done
}

apt_updated=
apt_update_once() {
	[ -n "$apt_updated" ] && return 0
	as_root apt-get update
	apt_updated=1
}

install_deps() {
	local miss
	miss=$(missing_pkgs "${DEPS[@]}")
	[ -z "$miss" ] && { echo "all packages present"; return 0; }
	echo "installing:" $miss
	apt_update_once
	# shellcheck disable=SC2086
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends $miss
}

do_deps() { step deps install_deps; }

ccache_env() {
	export CCACHE_DIR=$CACHE/ccache
	export CCACHE_BASEDIR=$BUILD
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
	export CCACHE_NOHASHDIR=1
	# Depend mode: a miss compiles once instead of running the
	# preprocessor first (a cold kernel build is about 30% faster).
	export CCACHE_DEPEND=1
	export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
	mkdir -p "$CCACHE_DIR"
}

# Hash of a set of files (names and contents), stable across clones.
hash_files() {
	local f
	for f in "$@"; do
		[ -f "$f" ] || continue
		printf '%s\n' "${f##*/}"
		cat "$f"
	done | sha256sum | cut -c1-16
}
