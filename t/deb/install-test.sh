#!/bin/bash
# The Debian packages installed into a clean Debian, of the release they
# were built for, with Debian's nginx: run as root inside that system (a
# debootstrap chroot or a debian:<suite> container, see
# tools/deb-test.sh), never on a machine of value: it installs, starts
# and removes things.
#
#   install-test.sh DIR NEXT    DIR holds libnginx-mod-http-gms_*.deb and
#                               gms-token_*.deb; NEXT the same as a
#                               later version, upgraded to
#
# Ports on 127.0.0.1 from DEB_TEST_PORT (default 28480): the edge, the
# backend behind it, redis-server.  Prints "ok"/"not ok" lines; exits 1
# when a check failed.

set -euo pipefail

dir=$1
next=$2
port=${DEB_TEST_PORT:-28480}
edge_port=$port
backend_port=$((port + 1))
redis_port=$((port + 2))
salt=deb-test-salt
token=deb-test-token
actor=urn:li:corpuser:debtest
enabled=/etc/nginx/modules-enabled/50-mod-http-gms.conf
available=/usr/share/nginx/modules-available/mod-http-gms.conf
wants=/etc/systemd/system/multi-user.target.wants/gms-token-follow.service
settings=/etc/default/gms-token-follow
# what deb-systemd-helper (the maintainer scripts') knows of the unit
dsh_state=/var/lib/systemd/deb-systemd-helper-enabled
dsh_state=$dsh_state/gms-token-follow.service.dsh-also

export DEBIAN_FRONTEND=noninteractive
failed=0

# apt's output goes to a log, shown when it fails; no pty (a chroot may
# have no /dev/pts)
apt_get() {
    local log=$1

    shift
    apt-get -y -qq -o Dpkg::Use-Pty=0 "$@" > "/tmp/apt-$log.log" 2>&1 \
        || { cat "/tmp/apt-$log.log" >&2; return 1; }
}

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

# nginx is started by hand on loopback ports, never by the packages
# (but the upgrade's restart); by its full path, as its service starts
# it: an upgrade in place executes the master's argv[0] again
start_nginx() {
    /usr/sbin/nginx
    wait_listening "$1"
}

stop_nginx() {
    local pid

    [ -s /run/nginx.pid ] || return 0
    pid=$(cat /run/nginx.pid)
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    rm -f /run/nginx.pid
}

stop_redis() {
    [ -s /run/deb-test-redis.pid ] || return 0
    kill "$(cat /run/deb-test-redis.pid)" 2>/dev/null || true
    rm -f /run/deb-test-redis.pid
}

trap 'stop_nginx; stop_redis' EXIT

# true once something accepts connections on 127.0.0.1:$1
listening() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

not_listening() {
    ! listening "$1"
}

wait_listening() {
    local i

    for i in $(seq 100); do
        listening "$1" && return 0
        sleep 0.1
    done
    echo "# nothing listens on 127.0.0.1:$1" >&2
    return 1
}

# GET $2 from 127.0.0.1:$1 with the optional Authorization $3: sets
# $status and $body.  bash's /dev/tcp, so that this system holds nothing
# but Debian's nginx, redis-server and what the packages pull in.
get() {
    local auth="" response

    [ -n "${3:-}" ] && auth="Authorization: $3"$'\r\n'
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n%s\r\n' "$2" "$auth" >&3
    response=$(cat <&3)
    exec 3<&-
    status=$(head -n 1 <<< "$response" | cut -d ' ' -f 2)
    body=${response#*$'\r\n\r\n'}
}

status_is() {
    [ "$status" = "$1" ] || { echo "# status $status, body: $body" >&2; return 1; }
}

body_is() {
    [ "$body" = "$1" ] || { echo "# body: $body" >&2; return 1; }
}

depends_on() {
    dpkg-query -W -f '${Depends}' "$1" | grep -Eq "(^|, )$2( |,|$)"
}

# the package holding the library $2 (libhiredis, libcrypto, ...) that the
# installed file $1 is linked with, as the dynamic linker finds it: the
# release's own (libhiredis0.14 or libhiredis1.1.0, libssl3 or
# libssl3t64, ...)
lib_package() {
    local path

    path=$(ldd "$1" | awk -v lib="$2.so." 'index($1, lib) == 1 { print $3 }')
    [ -n "$path" ] && dpkg -S "*/${path##*/}" | head -n 1 | cut -d : -f 1
}

installed() {
    [ "$(dpkg-query -W -f '${Status}' "$1")" = "install ok installed" ]
}

is_conffile() {
    dpkg-query -W -f '${Conffiles}\n' "$1" | grep -q "^ $2 "
}

link_is() {
    [ "$(readlink "$1")" = "$2" ]
}

nginx_t() {
    nginx -q -t 2> /tmp/nginx-t.log || { cat /tmp/nginx-t.log >&2; return 1; }
}

for p in $edge_port $backend_port $redis_port; do
    if listening "$p"; then
        echo "deb-test: 127.0.0.1:$p is taken; set DEB_TEST_PORT" >&2
        exit 1
    fi
done

# no service starts by itself (the chroot's is already there)
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
fi

apt_get update update
if ! dpkg-query -W -f '${Status}' nginx redis-server 2>/dev/null \
     | grep -q '^install ok installed.*install ok installed$'
then
    apt_get base install --no-install-recommends nginx redis-server
fi

# the default site listens on port 80: not here
rm -f /etc/nginx/sites-enabled/default


echo "# install"

apt_get install install --no-install-recommends \
    "$dir"/libnginx-mod-http-gms_*.deb "$dir"/gms-token_*.deb

check "the module is in nginx's modules directory" \
    test -f /usr/lib/nginx/modules/ngx_http_gms_module.so
check "mod-http-gms.conf loads it" \
    grep -qx 'load_module modules/ngx_http_gms_module.so;' "$available"
check "it is enabled through /etc/nginx/modules-enabled" \
    link_is "$enabled" "$available"
check "the module depends on nginx's ABI" \
    depends_on libnginx-mod-http-gms 'nginx-abi-[0-9.]+-[0-9]+'
module=/usr/lib/nginx/modules/ngx_http_gms_module.so
for lib in libhiredis libjansson libcrypto; do
    pkg=$(lib_package $module $lib || true)
    check "the module depends on ${pkg:-the package of $lib}" \
        depends_on libnginx-mod-http-gms "${pkg:-$lib not linked}"
done
for lib in libhiredis libjansson libcurl libssl; do
    pkg=$(lib_package /usr/bin/gms-token $lib || true)
    check "gms-token depends on ${pkg:-the package of $lib}" \
        depends_on gms-token "${pkg:-$lib not linked}"
done
check "nginx -t with the module enabled" nginx_t

check "gms-token --help" sh -c 'gms-token --help | grep -q "^Usage: gms-token"'
check "gms-token's man page" test -f /usr/share/man/man1/gms-token.1.gz

check "gms-token is installed, its maintainer scripts passed" \
    installed gms-token
# where debhelper put the unit: /lib/systemd/system up to bookworm,
# /usr/lib/systemd/system from trixie
unit=$(dpkg -L gms-token | grep '/systemd/system/gms-token-follow\.service$' \
    || echo "(no gms-token-follow.service in gms-token)")
check "the follow service is installed, for /usr/bin/gms-token" \
    grep -q '^ExecStart=/usr/bin/gms-token follow' "$unit"
check "with its settings from $settings" \
    grep -qx "EnvironmentFile=$settings" "$unit"
check "which is there, a conffile" is_conffile gms-token "$settings"
check "deb-systemd-helper took note of the unit" test -e "$dsh_state"
check "but did not enable it" test ! -e "$wants" -a ! -L "$wants"


echo "# a token checked at the edge"

cat > /etc/nginx/conf.d/deb-test-backend.conf <<CONF
server {
    listen 127.0.0.1:$backend_port;
    return 200 "actor=\$http_x_datahub_actor\n";
}
CONF

cat > /etc/nginx/conf.d/deb-test-gms.conf <<CONF
gms_token_redis 127.0.0.1:$redis_port;
gms_token_salt "$salt";

server {
    listen 127.0.0.1:$edge_port;

    location / {
        gms_token_auth on;
        proxy_set_header X-DataHub-Actor \$gms_token_actor;
        proxy_pass http://127.0.0.1:$backend_port;
    }

    location = /metrics {
        gms_token_metrics;
    }
}
CONF

check "nginx -t with gms_token_auth on" nginx_t

redis-server --bind 127.0.0.1 --port "$redis_port" --daemonize yes \
    --pidfile /run/deb-test-redis.pid --dir /tmp --save '' \
    --appendonly no --logfile /tmp/deb-test-redis.log
wait_listening "$redis_port"

check "gms-token put seeds the token" sh -c \
    "printf %s '$token' | gms-token put --token-stdin --salt '$salt' \
        --actor '$actor' --redis 127.0.0.1:$redis_port > /dev/null"

start_nginx "$edge_port"

get "$edge_port" /entities/x
check "no token: 401" status_is 401
get "$edge_port" /entities/x "Bearer not-$token"
check "an unknown token: 401" status_is 401
get "$edge_port" /entities/x "Bearer $token"
check "the seeded token: 200" status_is 200
check "and the backend is told its user" body_is "actor=$actor"


echo "# upgrade: the new build serves"

# the build that serves, as gms_module_build_info shows it: sets $build
build_is() {
    get "$edge_port" /metrics
    build=$(sed -n 's/^gms_module_build_info{version="\([^"]*\)".*} 1\r*$/\1/p' \
                <<< "$body")
    [ "$build" = "$1" ]
}

# polled: the old master's workers may take a last request
serves_build() {
    local i

    for i in $(seq 50); do
        build_is "$1" && return 0
        sleep 0.1
    done
    echo "# gms_module_build_info: version \"$build\", not \"$1\"" >&2
    return 1
}

nginx_pid() {
    cat /run/nginx.pid 2>/dev/null
}

version=$(dpkg-query -W -f '${Version}' libnginx-mod-http-gms)
next_version=$(dpkg-deb -f "$next"/libnginx-mod-http-gms_*.deb Version)

check "the installed build serves, version $version" serves_build "$version"

# the maintainer scripts may act on nginx now (invoke-rc.d asks
# policy-rc.d), on no other service; the chroot has no service manager:
# invoke-rc.d runs /etc/init.d/nginx, as on a sysvinit host
cp /usr/sbin/policy-rc.d /tmp/policy-rc.d.saved
cat > /usr/sbin/policy-rc.d <<'POLICY'
#!/bin/sh
for arg; do [ "$arg" = nginx ] && exit 0; done
exit 101
POLICY

pid=$(nginx_pid)
apt_get upgrade install --no-install-recommends \
    "$next"/libnginx-mod-http-gms_*.deb "$next"/gms-token_*.deb
check "upgraded to $next_version" test \
    "$(dpkg-query -W -f '${Version}' libnginx-mod-http-gms)" = "$next_version"
check "which serves: nginx runs the new build" serves_build "$next_version"
check "nginx was upgraded in place (a new master)" \
    test -n "$(nginx_pid)" -a "$(nginx_pid)" != "$pid"
check "by /etc/init.d/nginx upgrade, not a restart" \
    grep -q 'Upgrading binary' /tmp/apt-upgrade.log
get "$edge_port" /entities/x "Bearer $token"
check "the seeded token: 200 still" status_is 200

# the configuration nginx -t refuses next logs an emerg
check "no alert or crash in nginx's error log" \
    sh -c '! grep -E "\[(alert|emerg)\]|signal [0-9]+" /var/log/nginx/error.log'

echo 'gms_no_such_directive on;' > /etc/nginx/conf.d/deb-test-broken.conf
pid=$(nginx_pid)
apt_get broken install --no-install-recommends --reinstall \
    "$next"/libnginx-mod-http-gms_*.deb
check "nginx -t failing, the upgrade still installs" \
    installed libnginx-mod-http-gms
check "and says that nginx needs a restart" \
    grep -q 'nginx -t fails: .* then restart nginx' /tmp/apt-broken.log
check "nginx is left running as it was" \
    test "$(nginx_pid)" = "$pid" -a -n "$pid"
check "and serves" serves_build "$next_version"
rm /etc/nginx/conf.d/deb-test-broken.conf

stop_nginx
apt_get stopped install --no-install-recommends --reinstall \
    "$next"/libnginx-mod-http-gms_*.deb
check "a stopped nginx is not started by the upgrade" \
    not_listening "$edge_port"

mv /tmp/policy-rc.d.saved /usr/sbin/policy-rc.d

# policy-rc.d forbids it again, as in a container: nginx untouched, and
# told to be restarted
start_nginx "$edge_port"
pid=$(nginx_pid)
apt_get denied install --no-install-recommends --reinstall \
    "$next"/libnginx-mod-http-gms_*.deb
check "policy-rc.d forbidding it, nginx is left running as it was" \
    test "$(nginx_pid)" = "$pid" -a -n "$pid"
check "and the upgrade says that it needs a restart" \
    grep -q 'nginx runs but was not restarted' /tmp/apt-denied.log
stop_nginx


echo "# removal"

# the administrator's own configuration that uses the module goes first
rm /etc/nginx/conf.d/deb-test-gms.conf
apt_get remove remove libnginx-mod-http-gms

check "the module is gone" \
    test ! -e /usr/lib/nginx/modules/ngx_http_gms_module.so
check "its modules-enabled link is gone" test ! -e "$enabled"
check "kept as .removed, as Debian's module packages do" \
    test -L "$enabled.removed"
check "nginx -t without the module" nginx_t

start_nginx "$backend_port"
get "$backend_port" /
check "nginx starts and serves without it" status_is 200
stop_nginx

apt_get reinstall install --no-install-recommends \
    "$dir"/libnginx-mod-http-gms_*.deb
check "reinstalled, it is enabled again" link_is "$enabled" "$available"
check "nginx -t with it again" nginx_t

apt_get purge purge libnginx-mod-http-gms
check "purged, no link is left" \
    test ! -e "$enabled" -a ! -L "$enabled.removed"
check "nginx -t after the purge" nginx_t


echo "# gms-token removed, purged"

# as the administrator would, before 'systemctl enable'
echo 'GMS_URL=http://gms.example.internal:8080' >> "$settings"
apt_get remove-tool remove gms-token
check "the tool is gone" test ! -e /usr/bin/gms-token
check "the unit is gone" test ! -e "$unit"
check "the edited settings stay, as a conffile does" \
    grep -qx 'GMS_URL=http://gms.example.internal:8080' "$settings"

apt_get purge-tool purge gms-token
check "purged, the settings are gone" test ! -e "$settings"
check "and deb-systemd-helper forgot the unit" test ! -e "$dsh_state"
check "no link to the unit is left" \
    test -z "$(find /etc/systemd -name 'gms-token-follow*')"

if [ "$failed" = 0 ]; then
    echo "deb-test: all checks passed"
fi
exit "$failed"
