#!/bin/sh
# The container's entry point (installed as /usr/local/bin/gms-edge-entrypoint).
#
#   gms-edge [nginx options]  render the configuration, then run nginx in the
#                             foreground as PID 1 (the default command);
#                             'gms-edge -t' only tests the configuration
#   -...                      the same as 'gms-edge -...'
#   gms-edge-render           render only, and print the file's path
#   anything else             run as given: gms-token ..., sh
#
# Rendering: the template (conf-examples/gms-edge.conf.template, in the
# image /etc/gms-edge/nginx.conf.template) loses the blocks that are not
# for this layout ('#@with FRONTEND_UPSTREAM' ... '#@end' without the
# variable, '#@without FRONTEND_UPSTREAM' ... '#@end' with it), then goes
# through envsubst with only the ${NGX_...} names computed below, so
# nginx's own $variables are never touched (not even in a value: the
# $cookie_... of GMS_TOKEN_SOURCE goes through as it is).  Every setting is
# checked first, so that a mistake is reported by the variable's name, in
# one line, before nginx starts.  The variables are described in
# docs/operations.md, "Container".
#
# GMS_EDGE_CONF_DIR (/etc/gms-edge) and GMS_EDGE_RUN_DIR (/run/gms-edge
# where this user can write, else /tmp/gms-edge) move the template and
# includes, and the rendered file, pid file and temporary files;
# GMS_EDGE_RESOLV_CONF (/etc/resolv.conf) and GMS_EDGE_HOSTS (/etc/hosts)
# the files host names are looked up in.  t/21-docker-template.t uses them
# to run this script outside a container.

set -eu

die() {
    echo "gms-edge: $*" >&2
    exit 1
}

nl='
'

# what was decided for the operator, told once every value has passed (a
# refusal is the one line of die)
notes=
note() {
    notes="$notes${notes:+$nl}gms-edge: $*"
}

is_port() {
    case $1 in
        ''|*[!0-9]*|0*) return 1 ;;
    esac
    [ "${#1}" -le 5 ] && [ "$1" -le 65535 ]
}

is_ipv4() {
    case $1 in
        ''|*[!0-9.]*|.*|*.|*..*) return 1 ;;
    esac

    old_ifs=$IFS
    IFS=.
    # shellcheck disable=SC2086  # split on the dots
    set -- $1
    IFS=$old_ifs
    [ "$#" -eq 4 ] || return 1

    for octet; do
        [ "${#octet}" -le 3 ] && [ "$octet" -le 255 ] || return 1
    done
}

# a file nginx's master reads at start (a secret, a certificate): an
# absolute path of plain characters (it goes into the configuration as it
# is), readable now
check_secret_file() {
    case $2 in
        /*) ;;
        *) die "$1: '$2' is not an absolute path" ;;
    esac
    case $2 in
        *[!A-Za-z0-9._/@+-]*) die "$1: '$2': letters, digits and ._/@+-" \
                                  "please" ;;
    esac
    [ -r "$2" ] || die "$1: cannot read '$2'"
}

# host:port (host a name, an IPv4 address or a bracketed IPv6 one, port
# 1..65535) or unix:/path
check_address() {
    addr=$1

    case $addr in
        unix:/*)
            case ${addr#unix:} in
                *[!A-Za-z0-9._/@+-]*) return 1 ;;
            esac
            return 0 ;;
        *:*) ;;
        *) return 1 ;;
    esac

    host=${addr%:*}
    port=${addr##*:}

    case $host in
        \[*\])
            case $host in
                \[*[!0-9A-Fa-f:.]*\]|\[\]) return 1 ;;
            esac ;;
        ''|*[!A-Za-z0-9._-]*) return 1 ;;
    esac

    is_port "$port"
}

# VAR PARAM: " PARAM_file=PATH" when VAR_FILE names a file (nginx reads
# it, by the module's rule for secret files, at start and on every
# reload), " \"PARAM=value\"" from VAR, added to $NGX_REDIS; neither:
# nothing.  The rendered configuration holds no password read from a file.
secret_param() {
    eval "v=\${$1-} f=\${$1_FILE-}"

    if [ -n "$f" ]; then
        [ -z "$v" ] || die "$1 and $1_FILE are both set"
        check_secret_file "$1_FILE" "$f"
        NGX_REDIS="$NGX_REDIS $2_file=$f"

    elif [ -n "$v" ]; then
        ngx_quote "$2=$v"
        # shellcheck disable=SC2089  # quotes for nginx's parser, not sh's
        NGX_REDIS="$NGX_REDIS \"$quoted\""
    fi
}

# a value for inside "..." in nginx's configuration, into $quoted
ngx_quote() {
    quoted=$(printf '%sx' "$1" | sed 's/[\\"]/\\&/g')
    quoted=${quoted%x}
}

# NAME LIST: "server a:1; server b:2; " from a space-separated list of
# addresses, into $servers
upstream_servers() {
    name=$1 servers=
    set -f
    # shellcheck disable=SC2086  # the list is split on purpose
    set -- $2
    set +f

    [ "$#" -gt 0 ] || die "$name is empty"

    for a; do
        check_address "$a" \
            || die "$name: '$a' is neither host:port nor unix:/path"
        servers="${servers}server $a; "
    done
}

# an IPv6 address as nginx takes it (no zone index: "fe80::1%eth0" is not)
is_ipv6() {
    case $1 in
        *:*) ;;
        *) return 1 ;;
    esac
    case $1 in
        *[!0-9A-Fa-f:.]*) return 1 ;;
    esac
}

# The resolver directive's parameters, into $resolver: RESOLVER as given,
# or every nameserver of the resolv.conf (what the container's libc asks:
# Docker's own DNS on a user-defined network) for a short valid=, so that
# a name that moves is followed within seconds whatever the record's TTL
resolver_params() {
    resolver=

    if [ -n "${RESOLVER:-}" ]; then
        case $RESOLVER in
            *[!][A-Za-z0-9._:=\ -]*)
                die "RESOLVER: '$RESOLVER': the parameters of nginx's" \
                    "resolver directive (addresses, valid=, ipv6=off)," \
                    "in letters, digits and ._:=[]- only" ;;
        esac
        set -f
        # shellcheck disable=SC2086  # the parameters are words
        set -- $RESOLVER
        set +f
        for p; do
            case $p in
                *=*) ;;
                *) resolver="$resolver $p" ;;
            esac
        done
        [ -n "$resolver" ] \
            || die "RESOLVER: '$RESOLVER' names no server's address"
        resolver="$*"
        return
    fi

    [ -r "$resolv_conf" ] || return 0

    # shellcheck disable=SC2034  # the rest of each line is not used
    while read -r key addr rest; do
        [ "$key" = nameserver ] || continue
        if is_ipv4 "$addr"; then
            resolver="$resolver $addr"
        elif is_ipv6 "$addr"; then
            resolver="$resolver [$addr]"
        else
            note "$resolv_conf: nameserver $addr left out (nginx's" \
                 "resolver takes no zone index or name)"
        fi
    done < "$resolv_conf"

    [ -z "$resolver" ] || resolver="${resolver# } valid=10s"
}

# The addresses of a name in the hosts file, in its order (nginx's resolver
# reads no /etc/hosts: Docker writes --add-host names and localhost there)
hosts_addresses() {
    [ -r "$hosts" ] || return 0
    awk -v name="$1" '
        { sub(/#.*/, "") }
        { for (i = 2; i <= NF; i++) if (tolower($i) == tolower(name)) {
              print $1
              next
          } }' "$hosts"
}

# VAR ADDRESS: a Redis or Sentinel address for the module, into $addr.  A
# name in the hosts file becomes its first IPv4 address there (else its
# first IPv6 one); any other name stays, for nginx's resolver, which looks
# it up again on every reconnect (a failover by DNS is followed): then
# there must be one
redis_address() {
    addr=$2

    case $addr in
        unix:*|\[*) return ;;
    esac

    host=${addr%:*}
    is_ipv4 "$host" && return

    ip=
    set -f
    for a in $(hosts_addresses "$host"); do
        if is_ipv4 "$a"; then
            ip=$a
            break
        fi
        if [ -z "$ip" ] && is_ipv6 "$a"; then
            ip="[$a]"
        fi
    done
    set +f

    if [ -n "$ip" ]; then
        note "$1: $host is $ip (from $hosts)"
        addr=$ip:${addr##*:}
        return
    fi

    [ -n "$resolver" ] \
        || die "$1: '$host' is a host name for nginx's resolver, and there" \
               "is none: set RESOLVER (no nameserver in $resolv_conf, no" \
               "'$host' in $hosts)"
}

# NAME VALUE: one more gms_token_redis_ssl_NAME line in $NGX_REDIS_SSL
ssl_directive() {
    NGX_REDIS_SSL="$NGX_REDIS_SSL${NGX_REDIS_SSL:+$nl    }"
    NGX_REDIS_SSL="${NGX_REDIS_SSL}gms_token_redis_ssl_$1 $2;"
}

# the default run directory: the image's /run/gms-edge belongs to its user
# (a tmpfs there with --read-only); another uid (docker run --user) cannot
# write it and gets one under /tmp
default_run_dir() {
    if mkdir -p /run/gms-edge 2>/dev/null \
       && [ -w /run/gms-edge ] && [ -x /run/gms-edge ]
    then
        run_dir=/run/gms-edge
    else
        run_dir=/tmp/gms-edge
    fi
}

render() {
    missing=
    for v in GMS_UPSTREAM SEARCH_UPSTREAM REDIS_ADDRESS; do
        eval "[ -n \"\${$v:-}\" ]" || missing="$missing $v"
    done
    [ -n "${REDIS_SENTINELS:-}" ] && missing=${missing% REDIS_ADDRESS}
    [ -z "$missing" ] \
        || die "not set:$missing (the addresses of GMS, the search cluster" \
               "and Redis, or REDIS_SENTINELS; see docs/operations.md," \
               "Container)"

    # no default salt is right: DataHub hashes token ids with its own
    # (set and empty is a choice, as gms_token_salt "" is)
    [ -n "${GMS_TOKEN_SALT+set}" ] || [ -n "${GMS_TOKEN_SALT_FILE:-}" ] \
        || die "GMS_TOKEN_SALT or GMS_TOKEN_SALT_FILE must be set to GMS's" \
               "token salt (DATAHUB_TOKEN_SERVICE_SALT; before DataHub 1.5" \
               "its default is ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O=);" \
               "GMS_TOKEN_SALT= (set and empty) only if GMS has none"

    [ -f "$template" ] || die "no template: $template"

    [ -n "$run_dir" ] || default_run_dir
    conf=$run_dir/nginx.conf

    case $conf_dir$run_dir in
        *[!A-Za-z0-9._/-]*) die "GMS_EDGE_CONF_DIR/GMS_EDGE_RUN_DIR: only" \
                                "letters, digits and ._/- please" ;;
    esac

    NGX_CONF_DIR=$conf_dir
    NGX_RUN_DIR=$run_dir

    NGX_LISTEN_PORT=${LISTEN_PORT:-8000}
    is_port "$NGX_LISTEN_PORT" \
        || die "LISTEN_PORT: '$NGX_LISTEN_PORT' is not a port number"

    NGX_WORKER_PROCESSES=${WORKER_PROCESSES:-auto}
    case $NGX_WORKER_PROCESSES in
        auto) ;;
        ''|*[!0-9]*|0*) die "WORKER_PROCESSES: '$NGX_WORKER_PROCESSES'" \
                            "is neither auto nor a number" ;;
    esac

    if [ "$(id -u)" = 0 ]; then
        NGX_USER='user www-data;'
    else
        NGX_USER="# not started as root: the workers run as uid $(id -u)"
    fi

    upstream_servers GMS_UPSTREAM "$GMS_UPSTREAM"
    NGX_GMS_SERVERS=$servers
    upstream_servers SEARCH_UPSTREAM "$SEARCH_UPSTREAM"
    NGX_SEARCH_SERVERS=$servers

    # DataHub's frontend for every path outside /api/gms/: the template's
    # '#@with FRONTEND_UPSTREAM' blocks are kept, its '#@without ...' ones
    # dropped (or the other way round, without it)
    NGX_FRONTEND_SERVERS=
    if [ -n "${FRONTEND_UPSTREAM:-}" ]; then
        upstream_servers FRONTEND_UPSTREAM "$FRONTEND_UPSTREAM"
        NGX_FRONTEND_SERVERS=$servers
        grep -qx '#@with FRONTEND_UPSTREAM' "$template" \
            || die "FRONTEND_UPSTREAM is set, but $template has no" \
                   "'#@with FRONTEND_UPSTREAM' block"
        keep=with drop=without
    else
        keep=without drop=with
    fi

    # nginx's resolver, for the names of Redis and the Sentinels
    resolver_params
    if [ -n "$resolver" ]; then
        NGX_RESOLVER="resolver $resolver;"
    else
        NGX_RESOLVER="# no resolver: no RESOLVER, no nameserver in $resolv_conf"
    fi

    # Redis: one address, or the Sentinels that name its master
    if [ -n "${REDIS_SENTINELS:-}" ]; then
        [ -z "${REDIS_ADDRESS:-}" ] \
            || die "REDIS_ADDRESS and REDIS_SENTINELS are both set: Redis" \
                   "itself, or the Sentinels that name its master"

        master=${REDIS_SENTINEL_MASTER:-}
        case $master in
            '') die "REDIS_SENTINEL_MASTER: not set: the name the" \
                    "Sentinels know the master by (REDIS_SENTINELS is set)" ;;
            *[!A-Za-z0-9._-]*) die "REDIS_SENTINEL_MASTER: '$master':" \
                                   "letters, digits and ._- please" ;;
        esac

        sentinels=
        set -f
        # shellcheck disable=SC2086  # the list is split on purpose
        set -- $REDIS_SENTINELS
        set +f
        [ "$#" -gt 0 ] || die "REDIS_SENTINELS is empty"
        for a; do
            case $a in
                unix:*) die "REDIS_SENTINELS: '$a': a Sentinel is" \
                            "host:port or [ipv6]:port" ;;
            esac
            check_address "$a" \
                || die "REDIS_SENTINELS: '$a' is not host:port"
            redis_address REDIS_SENTINELS "$a"
            sentinels="$sentinels $addr"
        done

        NGX_REDIS="gms_token_redis_sentinel${sentinels} master=$master"
        redis="master $master via Sentinels${sentinels}"
    else
        for v in REDIS_SENTINEL_MASTER REDIS_REPLICA \
                 GMS_REDIS_SENTINEL_PASSWORD GMS_REDIS_SENTINEL_PASSWORD_FILE
        do
            eval "[ -z \"\${$v:-}\" ]" \
                || die "$v: for Sentinel only, and REDIS_SENTINELS is not" \
                       "set (REDIS_ADDRESS is Redis itself)"
        done

        # an address ([ipv6]:port too) or a unix socket
        check_address "$REDIS_ADDRESS" \
            || die "REDIS_ADDRESS: '$REDIS_ADDRESS' is neither host:port" \
                   "nor unix:/path"
        redis_address REDIS_ADDRESS "$REDIS_ADDRESS"

        NGX_REDIS="gms_token_redis $addr"
        redis=$addr
    fi

    # TLS to Redis (and to the Sentinels): the gms_token_redis_ssl_*
    # directives, each from its REDIS_SSL_* variable
    case ${REDIS_TLS:-off} in
        on) tls=on ;;
        off) tls= ;;
        *) die "REDIS_TLS: '$REDIS_TLS' is neither on nor off" ;;
    esac

    ssl_vars='REDIS_SSL_TRUSTED_CERTIFICATE REDIS_SSL_CERTIFICATE
              REDIS_SSL_CERTIFICATE_KEY REDIS_SSL_NAME REDIS_SSL_VERIFY'
    NGX_REDIS_SSL=
    if [ -z "$tls" ]; then
        for v in $ssl_vars; do
            eval "[ -z \"\${$v:-}\" ]" \
                || die "$v: for TLS only, and REDIS_TLS is not on"
        done
        NGX_REDIS_SSL='# Redis without TLS (REDIS_TLS=off)'
    else
        # without a CA file: the system's store (a managed Redis)
        ca=${REDIS_SSL_TRUSTED_CERTIFICATE:-}
        if [ -n "$ca" ]; then
            check_secret_file REDIS_SSL_TRUSTED_CERTIFICATE "$ca"
            ssl_directive trusted_certificate "$ca"
        fi

        # mutual TLS (tls-auth-clients yes)
        cert=${REDIS_SSL_CERTIFICATE:-} key=${REDIS_SSL_CERTIFICATE_KEY:-}
        if [ -n "$cert" ] && [ -z "$key" ]; then
            die "REDIS_SSL_CERTIFICATE is set without REDIS_SSL_CERTIFICATE_KEY"
        elif [ -z "$cert" ] && [ -n "$key" ]; then
            die "REDIS_SSL_CERTIFICATE_KEY is set without REDIS_SSL_CERTIFICATE"
        elif [ -n "$cert" ]; then
            check_secret_file REDIS_SSL_CERTIFICATE "$cert"
            check_secret_file REDIS_SSL_CERTIFICATE_KEY "$key"
            ssl_directive certificate "$cert"
            ssl_directive certificate_key "$key"
        fi

        verify=${REDIS_SSL_VERIFY:-on}
        case $verify in
            on) ;;
            off) note "REDIS_SSL_VERIFY=off: Redis's certificate is not" \
                      "checked" ;;
            *) die "REDIS_SSL_VERIFY: '$verify' is neither on nor off" ;;
        esac

        # an address is checked against the certificate's IP entries
        name=${REDIS_SSL_NAME:-}
        case $name in
            *[!A-Za-z0-9.:_-]*) die "REDIS_SSL_NAME: '$name' is neither" \
                                    "a host name nor an address" ;;
        esac

        # a Sentinel names the master by its address, which leaves the
        # module nothing to check the master's certificate against
        [ -n "$name" ] || [ -z "${REDIS_SENTINELS:-}" ] \
            || [ "$verify" = off ] \
            || die "REDIS_SSL_NAME: required with REDIS_SENTINELS and" \
                   "REDIS_TLS=on: the name in the certificates of master" \
                   "and Sentinels (a Sentinel names the master by address)"

        [ -z "$name" ] || ssl_directive name "$name"
        ssl_directive verify "$verify"
    fi

    # the parameters in the order of the directives' syntax
    if [ -n "$tls" ] && [ -z "${REDIS_SENTINELS:-}" ]; then
        NGX_REDIS="$NGX_REDIS tls"
    fi

    secret_param GMS_REDIS_PASSWORD password
    secret_param GMS_REDIS_SENTINEL_PASSWORD sentinel_password

    if [ -n "${REDIS_DB:-}" ]; then
        case $REDIS_DB in
            *[!0-9]*) die "REDIS_DB: '$REDIS_DB' is not a number" ;;
        esac
        NGX_REDIS="$NGX_REDIS db=$REDIS_DB"
    fi

    if [ -n "${REDIS_SENTINELS:-}" ]; then
        [ -z "$tls" ] || NGX_REDIS="$NGX_REDIS tls"
        case ${REDIS_REPLICA:-} in
            '') ;;
            prefer|off) NGX_REDIS="$NGX_REDIS replica=$REDIS_REPLICA" ;;
            *) die "REDIS_REPLICA: '$REDIS_REPLICA' is neither prefer nor off" ;;
        esac
    fi

    NGX_REDIS="$NGX_REDIS;"
    [ -z "$tls" ] || redis="$redis (TLS)"

    NGX_REDIS_TIMEOUT=${REDIS_TIMEOUT:-250ms}
    case $NGX_REDIS_TIMEOUT in
        ''|[!0-9]*|*[!0-9a-z]*) die "REDIS_TIMEOUT: '$NGX_REDIS_TIMEOUT'" \
                                    "is not a time such as 250ms or 1s" ;;
    esac

    ngx_quote "${GMS_TOKEN_KEY_PREFIX-gms:}"
    NGX_KEY_PREFIX=$quoted

    # the salt's file, named: nginx reads it as gms-token does
    if [ -n "${GMS_TOKEN_SALT_FILE:-}" ]; then
        [ -z "${GMS_TOKEN_SALT:-}" ] \
            || die "GMS_TOKEN_SALT and GMS_TOKEN_SALT_FILE are both set"
        check_secret_file GMS_TOKEN_SALT_FILE "$GMS_TOKEN_SALT_FILE"
        NGX_SALT="gms_token_salt_file $GMS_TOKEN_SALT_FILE;"
    else
        ngx_quote "$GMS_TOKEN_SALT"
        # shellcheck disable=SC2089  # quotes for nginx's parser, not sh's
        NGX_SALT="gms_token_salt \"$quoted\";"
    fi

    # GMS's signing key and the system client's secret: files only (the
    # key mints tokens; an environment variable would reach the workers).
    # While GMS's key rotates, the old one too: a token signed by either
    # verifies
    NGX_CREDENTIALS=
    if [ -n "${GMS_TOKEN_SIGNING_KEY_FILE:-}" ]; then
        check_secret_file GMS_TOKEN_SIGNING_KEY_FILE \
                          "$GMS_TOKEN_SIGNING_KEY_FILE"
        NGX_CREDENTIALS="gms_token_signing_key_file $GMS_TOKEN_SIGNING_KEY_FILE;"
    fi
    if [ -n "${GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE:-}" ]; then
        [ -n "$NGX_CREDENTIALS" ] \
            || die "GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE is set without" \
                   "GMS_TOKEN_SIGNING_KEY_FILE (the key GMS signs with now)"
        check_secret_file GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE \
                          "$GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE"
        line="gms_token_signing_key_file $GMS_TOKEN_SIGNING_KEY_PREVIOUS_FILE;"
        NGX_CREDENTIALS="$NGX_CREDENTIALS$nl    $line"
    fi
    if [ -n "${GMS_SYSTEM_CLIENT_SECRET_FILE:-}" ]; then
        id=${GMS_SYSTEM_CLIENT_ID:-__datahub_system}
        case $id in
            ''|*[!A-Za-z0-9._-]*) die "GMS_SYSTEM_CLIENT_ID: '$id': letters," \
                                      "digits and ._- please" ;;
        esac
        check_secret_file GMS_SYSTEM_CLIENT_SECRET_FILE \
                          "$GMS_SYSTEM_CLIENT_SECRET_FILE"
        line="gms_token_system_client $id"
        line="$line secret_file=$GMS_SYSTEM_CLIENT_SECRET_FILE;"
        NGX_CREDENTIALS="$NGX_CREDENTIALS${NGX_CREDENTIALS:+$nl    }$line"
    elif [ -n "${GMS_SYSTEM_CLIENT_ID:-}" ]; then
        die "GMS_SYSTEM_CLIENT_ID is set without GMS_SYSTEM_CLIENT_SECRET_FILE"
    fi
    [ -n "$NGX_CREDENTIALS" ] \
        || NGX_CREDENTIALS='# no GMS_TOKEN_SIGNING_KEY_FILE: tokens checked in Redis only'

    # the token from a cookie or another header, for clients that cannot
    # set Authorization: an nginx variable's name, nothing else
    source=${GMS_TOKEN_SOURCE:-}
    case $source in
        '')
            NGX_TOKEN_SOURCE='# the token from the Authorization header' ;;
        [!\$]*|\$|\$*[!A-Za-z0-9_]*)
            die "GMS_TOKEN_SOURCE: '$source' is not an nginx variable" \
                "such as \$cookie_gms_token or \$http_x_gms_token" ;;
        *)
            NGX_TOKEN_SOURCE="gms_token_source $source;" ;;
    esac

    # the DataHub release GMS runs: nginx refuses one it does not know,
    # naming the known ones
    NGX_DATAHUB_VERSION=${GMS_DATAHUB_VERSION:-0.13.0}
    case $NGX_DATAHUB_VERSION in
        *[!0-9.]*|.*|*.|*..*|*.*.*.*.*) version_ok= ;;
        *.*) version_ok=1 ;;
        *) version_ok= ;;
    esac
    [ -n "$version_ok" ] \
        || die "GMS_DATAHUB_VERSION: '$NGX_DATAHUB_VERSION' is not a" \
               "DataHub release such as 1.4.0"

    # what that GMS serves without a credential: the shipped include file
    # of its release range (conf-examples/open-paths/, in the image)
    case $NGX_DATAHUB_VERSION in
        0.*) NGX_OPEN_PATHS=datahub-0.13.conf ;;
        1.0|1.0.*|1.1|1.1.*) NGX_OPEN_PATHS=datahub-1.0.conf ;;
        1.2|1.2.*) NGX_OPEN_PATHS=datahub-1.2.conf ;;
        1.3|1.3.*|1.4|1.4.*) NGX_OPEN_PATHS=datahub-1.3.conf ;;
        *) NGX_OPEN_PATHS=datahub-1.5.conf ;;
    esac

    NGX_PREFLIGHT=${GMS_TOKEN_PREFLIGHT:-check}
    case $NGX_PREFLIGHT in
        check|pass) ;;
        *) die "GMS_TOKEN_PREFLIGHT: '$NGX_PREFLIGHT' is neither check" \
               "nor pass" ;;
    esac

    cache=${GMS_TOKEN_CACHE:-zone=gms_tokens:16m ttl=30s negative_ttl=5s stale=60s}
    case $cache in
        off) NGX_CACHE='# gms_token_cache: off (GMS_TOKEN_CACHE=off)' ;;
        *[!A-Za-z0-9_=:.\ ]*) die "GMS_TOKEN_CACHE: '$cache': expected" \
                                  "the parameters of gms_token_cache, or off" ;;
        *) NGX_CACHE="gms_token_cache $cache;" ;;
    esac

    # a token GMS signed that Redis does not have yet: the module's default
    # (pass to GMS with a signing key and a cache) unless set
    unknown=${GMS_TOKEN_UNKNOWN_SIGNED:-}
    case $unknown in
        '') NGX_UNKNOWN_SIGNED='# gms_token_unknown_signed: the default' ;;
        refuse) NGX_UNKNOWN_SIGNED='gms_token_unknown_signed refuse;' ;;
        pass)
            if [ -z "${GMS_TOKEN_SIGNING_KEY_FILE:-}" ] || [ "$cache" = off ]
            then
                die "GMS_TOKEN_UNKNOWN_SIGNED=pass needs" \
                    "GMS_TOKEN_SIGNING_KEY_FILE and a cache" \
                    "(GMS_TOKEN_CACHE not off)"
            fi
            NGX_UNKNOWN_SIGNED='gms_token_unknown_signed pass;' ;;
        *) die "GMS_TOKEN_UNKNOWN_SIGNED: '$unknown' is neither pass" \
               "nor refuse" ;;
    esac

    NGX_METRICS_ALLOW=
    set -f
    # shellcheck disable=SC2086
    for a in ${METRICS_ALLOW-127.0.0.1}; do
        case $a in
            all) ;;
            *[!0-9A-Fa-f.:/]*) die "METRICS_ALLOW: '$a' is not an address" \
                                   "or a network" ;;
        esac
        NGX_METRICS_ALLOW="${NGX_METRICS_ALLOW}allow $a; "
    done
    set +f

    # in the image /run/gms-edge exists, its user's: the workers reach
    # their temporary files under it
    # (--read-only without a tmpfs of its own there: say which one)
    mkdir -p "$run_dir" 2>/dev/null && [ -w "$run_dir" ] \
        || die "cannot write $run_dir (with --read-only, mount" \
               "--tmpfs /run/gms-edge:uid=$(id -u),gid=$(id -g),mode=0700)"

    # the rendered file holds the salt and the Redis password: owner only
    (
        umask 077
        # shellcheck disable=SC2090
        export NGX_CONF_DIR NGX_RUN_DIR NGX_LISTEN_PORT NGX_WORKER_PROCESSES \
               NGX_USER NGX_GMS_SERVERS NGX_SEARCH_SERVERS NGX_RESOLVER \
               NGX_REDIS NGX_REDIS_SSL NGX_REDIS_TIMEOUT NGX_KEY_PREFIX \
               NGX_SALT NGX_CACHE NGX_METRICS_ALLOW NGX_CREDENTIALS \
               NGX_FRONTEND_SERVERS NGX_TOKEN_SOURCE NGX_PREFLIGHT \
               NGX_UNKNOWN_SIGNED NGX_DATAHUB_VERSION NGX_OPEN_PATHS

        layout=$(mktemp "$run_dir/nginx.conf.XXXXXX")
        tmp=$(mktemp "$run_dir/nginx.conf.XXXXXX")
        sed -e "/^#@$drop FRONTEND_UPSTREAM\$/,/^#@end\$/d" \
            -e "/^#@$keep FRONTEND_UPSTREAM\$/d" \
            -e '/^#@end$/d' \
            < "$template" > "$layout" \
            || { rm -f "$layout" "$tmp"; exit 1; }
        # shellcheck disable=SC2016  # the names are for envsubst, not sh
        envsubst '${NGX_CONF_DIR} ${NGX_RUN_DIR} ${NGX_LISTEN_PORT}
                  ${NGX_WORKER_PROCESSES} ${NGX_USER} ${NGX_GMS_SERVERS}
                  ${NGX_SEARCH_SERVERS} ${NGX_RESOLVER} ${NGX_REDIS}
                  ${NGX_REDIS_SSL} ${NGX_REDIS_TIMEOUT} ${NGX_KEY_PREFIX}
                  ${NGX_SALT} ${NGX_CACHE} ${NGX_METRICS_ALLOW}
                  ${NGX_CREDENTIALS} ${NGX_FRONTEND_SERVERS}
                  ${NGX_TOKEN_SOURCE} ${NGX_PREFLIGHT}
                  ${NGX_UNKNOWN_SIGNED} ${NGX_DATAHUB_VERSION}
                  ${NGX_OPEN_PATHS}' \
            < "$layout" > "$tmp" \
            || { rm -f "$layout" "$tmp"; exit 1; }
        rm -f "$layout"
        mv -f "$tmp" "$conf"
    ) || die "cannot write $conf"

    [ -z "$notes" ] || printf '%s\n' "$notes" >&2
    echo "gms-edge: port $NGX_LISTEN_PORT; GMS $GMS_UPSTREAM;" \
         "search $SEARCH_UPSTREAM;" \
         "Redis $redis${FRONTEND_UPSTREAM:+; frontend $FRONTEND_UPSTREAM}" >&2
}


conf_dir=${GMS_EDGE_CONF_DIR:-/etc/gms-edge}
template=$conf_dir/nginx.conf.template
resolv_conf=${GMS_EDGE_RESOLV_CONF:-/etc/resolv.conf}
hosts=${GMS_EDGE_HOSTS:-/etc/hosts}

# only for rendering: another command (gms-token ...) creates nothing
run_dir=${GMS_EDGE_RUN_DIR:-}
conf=

case ${1:-gms-edge} in
    gms-edge)
        [ "$#" -gt 0 ] && shift
        render
        exec nginx -c "$conf" -e stderr "$@" ;;
    -*)
        render
        exec nginx -c "$conf" -e stderr "$@" ;;
    gms-edge-render)
        render
        echo "$conf" ;;
    *)
        exec "$@" ;;
esac
