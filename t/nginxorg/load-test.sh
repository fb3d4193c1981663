#!/bin/bash
# The module built for an nginx it was not packaged with: run as root in a
# throwaway debian:forky container (tools/nginxorg-test.sh), never on a
# machine of value: it installs packages and an nginx.
#
#   load-test.sh REPO [NGINX_TARBALL]
#
# REPO: this tree (read only).  Each nginx below gets the module built by
# this tree's 'make module' from that nginx's own version's source with
# --with-compat (and --with-http_ssl_module, for Redis over TLS), and
# nothing else of the nginx's configure arguments; then 'nginx -t' with
# load_module, and real requests: 401 without a token, 200 with a token
# seeded into redis-server, the module's metrics naming that nginx.
#
# 1. Debian's nginx (forky: nginx 1.30.6, nginx.org's stable line), the
#    module from nginx-dev's tree (/usr/share/nginx/src: nginx's headers
#    and configure, no .c files) without Debian's conf_flags.
# 2. With NGINX_TARBALL (nginx-X.Y.Z.tar.gz as nginx.org publishes it):
#    nginx built with nginx.org's packages' configure arguments
#    (NGINXORG_ARGS below), installed where those packages put it, and
#    the module from the same tarball, built apart.  Without one this
#    part is skipped, saying so: Debian's archive serves binary packages,
#    and no binary package holds nginx's .c files.
#
# Ports on 127.0.0.1 from NGINXORG_TEST_PORT (28490).  Prints "ok"/"not
# ok" lines and what each step took; exits 1 when a check failed.

set -euo pipefail

repo=$1
tarball=${2:-}
port=${NGINXORG_TEST_PORT:-28490}
edge_port=$port
redis_port=$((port + 1))
token=nginxorg-test-token
actor=urn:li:corpuser:nginxorg
work=/tmp/nginxorg
failed=0

# nginx.org's packages (nginx/pkg-oss, debian/Makefile's
# BASE_CONFIGURE_ARGS, and nginx -V of its packages since 1.25: HTTP/3),
# which the official image installs
NGINXORG_ARGS=(
    --prefix=/etc/nginx --sbin-path=/usr/sbin/nginx
    --modules-path=/usr/lib/nginx/modules
    --conf-path=/etc/nginx/nginx.conf
    --error-log-path=/var/log/nginx/error.log
    --http-log-path=/var/log/nginx/access.log
    --pid-path=/var/run/nginx.pid --lock-path=/var/run/nginx.lock
    --http-client-body-temp-path=/var/cache/nginx/client_temp
    --http-proxy-temp-path=/var/cache/nginx/proxy_temp
    --http-fastcgi-temp-path=/var/cache/nginx/fastcgi_temp
    --http-uwsgi-temp-path=/var/cache/nginx/uwsgi_temp
    --http-scgi-temp-path=/var/cache/nginx/scgi_temp
    --user=nginx --group=nginx
    --with-compat --with-file-aio --with-threads
    --with-http_addition_module --with-http_auth_request_module
    --with-http_dav_module --with-http_flv_module
    --with-http_gunzip_module --with-http_gzip_static_module
    --with-http_mp4_module --with-http_random_index_module
    --with-http_realip_module --with-http_secure_link_module
    --with-http_slice_module --with-http_ssl_module
    --with-http_stub_status_module --with-http_sub_module
    --with-http_v2_module --with-http_v3_module
    --with-mail --with-mail_ssl_module
    --with-stream --with-stream_realip_module --with-stream_ssl_module
    --with-stream_ssl_preread_module
)
# what the module is built with, whatever the nginx
MODULE_FLAGS="--with-compat --with-http_ssl_module"

export DEBIAN_FRONTEND=noninteractive

check() {
    local name=$1
    shift
    if "$@"; then
        echo "ok - $name"
    else
        echo "not ok - $name"
        failed=1
    fi
}

# runs a step, its output to a log shown when it fails, and says how long
# it took
step() {
    local name=$1 log=$work/$1.log start=$SECONDS
    shift
    if "$@" > "$log" 2>&1; then
        echo "# $name: $((SECONDS - start)) s"
    else
        cat "$log" >&2
        echo "not ok - $name"
        exit 1
    fi
}

install_deps() {
    apt-get -y -qq -o Dpkg::Use-Pty=0 update
    apt-get -y -qq -o Dpkg::Use-Pty=0 install --no-install-recommends \
        build-essential nginx nginx-dev libpcre2-dev libssl-dev zlib1g-dev \
        libhiredis-dev libjansson-dev redis-server curl openssl
}

# make module from this tree against nginx source tree $1, into $2
build_module() {
    make -C "$work/gms" module BUILD="$2" NGINX_SRC="$1" \
        NGINX_CONF_FLAGS="$MODULE_FLAGS"
}

# nginx.org's tarball, configured and built as its packages are, then
# installed where they install it; their postinst's user and cache
# directory made as they make them
build_nginxorg() {
    mkdir -p "$work/org"
    tar -xzf "$tarball" -C "$work/org" --strip-components=1
    cd "$work/org"
    ./configure "${NGINXORG_ARGS[@]}"
    make -j"$(nproc)"
    make install
    cd /
    id nginx > /dev/null 2>&1 || useradd --system --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin nginx
    mkdir -p /var/cache/nginx /var/log/nginx
}

# nginx $1's version ("1.30.6")
version_of() {
    "$1" -v 2>&1 | sed -n 's|^nginx version: nginx/||p'
}

seed_token() {
    local id

    id=$(printf %s "$token" | openssl dgst -sha256 -binary | base64 -w0)
    redis-cli -p "$redis_port" HSET "gms:token:$id" actor "$actor" \
        type PERSONAL > /dev/null
}

status=
body=
get() {
    local out auth=()

    [ -z "${2:-}" ] || auth=(-H "Authorization: $2")
    out=$(curl -s -w '\n%{http_code}' "${auth[@]}" \
              "http://127.0.0.1:$edge_port$1") || out=$'\n000'
    status=${out##*$'\n'}
    body=${out%$'\n'*}
}

# label $1: nginx $2 with load_module $3 (relative: to nginx's prefix, as
# the packages' modules/), its files in $4
edge() {
    local name=$1 nginx=$2 module=$3 dir=$4 version run

    version=$(version_of "$nginx")
    name="$name (nginx $version)"
    run=("$nginx" -c "$dir/nginx.conf" -e "$dir/error.log")
    mkdir -p "$dir/html/entities"
    printf entity > "$dir/html/entities/x"
    cat > "$dir/nginx.conf" <<CONF
load_module $module;
pid $dir/nginx.pid;
error_log $dir/error.log info;
events { worker_connections 64; }
http {
    access_log $dir/access.log;
    gms_token_redis 127.0.0.1:$redis_port;
    gms_token_salt "";
    server {
        listen 127.0.0.1:$edge_port;
        root $dir/html;
        location / { gms_token_auth on; }
        location = /metrics { gms_token_metrics; }
    }
}
CONF

    check "$name: nginx -t with load_module" "${run[@]}" -t -q
    check "$name: nginx starts" "${run[@]}"

    get /entities/x
    check "$name: no token, 401 from the module" test "$status" = 401
    get /entities/x "Bearer not-$token"
    check "$name: an unknown token, 401" test "$status" = 401
    get /entities/x "Bearer $token"
    check "$name: the seeded token, 200" test "$status:$body" = "200:entity"
    [ "$status" = 200 ] || echo "# got $status: $body"
    get /metrics
    check "$name: gms_module_build_info names nginx $version" \
        grep -q "^gms_module_build_info{.*nginx_version=\"$version\"} 1" \
        <<< "$body"

    "${run[@]}" -s quit || true
    for _ in $(seq 50); do
        [ -e "$dir/nginx.pid" ] || break
        sleep 0.1
    done
    check "$name: no alert or crash in the error log" \
        bash -c "! grep -E '\\[(alert|emerg|crit)\\]|exited on signal' \
                 '$dir/error.log'"
}

rm -rf "$work"
mkdir -p "$work/gms"
# the tree without its build/, which may hold another nginx's objects
tar -C "$repo" --exclude=./build -cf - . | tar -C "$work/gms" -xf -

step install-deps install_deps

redis-server --bind 127.0.0.1 --port "$redis_port" --daemonize yes \
    --save '' --appendonly no --logfile "$work/redis.log"
for _ in $(seq 50); do
    redis-cli -p "$redis_port" PING > /dev/null 2>&1 && break
    sleep 0.1
done
seed_token

debian_version=$(version_of /usr/sbin/nginx)
echo "# 1. Debian's nginx $debian_version, Debian's arguments"
# nginx-dev's tree less Debian's configure flags: --with-compat alone
cp -a /usr/share/nginx/src "$work/nginx-dev"
rm -f "$work/nginx-dev/conf_flags"
step module-debian build_module "$work/nginx-dev" "$work/build-debian"
mkdir -p "$work/debian"
edge "Debian's" /usr/sbin/nginx \
    "$work/build-debian/nginx/objs/ngx_http_gms_module.so" "$work/debian"

if [ -z "$tarball" ]; then
    echo "ok - 2. nginx.org's build # SKIP no nginx tarball given" \
         "(NGINX_TARBALL)"
else
    echo "# 2. nginx from $(tar -tzf "$tarball" | head -n 1 | cut -d/ -f1)," \
         "nginx.org's packages' arguments"
    step nginx-org build_nginxorg
    step module-org build_module "$work/org" "$work/build-org"
    install -D -m 0644 "$work/build-org/nginx/objs/ngx_http_gms_module.so" \
        /usr/lib/nginx/modules/ngx_http_gms_module.so
    mkdir -p "$work/nginxorg"
    # the packages' layout: modules/ under the prefix is the modules path
    ln -sfn /usr/lib/nginx/modules /etc/nginx/modules
    edge "nginx.org's" /usr/sbin/nginx modules/ngx_http_gms_module.so \
        "$work/nginxorg"
    # a module of another nginx version is refused, saying so
    debian_so=$work/build-debian/nginx/objs/ngx_http_gms_module.so
    if [ "$(version_of /usr/sbin/nginx)" != "$debian_version" ]; then
        sed "s|^load_module .*|load_module $debian_so;|" \
            "$work/nginxorg/nginx.conf" > "$work/other-version.conf"
        check "a module built for nginx $debian_version: refused" bash -c \
            "! /usr/sbin/nginx -t -c '$work/other-version.conf' -e stderr \
                 > '$work/other-version.log' 2>&1 \
             && grep -q 'version [0-9]* instead of' \
                 '$work/other-version.log'"
    fi
    check "nginx.org's configure arguments, as its packages'" \
        bash -c "/usr/sbin/nginx -V 2>&1 | grep -q -- \
                 '--prefix=/etc/nginx .*--with-http_v3_module'"
fi

redis-cli -p "$redis_port" SHUTDOWN NOSAVE > /dev/null 2>&1 || true

exit $failed
