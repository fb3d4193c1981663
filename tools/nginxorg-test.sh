#!/bin/bash
# make nginxorg-test: t/nginxorg/load-test.sh in a throwaway debian:forky
# container (nginx 1.30.6, nginx.org's stable line, with its nginx-dev),
# this tree mounted read only.  Needs a Docker daemon answering and the
# image (make nginxorg-test makes both: tools/with-dockerd.sh,
# tools/docker-base.sh).
#
#   NGINX_TARBALL      nginx-X.Y.Z.tar.gz as nginx.org publishes it: also
#                      build nginx with nginx.org's packages' arguments
#                      and load the module into it (else that part is
#                      skipped, saying why)
#   NGINXORG_IMAGE     the image (debian:forky)
#   NGINXORG_TEST_PORT the first of the loopback ports it uses (28490)

set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
image=${NGINXORG_IMAGE:-debian:forky}
mounts=(-v "$repo:/src:ro")
args=(/src)

if [ -n "${NGINX_TARBALL:-}" ]; then
    tarball=$(realpath "$NGINX_TARBALL")
    [ -f "$tarball" ] || { echo "nginxorg-test: no $tarball" >&2; exit 1; }
    mounts+=(-v "$tarball:/nginx.tar.gz:ro")
    args+=(/nginx.tar.gz)
fi

start=$SECONDS
echo "nginxorg-test: in a $image container"
# the host's network: Debian's archive, as the image's sources.list names
# it, and loopback ports that are the test's own
docker run --rm --network host "${mounts[@]}" -e NGINXORG_TEST_PORT \
    "$image" bash /src/t/nginxorg/load-test.sh "${args[@]}"
echo "nginxorg-test: $((SECONDS - start)) s in all"
