#!/bin/bash
# make deb-test: t/deb/install-test.sh run in a clean Debian with
# Debian's nginx, into which the packages of 'make deb' are installed:
# of the release they were built for (DEB_DIR/suite, written by make deb;
# this host's when missing).
#
#   deb-test.sh DEB_DIR NEXT_DIR
#
# NEXT_DIR: the same packages as a later version (make deb-next), which
# the test upgrades to.
# Under a Docker daemon: a debian:<suite> container (tools/docker-base.sh
# makes the image when missing).  Else, as root: a debootstrap chroot.
# Its base (minbase, nginx, redis-server, nothing else) is made once and
# kept in build/deb-chroot/<suite>; each run works in a fresh copy of
# it, so the base stays clean and a second run takes seconds.  Neither:
# it says why and exits 0.  DEB_MIRROR: the Debian mirror (default: the
# one this machine's apt uses).

set -euo pipefail

debs=$(cd "$1" && pwd)
next=$(cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)

# the release the packages were built for
built_for() {
    if [ -f "$1/suite" ]; then
        cat "$1/suite"
    else
        (. /etc/os-release && echo "$VERSION_CODENAME")
    fi
}

suite=$(built_for "$debs")
if [ "$(built_for "$next")" != "$suite" ]; then
    echo "deb-test: $debs is for $suite, $next for $(built_for "$next"):" \
         "build both for one release" >&2
    exit 1
fi

cache=$repo/build/deb-chroot
base=$cache/$suite
run=$cache/run

skip() {
    echo "deb-test: skipped: $*"
    exit 0
}

for d in "$debs" "$next"; do
    for p in libnginx-mod-http-gms gms-token; do
        if ! ls "$d"/${p}_*.deb > /dev/null 2>&1; then
            echo "deb-test: no ${p}_*.deb in $d: run make deb-test" >&2
            exit 1
        fi
    done
done

if command -v docker > /dev/null && docker info > /dev/null 2>&1; then
    BASE_IMAGE=debian:$suite sh "$repo/tools/docker-base.sh"
    echo "deb-test: in a debian:$suite container"
    exec docker run --rm -v "$debs:/debs:ro" -v "$next:/next:ro" \
        -v "$repo/t/deb:/t:ro" -e DEB_TEST_PORT "debian:$suite" \
        bash /t/install-test.sh /debs /next
fi

[ "$(id -u)" = 0 ] \
    || skip "no Docker daemon answers, and a debootstrap chroot needs root"
command -v debootstrap > /dev/null \
    || sh "$repo/tools/install-deps.sh" debootstrap \
    || skip "no Docker daemon answers, and debootstrap is not installed"

# the mirror this machine's apt uses, for the chroot too
host_mirror() {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
        /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v '^ *#' \
        | grep -Eo 'https?://[^ ]+/debian/?( |$)' | head -n 1 | tr -d ' '
}

mirror=${DEB_MIRROR:-$(host_mirror || true)}
mirror=${mirror:-http://deb.debian.org/debian}
mirror=${mirror%/}
security=${mirror%/debian}/debian-security

# the mounts made here, undone before anything is deleted
mounted=()

unmount_all() {
    local i

    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
    done
    mounted=()
}

mount_proc() {
    mount -t proc proc "$1/proc" \
        || skip "cannot mount /proc in a chroot here (not privileged enough)"
    mounted+=("$1/proc")
}

# processes still running inside a chroot (what install-test.sh started
# and failed to stop), ended by their id
end_processes_in() {
    local link pid root

    for link in /proc/[0-9]*/root; do
        pid=${link#/proc/}
        pid=${pid%/root}
        root=$(readlink "$link" 2>/dev/null) || continue
        [ "$root" = "$1" ] && kill "$pid" 2>/dev/null || true
    done
}

remove_tree() {
    if mountpoint -q "$1/proc" 2>/dev/null; then
        echo "deb-test: $1/proc still mounted, not deleting $1" >&2
        return 1
    fi
    rm -rf --one-file-system "$1"
}

cleanup() {
    [ -d "$run" ] && end_processes_in "$run"
    unmount_all
    [ -d "$run" ] && remove_tree "$run"
    [ -d "$base.tmp" ] && remove_tree "$base.tmp"
    return 0
}

trap cleanup EXIT

make_base() {
    local tmp=$base.tmp

    echo "deb-test: making a $suite chroot from $mirror (once, a few minutes)"
    remove_tree "$tmp" 2>/dev/null || true
    mkdir -p "$cache"
    debootstrap --variant=minbase "$suite" "$tmp" "$mirror" \
        > "$cache/debootstrap.log" 2>&1 \
        || { tail -20 "$cache/debootstrap.log"; exit 1; }

    cat > "$tmp/etc/apt/sources.list" <<LIST
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
LIST
    printf '#!/bin/sh\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$tmp/usr/sbin/policy-rc.d"

    mount_proc "$tmp"
    chroot "$tmp" sh -c 'export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq \
            --no-install-recommends nginx redis-server && apt-get clean' \
        > "$cache/base-install.log" 2>&1 \
        || { tail -20 "$cache/base-install.log"; exit 1; }
    unmount_all
    mv "$tmp" "$base"
}

[ -d "$base" ] || make_base

echo "deb-test: in a copy of $base"
remove_tree "$run" 2>/dev/null || true
cp -a "$base" "$run"
cp /etc/resolv.conf "$run/etc/resolv.conf"
mkdir -p "$run/tmp/deb-test/next"
cp "$debs"/libnginx-mod-http-gms_*.deb "$debs"/gms-token_*.deb \
    "$repo/t/deb/install-test.sh" "$run/tmp/deb-test/"
cp "$next"/libnginx-mod-http-gms_*.deb "$next"/gms-token_*.deb \
    "$run/tmp/deb-test/next/"
mount_proc "$run"

chroot "$run" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    DEB_TEST_PORT="${DEB_TEST_PORT:-}" \
    bash /tmp/deb-test/install-test.sh /tmp/deb-test /tmp/deb-test/next
