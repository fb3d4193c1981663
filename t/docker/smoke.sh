#!/usr/bin/env bash
# make docker-test (through tools/with-dockerd.sh, after make docker-base):
# builds the image and runs it as production does, with the host's network,
# beside a redis-server (TLS) and stand-ins on the host's loopback, and
# checks it end to end:
#
# - the edge: --read-only with a tmpfs run directory, as the image's
#   non-root user, Redis over TLS verified against a mounted CA, the salt
#   from a mounted file; 401s, a 200 with the token's user passed to GMS,
#   the /api/gms/ form, getEsTaskStatus from the search cluster, /metrics,
#   the HEALTHCHECK, logs on stdout, a clean 'docker stop';
# - 'docker run --user 0': nginx's master root, its workers www-data;
# - 'gms-token follow' in its own container against a stand-in of GMS's
#   GraphQL API (t/docker/gms-graphql.pl): a token DataHub lists passes at
#   the edge, and is refused once DataHub no longer lists it.
#
# The stand-in GMS (REST) and search cluster are nginx from the image under
# test; GMS's GraphQL is GmsTest::GraphQL (t/lib) on the host.  The image's
# size is printed.  Needs redis-server, redis-cli, curl, openssl and perl
# on the host (make docker-test installs them).
#
#   GMS_EDGE_IMAGE        the tag to build (gms-edge:smoke); kept afterwards
#   BASE_IMAGE            the Dockerfile's base (debian:trixie)
#   DOCKER_BUILD_FLAGS    options for docker build (--network host: the
#                         build reaches Debian's archive as the host does)
#   DOCKER                the docker client (docker)

set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
image=${GMS_EDGE_IMAGE:-gms-edge:smoke}
docker=${DOCKER:-docker}
started=$SECONDS

say() { echo "docker-test: $*"; }

if ! "$docker" info >/dev/null 2>&1; then
    say "FAIL: no Docker daemon answers ('$docker info' failed);" \
        "'make docker-test' starts one (tools/with-dockerd.sh)" >&2
    exit 1
fi

for tool in redis-server redis-cli curl openssl perl; do
    command -v "$tool" >/dev/null 2>&1 \
        || { say "FAIL: $tool not found (make deps)" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/gms-docker-test.XXXXXX)
# the containers run as uid 33: what they get mounted must be readable
chmod 0755 "$dir"
suffix=$$
edge=gms-edge-smoke-$suffix
edge_root=gms-edge-root-smoke-$suffix
stand_in=gms-stand-in-smoke-$suffix
follow=gms-token-follow-smoke-$suffix
redis_pid=
graphql_pid=
checks=0

cleanup() {
    "$docker" rm -f "$edge" "$edge_root" "$stand_in" "$follow" \
        >/dev/null 2>&1 || true
    for pid in $redis_pid $graphql_pid; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap cleanup EXIT

fail() {
    say "FAIL: $*" >&2
    for c in "$edge" "$edge_root" "$follow"; do
        if "$docker" inspect "$c" >/dev/null 2>&1; then
            echo "--- docker logs $c" >&2
            "$docker" logs "$c" 2>&1 | tail -n 40 >&2
        fi
    done
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

pick_ports 6
port=${ports[0]} root_port=${ports[1]} redis_port=${ports[2]}
tls_port=${ports[3]} gms_port=${ports[4]} search_port=${ports[5]}
url=http://127.0.0.1:$port


# --- the image ---------------------------------------------------------------

say "building $image (log: $dir/build.log)"
build_started=$SECONDS
# shellcheck disable=SC2086  # options, split on purpose
if ! "$docker" build --force-rm ${DOCKER_BUILD_FLAGS---network host} \
        --build-arg BASE_IMAGE="${BASE_IMAGE:-debian:trixie}" -t "$image" \
        "$repo" > "$dir/build.log" 2>&1; then
    tail -n 40 "$dir/build.log" >&2
    fail "docker build failed"
fi
size=$("$docker" image inspect -f '{{.Size}}' "$image")
ok "image $image built in $((SECONDS - build_started)) s:" \
   "$((size / 1000000)) MB"

user=$("$docker" image inspect -f '{{.Config.User}}' "$image")
case $user in
    ''|0|0:*|root|root:*) fail "the image runs as root by default ('$user')" ;;
esac
ok "the image's user is $user, not root"


# --- Redis over TLS, the stand-ins, a token --------------------------------------

# a CA, and Redis's certificate for the name redis.smoke
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj /CN=smoke-ca \
    2>/dev/null || fail "openssl: no CA"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/redis.key" -out "$dir/redis.csr" -subj /CN=redis.smoke \
    2>/dev/null || fail "openssl: no key"
printf 'subjectAltName=DNS:redis.smoke\n' > "$dir/san.ext"
openssl x509 -req -in "$dir/redis.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 2 -extfile "$dir/san.ext" -out "$dir/redis.pem" \
    2>/dev/null || fail "openssl: no certificate"
chmod 0644 "$dir/ca.pem"

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" \
    --tls-port "$tls_port" --tls-cert-file "$dir/redis.pem" \
    --tls-key-file "$dir/redis.key" --tls-ca-cert-file "$dir/ca.pem" \
    --tls-auth-clients no &
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
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;
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

# nginx from the image under test (as its own user), its configuration
# passed in the environment
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
printf '%s\n' "$salt" > "$dir/salt"
chmod 0644 "$dir/salt"
token="smoke-$RANDOM$RANDOM$RANDOM"
actor=urn:li:corpuser:smoke

# gms-token from the image, to Redis over TLS
gms_token() {
    "$docker" run --rm -i --network host \
        -v "$dir/ca.pem:/run/secrets/redis-ca.pem:ro" "$image" gms-token "$@" \
        --redis "127.0.0.1:$tls_port" --tls \
        --tls-ca-file /run/secrets/redis-ca.pem --tls-name redis.smoke
}

# DataHub's id of a token: base64 of SHA-256 of token and salt
datahub_id() {
    printf '%s%s' "$1" "$salt" | openssl dgst -sha256 -binary | base64 -w0
}

printf '%s' "$token" | gms_token put --token-stdin --salt "$salt" \
    --actor "$actor" --expires-in 1h > "$dir/id" || fail "gms-token put failed"
gms_token grant "$actor" GET_ES_TASK_STATUS_PRIVILEGE >/dev/null \
    || fail "gms-token grant failed"

grep -qF "$(datahub_id "$token")" "$dir/id" \
    || fail "gms-token put printed '$(cat "$dir/id")'," \
            "expected $(datahub_id "$token")"
ok "gms-token in the image cached a token over TLS"


# --- the edge: read-only, non-root, Redis over TLS ----------------------------------

# REDIS_ADDRESS by a name from /etc/hosts: the entry point puts its address
# in the configuration; the certificate is checked for REDIS_SSL_NAME
"$docker" run -d --name "$edge" --network host \
    --read-only --tmpfs /run/gms-edge:uid=33,gid=33,mode=0700 \
    --health-interval 1s --health-timeout 3s --health-retries 2 \
    -v "$dir/ca.pem:/run/secrets/redis-ca.pem:ro" \
    -v "$dir/salt:/run/secrets/gms_token_salt:ro" \
    -e LISTEN_PORT="$port" \
    -e GMS_UPSTREAM="127.0.0.1:$gms_port" \
    -e SEARCH_UPSTREAM="127.0.0.1:$search_port" \
    -e REDIS_ADDRESS="localhost:$tls_port" \
    -e REDIS_TLS=on \
    -e REDIS_SSL_TRUSTED_CERTIFICATE=/run/secrets/redis-ca.pem \
    -e REDIS_SSL_NAME=redis.smoke \
    -e GMS_TOKEN_SALT_FILE=/run/secrets/gms_token_salt \
    -e WORKER_PROCESSES=2 \
    "$image" >/dev/null || fail "docker run failed"

retry 30 curl -fs -o /dev/null "$url/healthz" || fail "the edge did not start"
ok "the edge answers /healthz"

[ "$("$docker" inspect -f '{{.HostConfig.ReadonlyRootfs}}' "$edge")" = true ] \
    || fail "the edge's root file system is not read-only"
if "$docker" exec "$edge" sh -c 'echo x > /etc/gms-edge/x' 2>/dev/null; then
    fail "the edge could write to its root file system"
fi
ok "the edge runs with --read-only"

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
expect 200 "\"actor\":\"$actor\"" "valid token (Redis over TLS), proxied with the token's user"
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
    [ "$("$docker" inspect -f '{{.State.Health.Status}}' "$1")" = healthy ]
}
retry 20 healthy "$edge" \
    || fail "HEALTHCHECK: $("$docker" inspect -f '{{json .State.Health}}' "$edge")"
ok "HEALTHCHECK: healthy"

# the access log on stdout, the entry point's lines on stderr; the logs
# go to files first: "docker logs | grep -q" under pipefail fails when
# grep matches early and docker logs then writes into a closed pipe
logged() {
    "$docker" logs "$1" > "$dir/stdout" 2> "$dir/stderr"
}
access_logged() {
    logged "$edge" && grep -q "result=ok type=[^ ]* actor=\"$actor\"" "$dir/stdout"
}
retry 5 access_logged || fail "no access log line with result=ok on stdout"
grep -q 'gms-edge: port' "$dir/stderr" || fail "no start line on stderr"
ok "access log on stdout, entry point on stderr"

# the uid and command line of every process in the container, into $dir/ps
processes() {
    # shellcheck disable=SC2016
    "$docker" exec "$1" sh -c '
        for p in /proc/[0-9]*; do
            cmd=$(tr "\0" " " < "$p/cmdline" 2>/dev/null) || continue
            uid=$(sed -n "s/^Uid:[[:space:]]*\([0-9]*\).*/\1/p" "$p/status")
            printf "%s %s\n" "$uid" "$cmd"
        done' > "$dir/ps" || fail "docker exec failed"
}

processes "$edge"
grep -q '^33 nginx: master process' "$dir/ps" \
    || fail "no master process as www-data: $(cat "$dir/ps")"
[ "$(grep -c '^33 nginx: worker process' "$dir/ps")" = 2 ] \
    || fail "expected 2 workers as www-data (uid 33): $(cat "$dir/ps")"
if awk '/nginx: / && !/^33 / { found = 1 } END { exit !found }' "$dir/ps"; then
    fail "an nginx process not as www-data: $(cat "$dir/ps")"
fi
ok "master and workers as www-data (uid 33)"


# --- docker run --user 0: a root master, workers www-data -----------------------

"$docker" run -d --name "$edge_root" --network host --user 0 \
    -v "$dir/salt:/run/secrets/gms_token_salt:ro" \
    -e LISTEN_PORT="$root_port" \
    -e GMS_UPSTREAM="127.0.0.1:$gms_port" \
    -e SEARCH_UPSTREAM="127.0.0.1:$search_port" \
    -e REDIS_ADDRESS="127.0.0.1:$redis_port" \
    -e GMS_TOKEN_SALT_FILE=/run/secrets/gms_token_salt \
    -e GMS_DATAHUB_VERSION=1.5.0 \
    -e WORKER_PROCESSES=2 \
    "$image" >/dev/null || fail "docker run --user 0 failed"
retry 30 curl -fs -o /dev/null "http://127.0.0.1:$root_port/healthz" \
    || fail "the edge run as root did not start"
request -H "Authorization: Bearer $token" \
    "http://127.0.0.1:$root_port/entities/urn%3Ali%3Acorpuser%3Asmoke"
expect 200 "\"actor\":\"$actor\"" "--user 0: valid token (plain Redis)"

# GMS_DATAHUB_VERSION=1.5.0: /health/live open, as that GMS serves it
# (the image's /etc/gms-edge/open-paths/datahub-1.5.conf); not at 0.13.0
request "http://127.0.0.1:$root_port/health/live"
expect 200 '"uri":"/health/live"' "GMS_DATAHUB_VERSION=1.5.0: /health/live without a token"
request "$url/health/live"
expect 401 'Missing access token' "the default 0.13.0: /health/live needs a token"

processes "$edge_root"
grep -q '^0 nginx: master process' "$dir/ps" \
    || fail "--user 0: no master process as root: $(cat "$dir/ps")"
[ "$(grep -c '^33 nginx: worker process' "$dir/ps")" = 2 ] \
    || fail "--user 0: expected 2 workers as www-data: $(cat "$dir/ps")"
ok "--user 0: master root, workers www-data"
"$docker" rm -f "$edge_root" >/dev/null


# --- gms-token follow in its own container --------------------------------------

followed="followed-$RANDOM$RANDOM$RANDOM"
followed_actor=urn:li:corpuser:followed
mkdir -p "$dir/graphql"
printf 'follower-pat\n' > "$dir/graphql/pat"
chmod 0644 "$dir/graphql/pat"
# DataHub lists the token put above too: follow --prune spares it
printf '%s %s\n%s %s\n' "$(datahub_id "$token")" "$actor" \
    "$(datahub_id "$followed")" "$followed_actor" > "$dir/graphql/tokens"

perl -I "$repo/t/lib" "$repo/t/docker/gms-graphql.pl" "$dir/graphql" \
    > "$dir/graphql.log" 2>&1 &
graphql_pid=$!
retry 10 test -s "$dir/graphql/port" \
    || fail "the stand-in GraphQL API did not start: $(cat "$dir/graphql.log")"
graphql_port=$(cat "$dir/graphql/port")

# as docs/operations.md shows it, with Redis over TLS
"$docker" run -d --name "$follow" --network host --read-only \
    --no-healthcheck \
    -v "$dir/graphql/pat:/run/secrets/gms.token:ro" \
    -v "$dir/ca.pem:/run/secrets/redis-ca.pem:ro" \
    "$image" gms-token follow --gms "http://127.0.0.1:$graphql_port" \
    --gms-token-file /run/secrets/gms.token --interval 1s \
    --redis "127.0.0.1:$tls_port" --tls \
    --tls-ca-file /run/secrets/redis-ca.pem --tls-name redis.smoke \
    >/dev/null || fail "docker run gms-token follow failed"

follow_answer() {
    request -H "Authorization: Bearer $followed" "$entity"
    [ "$status" = "$1" ]
}

retry 20 follow_answer 200 \
    || fail "a token DataHub lists: $status at the edge, not 200: $body"
expect 200 "\"actor\":\"$followed_actor\"" \
    "follow cached the token DataHub lists"

# DataHub revokes it: the stand-in lists only the first token
printf '%s %s\n' "$(datahub_id "$token")" "$actor" > "$dir/graphql/tokens"
kill -HUP "$graphql_pid"
revoked_at=$SECONDS
retry 20 follow_answer 401 \
    || fail "a token revoked in DataHub: $status at the edge, not 401: $body"
expect 401 'Invalid or revoked access token' \
    "revoked in DataHub: refused at the edge after $((SECONDS - revoked_at)) s"

request -H "Authorization: Bearer $token" "$entity"
expect 200 "\"actor\":\"$actor\"" "the token DataHub still lists still passes"

"$docker" stop -t 10 "$follow" >/dev/null
code=$("$docker" inspect -f '{{.State.ExitCode}}' "$follow")
[ "$code" = 0 ] || fail "gms-token follow exited with $code on docker stop"
logged "$follow" && grep -q ' ok tokens=2 ' "$dir/stdout" \
    || fail "no cycle line of follow on stdout"
ok "follow: cycles on stdout, docker stop: exit 0"


# --- docker stop: SIGQUIT, a graceful exit ----------------------------------------

"$docker" stop -t 10 "$edge" >/dev/null
code=$("$docker" inspect -f '{{.State.ExitCode}}' "$edge")
[ "$code" = 0 ] || fail "the edge exited with $code on docker stop"
ok "docker stop: exit 0"

say "passed ($checks checks in $((SECONDS - started)) s; image $image" \
    "$((size / 1000000)) MB)"
