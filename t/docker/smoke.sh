#!/usr/bin/env bash
# make docker-test: builds the image, runs it with the host's network beside
# a redis-server and a stand-in GMS and search cluster on the host's
# loopback, and checks it end to end: 401s, a 200 with the token's user
# passed to GMS, getEsTaskStatus, /metrics, the HEALTHCHECK, logs on stdout,
# workers as www-data.  The token is seeded with the image's own gms-token.
#
# Skips (exit 0) when no Docker daemon answers.  Needs redis-server, curl and
# openssl on the host (make deps installs them), and the base image debian:bookworm
# locally or from a registry (README.md, Container, makes one offline).
#
#   GMS_EDGE_IMAGE        the tag to build (gms-edge:smoke); kept afterwards
#   DOCKER_BUILD_FLAGS    more options for docker build, e.g. --network host
#                         when the daemon runs with --bridge=none
#   DOCKER                the docker client (docker)

set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
image=${GMS_EDGE_IMAGE:-gms-edge:smoke}
docker=${DOCKER:-docker}

say()  { echo "docker-test: $*"; }
skip() { say "skipped: $*"; exit 0; }

if ! command -v "$docker" >/dev/null 2>&1; then
    skip "no Docker client ('$docker' not found)"
fi
if ! "$docker" info >/dev/null 2>&1; then
    skip "no Docker daemon ('$docker info' failed: start dockerd, or set DOCKER_HOST)"
fi

for tool in redis-server curl openssl; do
    command -v "$tool" >/dev/null 2>&1 \
        || { say "FAIL: $tool not found (apt-get install $tool, or make deps)" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/gms-docker-test.XXXXXX)
suffix=$$
edge=gms-edge-smoke-$suffix
stand_in=gms-stand-in-smoke-$suffix
redis_pid=
checks=0

cleanup() {
    "$docker" rm -f "$edge" "$stand_in" >/dev/null 2>&1 || true
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

fail() {
    say "FAIL: $*" >&2
    if "$docker" inspect "$edge" >/dev/null 2>&1; then
        echo "--- docker logs $edge" >&2
        "$docker" logs "$edge" 2>&1 | tail -n 40 >&2
    fi
    exit 1
}

ok() {
    checks=$((checks + 1))
    say "ok $checks - $*"
}

# $1 free ports on the host's loopback, all different, into the array ports
pick_ports() {
    local p used=" "
    ports=()
    while [ "${#ports[@]}" -lt "$1" ]; do
        p=$((20000 + RANDOM % 30000))
        case $used in *" $p "*) continue ;; esac
        used="$used$p "
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
        ports+=("$p")
    done
}

# until the command succeeds, at most $1 seconds
retry() {
    local seconds=$1 i=0
    shift
    until "$@"; do
        i=$((i + 1))
        [ "$i" -ge $((seconds * 10)) ] && return 1
        sleep 0.1
    done
}

pick_ports 4
port=${ports[0]} redis_port=${ports[1]} gms_port=${ports[2]} search_port=${ports[3]}
url=http://127.0.0.1:$port


# --- the image ---------------------------------------------------------------

if ! "$docker" image inspect debian:bookworm >/dev/null 2>&1; then
    say "no local debian:bookworm: docker build will try to pull it" \
        "(README.md, Container, shows how to make one with debootstrap)"
fi

say "building $image (log: $dir/build.log)"
# shellcheck disable=SC2086  # options, split on purpose
if ! "$docker" build ${DOCKER_BUILD_FLAGS:-} -t "$image" "$repo" \
        > "$dir/build.log" 2>&1; then
    tail -n 40 "$dir/build.log" >&2
    fail "docker build failed"
fi
ok "image $image built"


# --- Redis, the stand-ins, a token ---------------------------------------------

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
redis_pid=$!
retry 5 redis-cli -p "$redis_port" ping >/dev/null 2>&1 \
    || fail "redis-server did not start: $(cat "$dir/redis.log")"

# GMS echoes the actor header the edge sent; the search cluster knows one task
stand_in_conf=$(cat <<CONF
daemon off;
pid /tmp/stand-in.pid;
error_log stderr;
events { }
http {
    access_log off;
    client_body_temp_path /tmp/body;
    proxy_temp_path /tmp/proxy;
    default_type application/json;
    server {
        listen 127.0.0.1:$gms_port;
        location / {
            return 200 '{"standIn":"GMS","uri":"\$request_uri","actor":"\$http_x_datahub_actor"}';
        }
    }
    server {
        listen 127.0.0.1:$search_port;
        location = /_tasks/smokeNode:7 {
            return 200 '{"completed":true,"task":{"node":"smokeNode","id":7,"type":"transport","action":"indices:data/write/reindex","status":{"total":1},"start_time_in_millis":1,"running_time_in_nanos":5,"cancellable":true}}';
        }
        location / {
            return 404 '{"status":404}';
        }
    }
}
CONF
)

# nginx from the image under test, its configuration passed in the
# environment: no bind mount, so a daemon that cannot see $dir works too
# shellcheck disable=SC2016  # expanded in the container
"$docker" run -d --name "$stand_in" --network host \
    -e STAND_IN_CONF="$stand_in_conf" "$image" \
    sh -c 'printf "%s\n" "$STAND_IN_CONF" > /tmp/stand-in.conf &&
           exec nginx -e stderr -c /tmp/stand-in.conf' >/dev/null \
    || fail "the stand-in did not start"
retry 20 curl -fs -o /dev/null "http://127.0.0.1:$gms_port/" \
    || fail "the stand-in GMS does not answer: $("$docker" logs "$stand_in" 2>&1)"

# shellcheck disable=SC2016  # a salt with what nginx's parser and sh treat specially
salt='smoke "salt" \ $x;{'
token="smoke-$RANDOM$RANDOM$RANDOM"
actor=urn:li:corpuser:smoke
gms_token() {
    "$docker" run --rm -i --network host "$image" gms-token "$@"
}

printf '%s' "$token" | gms_token put --token-stdin --salt "$salt" \
    --actor "$actor" --expires-in 1h --redis "127.0.0.1:$redis_port" \
    > "$dir/id" || fail "gms-token put failed"
gms_token grant "$actor" GET_ES_TASK_STATUS_PRIVILEGE \
    --redis "127.0.0.1:$redis_port" >/dev/null || fail "gms-token grant failed"

expected_id=$(printf '%s%s' "$token" "$salt" | openssl dgst -sha256 -binary | base64 -w0)
grep -qF "$expected_id" "$dir/id" \
    || fail "gms-token put printed '$(cat "$dir/id")', expected $expected_id"
ok "gms-token in the image cached a token"


# --- the edge ---------------------------------------------------------------

# REDIS_ADDRESS by name: the entry point resolves it
"$docker" run -d --name "$edge" --network host \
    --health-interval 1s --health-timeout 3s --health-retries 2 \
    -e LISTEN_PORT="$port" \
    -e GMS_UPSTREAM="127.0.0.1:$gms_port" \
    -e SEARCH_UPSTREAM="127.0.0.1:$search_port" \
    -e REDIS_ADDRESS="localhost:$redis_port" \
    -e GMS_TOKEN_SALT="$salt" \
    -e WORKER_PROCESSES=2 \
    "$image" >/dev/null || fail "docker run failed"

retry 30 curl -fs -o /dev/null "$url/healthz" || fail "the edge did not start"
ok "the edge answers /healthz"

# request: status in $status, body in $body
request() {
    local out
    out=$(curl -s -o "$dir/body" -w '%{http_code}' "$@" 2>&1) || true
    status=$out
    body=$(cat "$dir/body" 2>/dev/null || true)
}

expect() {
    local want=$1 pattern=$2 what=$3
    [ "$status" = "$want" ] || fail "$what: status $status, expected $want: $body"
    case $body in
        *"$pattern"*) ok "$what: $want" ;;
        *) fail "$what: body '$body' lacks '$pattern'" ;;
    esac
}

entity="$url/entities/urn%3Ali%3Acorpuser%3Asmoke"

request "$entity"
expect 401 'Missing access token' "no token"

request -H 'Authorization: Bearer not-a-real-token' "$entity"
expect 401 'Invalid or revoked access token' "unknown token"

request -H "Authorization: Bearer $token" -H 'X-DataHub-Actor: urn:li:corpuser:admin' "$entity"
expect 200 "\"actor\":\"$actor\"" "valid token, proxied with the token's user"
case $body in
    *'"uri":"/entities/urn%3Ali%3Acorpuser%3Asmoke"'*) ;;
    *) fail "the request line did not reach GMS unchanged: $body" ;;
esac

request -H "Authorization: Bearer $token" "$url/api/gms/entities/urn%3Ali%3Acorpuser%3Asmoke"
expect 200 '"uri":"/entities/urn%3Ali%3Acorpuser%3Asmoke"' "the /api/gms/ form"

request -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"task":"smokeNode:7"}' "$url/operations?action=getEsTaskStatus"
expect 200 '\"taskId\":\"smokeNode:7\"' "getEsTaskStatus from the search cluster"

request "$url/metrics"
expect 200 'gms_token_requests_total{result="ok"}' "metrics from the loopback"

healthy() {
    [ "$("$docker" inspect -f '{{.State.Health.Status}}' "$edge")" = healthy ]
}
retry 20 healthy \
    || fail "HEALTHCHECK: $("$docker" inspect -f '{{json .State.Health}}' "$edge")"
ok "HEALTHCHECK: healthy"

# the access log on stdout, the entry point's lines on stderr
# shellcheck disable=SC2016
retry 5 sh -c '"$1" logs "$2" 2>/dev/null | grep -q "result=ok actor=\"$3\""' \
    _ "$docker" "$edge" "$actor" \
    || fail "no access log line with result=ok on stdout"
"$docker" logs "$edge" 2>&1 >/dev/null | grep -q 'gms-edge: port' \
    || fail "no start line on stderr"
ok "access log on stdout, entry point on stderr"

# /proc from inside the container: nginx's master root, its workers www-data
# shellcheck disable=SC2016
"$docker" exec "$edge" sh -c '
    for p in /proc/[0-9]*; do
        cmd=$(tr "\0" " " < "$p/cmdline" 2>/dev/null) || continue
        uid=$(sed -n "s/^Uid:[[:space:]]*\([0-9]*\).*/\1/p" "$p/status")
        printf "%s %s\n" "$uid" "$cmd"
    done' > "$dir/ps" || fail "docker exec failed"
grep -q '^0 nginx: master process' "$dir/ps" \
    || fail "no master process as root: $(cat "$dir/ps")"
[ "$(grep -c '^33 nginx: worker process' "$dir/ps")" = 2 ] \
    || fail "expected 2 workers as www-data (uid 33): $(cat "$dir/ps")"
if grep 'nginx: worker process' "$dir/ps" | grep -qv '^33 '; then
    fail "a worker not as www-data: $(cat "$dir/ps")"
fi
ok "master root, workers www-data"

# docker stop: SIGQUIT, a graceful exit
"$docker" stop -t 10 "$edge" >/dev/null
code=$("$docker" inspect -f '{{.State.ExitCode}}' "$edge")
[ "$code" = 0 ] || fail "the edge exited with $code on docker stop"
ok "docker stop: exit 0"

say "passed ($checks checks)"
