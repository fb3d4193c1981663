#!/bin/sh
# Installs the Debian packages the build, the tests and the demo need,
# and only those that are missing.  Run as root on Debian 12 bookworm,
# 13 trixie or testing (the names are the same on each).
set -eu

packages="nginx nginx-dev redis-server redis-sentinel libhiredis-dev libjansson-dev \
libssl-dev libcurl4-openssl-dev gcc make perl openssl curl gettext-base valgrind \
strace ca-certificates"

[ "$#" -gt 0 ] && packages="$packages $*"

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

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
