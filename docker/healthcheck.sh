#!/bin/bash
# The container's HEALTHCHECK (installed as /usr/local/bin/gms-edge-healthcheck):
# nginx answers GET /healthz on LISTEN_PORT with 200.  bash's /dev/tcp, as
# the image has neither curl nor wget.  The location answers by itself, so
# this says nginx serves, not that GMS or Redis do.

port=${LISTEN_PORT:-8000}

exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3

IFS= read -r -t 5 status <&3 || { echo "no answer on port $port" >&2; exit 1; }
status=${status%$'\r'}

case $status in
    "HTTP/1.1 200 "*) exit 0 ;;
esac

echo "GET /healthz on port $port: $status" >&2
exit 1
