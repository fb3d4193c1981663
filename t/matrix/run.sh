#!/usr/bin/env bash
# make test-matrix: the suite on each Debian release the module supports,
# each in a container of that release with its own nginx, nginx-dev,
# hiredis, OpenSSL and Redis or Valkey from Debian's archive.
#
#   bash t/matrix/run.sh PLATFORM...     (through tools/with-dockerd.sh)
#
#   bookworm        Debian 12: nginx 1.22, hiredis 0.14, Redis 7.0
#   trixie          Debian 13: nginx 1.26, hiredis 1.2, Redis 8.0
#   trixie-valkey   Debian 13 with Valkey 8.1 as the server
#   forky-valkey    Debian testing: nginx 1.30 (nginx.org's stable line),
#                   OpenSSL 3.6, Valkey 9.1
#
# For each: the release's base image (tools/docker-base.sh: pulled, or
# made with debootstrap), an image gms-matrix:<release> with what the
# suite needs (t/matrix/Dockerfile: built once, then Docker's cache), and
# a container with no network but its own loopback, into which the tree
# (without build/ and .git) is copied and 'make test' run, as a newcomer
# on that release would.  Valkey's binaries are named valkey-*: the
# harness takes them from REDIS_SERVER, REDIS_SENTINEL and REDIS_CLI.
#
#   MATRIX_TESTS   the test files to run (default: all of t/)
#   PROVE_FLAGS    prove's flags (default: none)
#   DOCKER         the docker client (docker)
#
# Each platform's output goes to build/matrix/<platform>.log, and one line
# of summary to stdout; the exit code is non-zero when any failed.

set -uo pipefail
cd "$(dirname "$0")/../.."

docker=${DOCKER:-docker}
logs=build/matrix
mkdir -p "$logs"

say() { echo "test-matrix: $*"; }

[ "$#" -gt 0 ] || set -- bookworm trixie trixie-valkey forky-valkey

valkey_env=(-e REDIS_SERVER=valkey-server -e REDIS_SENTINEL=valkey-sentinel
            -e REDIS_CLI=valkey-cli)

failed=0
for platform in "$@"; do
    env=()
    case $platform in
        bookworm)      release=bookworm ;;
        trixie)        release=trixie ;;
        trixie-valkey) release=trixie env=("${valkey_env[@]}") ;;
        forky-valkey)  release=forky env=("${valkey_env[@]}") ;;
        *) say "$platform: unknown (bookworm, trixie, trixie-valkey," \
               "forky-valkey)"; exit 2 ;;
    esac
    # Valkey is in every release that has it, so one image serves both
    extra=
    [ "$release" = bookworm ] || extra=valkey
    image=gms-matrix:$release
    log=$logs/$platform.log
    start=$(date +%s)

    {
        BASE_IMAGE=debian:$release sh tools/docker-base.sh \
        && ctx=$(mktemp -d) \
        && cp t/matrix/Dockerfile tools/install-deps.sh "$ctx/" \
        && "$docker" build -q --network host \
               --build-arg BASE_IMAGE=debian:$release \
               --build-arg EXTRA="${extra:+valkey-server valkey-sentinel valkey-tools}" \
               -t "$image" "$ctx" \
        && rm -rf "$ctx"
    } > "$log" 2>&1 \
        || { say "$platform: the image could not be made ($log)"
             tail -n 20 "$log"; failed=1; continue; }

    tar -C . --exclude=./build --exclude=./.git -cf - . \
    | "$docker" run --rm -i --network none \
          --sysctl net.ipv6.conf.all.disable_ipv6=0 \
          -e PROVE_FLAGS="${PROVE_FLAGS:-}" \
          -e MATRIX_TESTS="${MATRIX_TESTS:-}" "${env[@]}" "$image" \
          sh -c 'mkdir /src && tar -C /src -xf - && cd /src \
              && echo "platform: $(nginx -v 2>&1), $(${REDIS_SERVER:-redis-server} --version | cut -d" " -f1-3), hiredis $(dpkg-query -W -f="\${Version}" libhiredis-dev), $(openssl version | cut -d" " -f1-2)" \
              && make test TESTS="${MATRIX_TESTS:-t/}"' \
        >> "$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    summary=$(grep -E '^(Files=|Result:)' "$log" | tr '\n' ' ')
    what=$(sed -n 's/^platform: //p' "$log")
    if [ "$rc" = 0 ]; then
        say "$platform: ok in ${took}s ($what) $summary"
    else
        say "$platform: FAILED (exit $rc) in ${took}s ($what) $summary; $log:"
        grep -E '^(t/.*(Wstat|Failed)|  Failed tests?:)' "$log" | head -n 40
        failed=1
    fi
done

exit "$failed"
