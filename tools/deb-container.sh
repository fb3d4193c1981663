#!/bin/bash
# make deb DEB_SUITE=<suite>: the packages built for another Debian
# release than this host's, by the same 'make' run in a debian:<suite>
# container (made by tools/docker-base.sh when missing), so that they
# depend on that release's nginx ABI and libraries and pass its lintian.
#
#   deb-container.sh SUITE TARGET...     TARGET: deb, deb-next
#
# The tree is copied into the container (the repository is mounted
# read-only; build/ and .git stay out), 'make' itself installed there,
# then 'make TARGET...' installs what else it lacks and builds; each
# TARGET's packages, build log and lintian's verdict land in this
# repository's build/TARGET/, as a build on the host leaves them.  Run
# under a Docker daemon (tools/with-dockerd.sh).

set -euo pipefail

if [ "$#" -lt 2 ]; then
    echo "usage: deb-container.sh SUITE TARGET..." >&2
    exit 2
fi
suite=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
docker=${DOCKER:-docker}

for t; do
    case $t in
        deb|deb-next) ;;
        *) echo "deb-container: $t: not a target built here" >&2; exit 2 ;;
    esac
done

BASE_IMAGE=debian:$suite sh "$repo/tools/docker-base.sh"

mkdir -p "$repo/build"
echo "deb-container: make $* in a debian:$suite container"
"$docker" run --rm -i -v "$repo:/src:ro" -v "$repo/build:/out" \
    -e DEB_BUILD_OPTIONS -e OWNER="$(id -u):$(id -g)" \
    "debian:$suite" bash -s "$@" <<'IN'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends make > /dev/null
mkdir /tree
tar -C /src --exclude=./build --exclude=./.git -cf - . | tar -C /tree -xf -
make -C /tree "$@"
for t; do
    rm -rf "/out/$t"
    mkdir "/out/$t"
    find "/tree/build/$t" -maxdepth 1 -type f -exec cp -p {} "/out/$t/" \;
    chown -R "$OWNER" "/out/$t"
done
IN
