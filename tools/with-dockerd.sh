#!/bin/sh
# Runs a command with a Docker daemon answering: the one already running
# (or DOCKER_HOST's), else a dockerd started here in the background and
# stopped again when the command ends.  Debian's docker.io package is
# dockerd with its own containerd; as root, no service manager needed.
#
#   sh tools/with-dockerd.sh COMMAND [ARGS...]
#
#   DOCKER            the docker client (docker)
#   DOCKERD_TIMEOUT   seconds to wait for a started daemon (60)
#
# Fails, saying why, when no daemon answers and none can be started.

set -eu

docker=${DOCKER:-docker}

say() { echo "with-dockerd: $*" >&2; }

[ "$#" -gt 0 ] || { say "usage: with-dockerd.sh COMMAND [ARGS...]"; exit 2; }

command -v "$docker" >/dev/null 2>&1 \
    || { say "no Docker client ('$docker'; apt-get install docker.io)"; exit 1; }

if "$docker" info >/dev/null 2>&1; then
    exec "$@"
fi

if [ -n "${DOCKER_HOST:-}" ]; then
    say "DOCKER_HOST=$DOCKER_HOST does not answer ('$docker info' failed)"
    exit 1
fi
command -v dockerd >/dev/null 2>&1 \
    || { say "no Docker daemon answers and dockerd is not installed" \
             "(apt-get install docker.io)"; exit 1; }
[ "$(id -u)" = 0 ] \
    || { say "no Docker daemon answers, and only root can start dockerd"; exit 1; }

log=$(mktemp /tmp/gms-dockerd.XXXXXX.log)
dockerd > "$log" 2>&1 &
pid=$!

stop() {
    kill -TERM "$pid" 2>/dev/null || return 0
    # dockerd stops its containers and its own containerd first
    i=0
    while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$log"
}
trap stop EXIT
trap 'exit 130' INT TERM

i=0
until "$docker" info >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
        say "dockerd exited at once:"
        tail -n 20 "$log" >&2
        trap - EXIT
        rm -f "$log"
        exit 1
    fi
    i=$((i + 1))
    if [ "$i" -ge $(( ${DOCKERD_TIMEOUT:-60} * 10 )) ]; then
        say "dockerd did not answer within ${DOCKERD_TIMEOUT:-60} s:"
        tail -n 20 "$log" >&2
        exit 1
    fi
    sleep 0.1
done
say "started dockerd (pid $pid, log $log); stopped when done"

# not exec: the daemon is stopped after the command, whatever its end
set +e
"$@"
rc=$?
set -e
exit "$rc"
