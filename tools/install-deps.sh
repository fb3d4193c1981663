#!/bin/sh
# Installs the Debian packages the build, the tests and the demo need,
# and only those that are missing.  Run as root on Debian 12 bookworm,
# 13 trixie or testing (the names are the same on each).
#
# prometheus: for its promtool (Debian ships no package of promtool
# alone), which checks the shipped alerts, the dashboard and the edge's
# live metrics (t/82-alerts.t) and the follower's metrics file
# (t/80-follow-metrics.t).
#
# kustomize (t/77-kubernetes.t builds deploy/kubernetes/ with it) is
# Debian's since trixie.  Where the release has none (bookworm), trixie's
# .deb is fetched from Debian's archive with apt itself, in a scratch
# state of its own (this system's sources and lists are left alone), and
# installed with the release's own dependencies: it needs only libc6
# (>= 2.34), which bookworm's 2.36 is.
set -eu

packages="nginx nginx-dev redis-server redis-sentinel libhiredis-dev libjansson-dev \
libssl-dev libcurl4-openssl-dev gcc make perl openssl curl gettext-base valgrind \
strace ca-certificates yamllint kustomize prometheus"

[ "$#" -gt 0 ] && packages="$packages $*"

kustomize_suite=trixie
kustomize_mirror=http://deb.debian.org/debian

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing="$missing $p"
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages:$missing (run as root to install)" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq

# kustomize from trixie where this release has no candidate for it
deb=
case " $missing " in
    *" kustomize "*)
        if ! apt-cache policy kustomize 2>/dev/null \
                | grep -q 'Candidate: [0-9]'
        then
            missing=$(echo "$missing" | sed 's/ kustomize\b//')
            scratch=$(mktemp -d)
            trap 'rm -rf "$scratch"' EXIT
            mkdir -p "$scratch/parts" "$scratch/lists/partial" \
                     "$scratch/cache/archives/partial" "$scratch/deb"
            printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n%s\n' \
                "$kustomize_mirror" "$kustomize_suite" \
                'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
                > "$scratch/parts/kustomize.sources"
            ! id _apt > /dev/null 2>&1 || chown -R _apt "$scratch"
            set -- -o Dir::Etc::SourceList=/dev/null \
                   -o Dir::Etc::SourceParts="$scratch/parts" \
                   -o Dir::State::Lists="$scratch/lists" \
                   -o Dir::Cache="$scratch/cache" \
                   -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
            echo "install-deps: kustomize from $kustomize_suite"
            apt-get "$@" update -qq
            (cd "$scratch/deb" && apt-get "$@" download kustomize)
            deb=$(ls "$scratch"/deb/kustomize_*.deb)
        fi ;;
esac

echo "install-deps: installing$missing${deb:+ $deb}"
# shellcheck disable=SC2086  # the list is split on purpose
apt-get install -y -qq --no-install-recommends $missing $deb >/dev/null
