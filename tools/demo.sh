#!/bin/sh
# make demo: a real redis-server and nginx (conf-examples/gms-edge.conf)
# on localhost, with stand-ins for GMS (its REST API in nginx, its GraphQL
# endpoint in tools/demo-gms.pl) and the search cluster, a demo user and
# token that 'gms-token follow' copies from the stand-in into Redis; prints
# curl lines and runs until Ctrl-C, then cleans up.
set -eu

module=${1:?usage: demo.sh path/to/ngx_http_gms_module.so}
repo=$(cd "$(dirname "$0")/.." && pwd)
tool=$repo/build/gms-token
nginx_bin=${NGINX_BIN:-/usr/sbin/nginx}
port=${DEMO_PORT:-18000}
redis_port=${DEMO_REDIS_PORT:-16379}
gms_port=${DEMO_GMS_PORT:-18080}
search_port=${DEMO_SEARCH_PORT:-19200}
graphql_port=${DEMO_GRAPHQL_PORT:-18081}

if [ ! -x "$tool" ]; then
    echo "demo: $tool is not built: run 'make tool'" >&2
    exit 1
fi

dir=$(mktemp -d /tmp/gms-demo.XXXXXX)
chmod 755 "$dir"
redis_pid=
nginx_pid=
graphql_pid=
follow_pid=

cleanup() {
    trap - EXIT INT TERM
    [ -n "$follow_pid" ] && kill "$follow_pid" 2>/dev/null || true
    [ -n "$graphql_pid" ] && kill "$graphql_pid" 2>/dev/null || true
    [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null || true
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
    echo
    echo "demo stopped, $dir removed"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

# before anything starts: a port in use would mean another instance's
# Redis written to and curl lines for it (sh has no /dev/tcp: Perl asks)
for p in "$port" "$redis_port" "$gms_port" "$search_port" "$graphql_port"; do
    if perl -MIO::Socket::INET -e \
           'exit(IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]",
                                       Timeout => 1) ? 0 : 1)' "$p"
    then
        echo "demo: port $p is in use; set DEMO_PORT, DEMO_REDIS_PORT," \
             "DEMO_GMS_PORT, DEMO_GRAPHQL_PORT or DEMO_SEARCH_PORT" >&2
        exit 1
    fi
done

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
redis_pid=$!

i=0
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 50 ] && { echo "redis did not start" >&2; exit 1; }
    sleep 0.1
done

# the demo's GMS signing key and system client secret, as files (mode
# 0600: the key mints tokens) that gms-edge.conf reads
umask 077
openssl rand -hex 32 > "$dir/gms-signing-key"
openssl rand -hex 16 > "$dir/gms-system-client-secret"
umask 022
key=$(cat "$dir/gms-signing-key")
system_secret=$(cat "$dir/gms-system-client-secret")

# the demo's tokens were made an hour ago, for a day: follow's prune spares
# a token created in the last minute (DataHub's search index lags behind),
# and the demo's revocation is meant to show at once
created=$(($(date +%s) - 3600))
exp=$((created + 86400))

# DataHub's tokens, minted as GMS's StatelessTokenService does: an HS256
# JWT, base64url parts, keyed with the signing key's bytes
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
mint() {    # mint TYPE VERSION: a token of the user "datahub", until exp
    h=$(printf '{"alg":"HS256"}' | b64url)
    p=$(printf '{"actorType":"USER","actorId":"datahub","type":"%s",'\
'"version":"%s","jti":"%s","sub":"datahub","exp":%s,'\
'"iss":"datahub-metadata-service"}' "$1" "$2" "$(openssl rand -hex 16)" \
               "$exp" | b64url)
    s=$(printf '%s' "$h.$p" | openssl dgst -sha256 -hmac "$key" -binary \
            | b64url)
    printf '%s.%s.%s' "$h" "$p" "$s"
}

# a demo user and its personal token (in a file of mode 0600: follow reads
# it from there); and a session token, as DataHub's frontend holds, which
# is in no Redis
token=$(mint PERSONAL 2)
session=$(mint SESSION 1)
actor=urn:li:corpuser:datahub
umask 077
printf '%s\n' "$token" > "$dir/demo-token"
umask 022
gms_token() { "$tool" "$@" --redis "127.0.0.1:$redis_port"; }

# the id is hashed with GMS's salt: the one conf-examples/gms-edge.conf
# sets (DataHub's default before 1.5)
salt=$(sed -n 's/^ *gms_token_salt "\(.*\)";$/\1/p' \
           "$repo/conf-examples/gms-edge.conf")
[ -n "$salt" ] || { echo "demo: no gms_token_salt in gms-edge.conf" >&2; exit 1; }

id=$("$tool" id --salt "$salt" < "$dir/demo-token")

# the stand-in GMS GraphQL endpoint knows the token (its id, hashed with
# the same salt) and a policy granting the demo user the privilege that
# getEsTaskStatus needs and GENERATE_PERSONAL_ACCESS_TOKENS; its temporary
# files in $dir
TMPDIR=$dir perl -I "$repo/t/lib" "$repo/tools/demo-gms.pl" \
    --port "$graphql_port" --salt "$salt" --token-file "$dir/demo-token" \
    --id "$id" --actor "$actor" --created-at "$((created * 1000))" \
    --expires-at "$((exp * 1000))" > "$dir/gms-graphql.log" 2>&1 &
graphql_pid=$!

i=0
until curl -s -o /dev/null "http://127.0.0.1:$graphql_port/api/graphql"; do
    i=$((i + 1))
    [ $i -gt 50 ] && { echo "the stand-in GMS did not start:" >&2; cat "$dir/gms-graphql.log" >&2; exit 1; }
    sleep 0.1
done

# gms-token follow fills Redis from it, as in production: the token, then
# its user's privileges from the policy, both again every 2 seconds
"$tool" follow --gms "http://127.0.0.1:$graphql_port" \
    --gms-token-file "$dir/demo-token" --redis "127.0.0.1:$redis_port" \
    --interval 2s --privileges-interval 2s > "$dir/follow.log" 2>&1 &
follow_pid=$!

i=0
until gms_token show "$id" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "follow did not fill Redis:" >&2; cat "$dir/follow.log" >&2; exit 1; }
    sleep 0.1
done

cat > "$dir/stand-ins.conf" <<CONF
    # Stand-in GMS: echoes what it received (method, URI, actor header).
    server {
        listen 127.0.0.1:$gms_port;
        default_type application/json;
        location / {
            return 200 '{"standIn":"GMS","method":"\$request_method","uri":"\$request_uri","actor":"\$http_x_datahub_actor"}\n';
        }
    }

    # Stand-in search cluster: one running reindex, any other task 404.
    server {
        listen 127.0.0.1:$search_port;
        default_type application/json;
        location = /_tasks/oTUltX4IQMOUUVeiohTt8A:124 {
            return 200 '{"completed":false,"task":{"node":"oTUltX4IQMOUUVeiohTt8A","id":124,"type":"transport","action":"indices:data/write/reindex","status":{"total":6154,"updated":3500,"created":0,"deleted":0,"batches":4,"version_conflicts":0,"noops":0,"retries":{"bulk":0,"search":0},"throttled_millis":0,"requests_per_second":-1.0,"throttled_until_millis":0},"start_time_in_millis":1700000000000,"running_time_in_nanos":2113617447,"cancellable":true,"headers":{}}}';
        }
        location / {
            return 404 '{"error":{"type":"resource_not_found_exception","reason":"task isn\'t running and hasn\'t stored its results"},"status":404}';
        }
    }
CONF

sed -e "s#^load_module .*#load_module $module;#" \
    -e "s#^user .*##" \
    -e "s#^worker_processes .*#worker_processes 1;#" \
    -e "s#^pid .*#pid $dir/nginx.pid;#" \
    -e "s#/var/log/nginx/#$dir/#g" \
    -e "s#127.0.0.1:6379#127.0.0.1:$redis_port#" \
    -e "s#127.0.0.1:8080#127.0.0.1:$gms_port#" \
    -e "s#127.0.0.1:9200#127.0.0.1:$search_port#" \
    -e "s#listen 8000;#listen 127.0.0.1:$port;#" \
    -e "s#/etc/nginx/secrets/#$dir/#g" \
    -e "s#^http {#http {\n    client_body_temp_path $dir/body;\n    proxy_temp_path $dir/proxy;\n    include $dir/stand-ins.conf;#" \
    "$repo/conf-examples/gms-edge.conf" > "$dir/nginx.conf"

# DEMO_NGINX_WRAPPER: a command to run nginx under (the tests' ASan run)
# shellcheck disable=SC2086
${DEMO_NGINX_WRAPPER:-} "$nginx_bin" -p "$dir/" -c "$dir/nginx.conf" \
    -g 'daemon off;' &
nginx_pid=$!

i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/health"; do
    i=$((i + 1))
    [ $i -gt 50 ] && { echo "nginx did not start:" >&2; cat "$dir/error.log" >&2; exit 1; }
    sleep 0.1
done

url="http://127.0.0.1:$port"
cat <<MSG

GMS edge demo is up: nginx $url -> stand-in GMS 127.0.0.1:$gms_port,
tokens in redis-server 127.0.0.1:$redis_port, copied there by gms-token
follow from the stand-in GMS GraphQL endpoint 127.0.0.1:$graphql_port,
logs in $dir.

  # 200: a valid token, proxied to GMS with the actor set by the edge
  curl -i -H 'Authorization: Bearer $token' '$url/entities/urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2Cdb.table%2CPROD%29'

  # the same through the frontend-proxy form
  curl -i -H 'Authorization: Bearer $token' '$url/api/gms/entities/urn%3Ali%3Acorpuser%3Adatahub'

  # a session token of DataHub's frontend: accepted on its signature, no Redis
  curl -i -H 'Authorization: Bearer $session' '$url/entities/urn%3Ali%3Acorpuser%3Adatahub'

  # the system client, acting for a user (its X-DataHub-Actor reaches GMS)
  curl -i -H 'Authorization: Basic __datahub_system:$system_secret' -H 'X-DataHub-Actor: urn:li:corpuser:alice' '$url/entities/urn%3Ali%3Acorpuser%3Aalice'

  # 401: no token, then a forged one (refused without asking Redis)
  curl -i '$url/entities/urn%3Ali%3Acorpuser%3Adatahub'
  curl -i -H 'Authorization: Bearer ${token%.*}.forged' '$url/entities/urn%3Ali%3Acorpuser%3Adatahub'

  # getEsTaskStatus answered by nginx from the search cluster
  curl -i -H 'Authorization: Bearer $token' -H 'Content-Type: application/json' -d '{"task":"oTUltX4IQMOUUVeiohTt8A:124"}' '$url/operations?action=getEsTaskStatus'

  # the cached token as the module reads it (follow put it there)
  $tool show '$id' --redis 127.0.0.1:$redis_port

  # revoke the token in the stand-in GMS; within follow's interval (2s) it
  # is gone from Redis, nginx's cache drops it, and the edge answers 401
  curl -s -H 'Authorization: Bearer $token' -H 'Content-Type: application/json' -d '{"query":"mutation revoke(\$tokenId: String!) { revokeAccessToken(tokenId: \$tokenId) }","variables":{"tokenId":"$id"}}' 'http://127.0.0.1:$graphql_port/api/graphql'
  curl -i -H 'Authorization: Bearer $token' '$url/entities/urn%3Ali%3Acorpuser%3Adatahub'
  # what follow did, a line a cycle: $dir/follow.log

Ctrl-C stops everything.
MSG

wait "$nginx_pid"
