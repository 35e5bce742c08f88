# SPDX-License-Identifier: GPL-2.0
# QEMU: Debian bookworm's qemu 7.2 source plus qemu/*.patch, x86_64-softmmu
# with TCG only. Built once per (source version, patches, configure line) in
# $CACHE/qemu/<hash>; stock QEMU when qemu/ has no patches.

QEMU_CONFIGURE=(
	--target-list=x86_64-softmmu --enable-tcg --disable-kvm --disable-xen
	--without-default-features --disable-docs --disable-werror
	--firmwarepath=/usr/share/qemu:/usr/share/seabios
)

QEMU_DEPS=(qemu-system-data seabios dpkg-dev ninja-build meson pkg-config
	libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev)

have_deb_src() {
	apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null | grep -qx 'Sources'
}

# Add deb-src for the Debian mirror already configured (deb822 or one-line
# format), then update the package lists once.
ensure_deb_src() {
	local f out=/etc/apt/sources.list.d/ptrace-bts-src.sources
	if have_deb_src; then
		return 0
	fi
	if [ ! -f $out ]; then
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] || continue
			# Keep stanzas of Debian's own archive; make them deb-src.
			awk -v RS= -v ORS='\n\n' \
				'/URIs:[^\n]*debian/ && /Types:[^\n]*deb/ {
					gsub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f"
		done >"$out.tmp"
		if [ -f /etc/apt/sources.list ]; then
			sed -n 's/^deb \(.*debian.*\)$/deb-src \1/p' /etc/apt/sources.list \
				>/etc/apt/sources.list.d/ptrace-bts-src.list
		fi
		if [ -s "$out.tmp" ]; then mv "$out.tmp" $out; else rm -f "$out.tmp"; fi
		echo "added deb-src entries:"
		cat $out /etc/apt/sources.list.d/ptrace-bts-src.list 2>/dev/null || true
	fi
	apt_updated=
	as_root apt-get update
	apt_updated=1
	have_deb_src || die "no deb-src entry could be added for Debian's archive"
}

qemu_src_version() {
	apt-cache showsrc qemu | sed -n 's/^Version: //p' | sort -V | tail -n 1
}

# The patches of a variant: 'ours' is qemu/*.patch, 'stock' is none.
qemu_patches() {
	[ "$1" = stock ] && return 0
	local p
	for p in "$TOP"/qemu/*.patch; do
		[ -f "$p" ] && printf '%s\n' "$p"
	done
	return 0
}

qemu_hash() {
	local ver=$1 variant=$2
	local -a patches
	mapfile -t patches < <(qemu_patches "$variant")
	{ echo "$ver"; echo "${QEMU_CONFIGURE[*]}"; hash_files "${patches[@]}"; } |
		sha256sum | cut -c1-16
}

# build_qemu [ours|stock]: the binary's path goes to $BUILD/qemu-bin (ours)
# or $BUILD/qemu-bin-stock.
build_qemu() {
	local variant=${1:-ours} miss ver hash dir src p binfile
	binfile=$BUILD/qemu-bin
	[ "$variant" = stock ] && binfile=$BUILD/qemu-bin-stock
	miss=$(missing_pkgs "${QEMU_DEPS[@]}")
	if [ -n "$miss" ]; then
		apt_update_once
		# shellcheck disable=SC2086
		as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends $miss
	fi
	ensure_deb_src
	ver=$(qemu_src_version)
	[ -n "$ver" ] || die "apt-cache showsrc qemu found no source package"
	hash=$(qemu_hash "$ver" "$variant")
	dir=$CACHE/qemu/$hash
	if [ -x "$dir/install/qemu-system-x86_64" ]; then
		echo "cached: $dir (qemu $ver, $variant)"
		echo "$dir/install/qemu-system-x86_64" >"$binfile"
		return 0
	fi
	# Pristine source, once per version.
	src=$CACHE/qemu-src/${ver//:/_}
	if [ ! -f "$src/.complete" ]; then
		rm -rf "$src"
		mkdir -p "$src"
		(cd "$src" && apt-get source -q "qemu=$ver")
		touch "$src/.complete"
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -a "$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*' | head -n 1)" "$dir/src"
	while read -r p; do
		[ -n "$p" ] || continue
		echo "applying ${p##*/}"
		patch -d "$dir/src" -p1 --no-backup-if-mismatch <"$p"
	done < <(qemu_patches "$variant")
	ccache_env
	mkdir -p "$dir/build"
	(cd "$dir/build" && ../src/configure --prefix="$dir/prefix" \
		--cc="ccache gcc" --cxx="ccache g++" "${QEMU_CONFIGURE[@]}")
	ninja -C "$dir/build" -j"$JOBS" qemu-system-x86_64
	mkdir -p "$dir/install"
	cp "$dir/build/qemu-system-x86_64" "$dir/install/"
	rm -rf "$dir/src/.git"
	echo "$dir/install/qemu-system-x86_64" >"$binfile"
	"$dir/install/qemu-system-x86_64" --version
	# Keep the newest three builds (ours, stock and one more).
	ls -1td "$CACHE"/qemu/*/ | tail -n +4 | xargs -r rm -rf
}

# Extra -cpu properties for the guest: DS, DTES64 and DS-CPL (opt-in in our
# QEMU) and the minimal architectural PMU that Linux's perf needs to set up
# its DS buffers (qemu/README).
qemu_cpu_props() { printf '%s' ",+ds,+dtes64,+ds-cpl,tcg-pmu=on"; }

do_qemu() {
	mkdir -p "$BUILD"
	step qemu build_qemu ours
}
