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
# nginx's own $variables are never touched.  Every setting is checked first, so that a mistake is reported
# by the variable's name before nginx starts.  The variables are described
# in README.md, "Container".
#
# GMS_EDGE_CONF_DIR (/etc/gms-edge) and GMS_EDGE_RUN_DIR (/run/gms-edge as
# root, else /tmp/gms-edge) move the template and includes, and the rendered
# file, pid file and temporary files; t/21-docker-template.t uses them to
# run this script outside a container.

set -eu

die() {
    echo "gms-edge: $*" >&2
    exit 1
}

nl='
'

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

# a secret nginx's master reads at start: an absolute path of plain
# characters (it goes into the configuration as it is), readable now
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

# VAR, or the content of the file named by VAR_FILE with one trailing
# newline dropped (as gms-token's --salt-file), into $value
file_env() {
    eval "v=\${$1-} f=\${$1_FILE-}"

    if [ -n "$f" ]; then
        [ -z "$v" ] || die "$1 and $1_FILE are both set"
        v=$(cat -- "$f" && echo x) || die "$1_FILE: cannot read '$f'"
        v=${v%x}
        v=${v%"$nl"}
    fi

    value=$v
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

# the first IPv4 address of a name, into $ip (the module connects to Redis
# from the worker, without a resolver: it needs an address)
resolve_ipv4() {
    out=$(getent ahostsv4 "$1") || return 1
    set -f
    # shellcheck disable=SC2086
    set -- $out
    set +f
    ip=${1:-}
    [ -n "$ip" ]
}


render() {
    missing=
    for v in GMS_UPSTREAM SEARCH_UPSTREAM REDIS_ADDRESS; do
        eval "[ -n \"\${$v:-}\" ]" || missing="$missing $v"
    done
    [ -z "$missing" ] \
        || die "not set:$missing (the addresses of GMS, the search cluster" \
               "and Redis; see README.md, Container)"

    # no default salt is right: DataHub hashes token ids with its own
    # (set and empty is a choice, as gms_token_salt "" is)
    [ -n "${GMS_TOKEN_SALT+set}" ] || [ -n "${GMS_TOKEN_SALT_FILE:-}" ] \
        || die "GMS_TOKEN_SALT or GMS_TOKEN_SALT_FILE must be set to GMS's" \
               "token salt (DATAHUB_TOKEN_SERVICE_SALT; before DataHub 1.5" \
               "its default is ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O=);" \
               "GMS_TOKEN_SALT= (set and empty) only if GMS has none"

    [ -f "$template" ] || die "no template: $template"

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

    # Redis: an address ([ipv6]:port too) or a unix socket; a name is
    # resolved here, once (nginx's resolver reads no /etc/hosts)
    redis=$REDIS_ADDRESS
    check_address "$redis" \
        || die "REDIS_ADDRESS: '$redis' is neither host:port nor unix:/path"

    case $redis in
        unix:*) ;;
        \[*) ;;
        *)
            host=${redis%:*}
            if ! is_ipv4 "$host"; then
                resolve_ipv4 "$host" \
                    || die "REDIS_ADDRESS: cannot resolve '$host' (IPv4)"
                echo "gms-edge: REDIS_ADDRESS: $host is $ip" >&2
                redis=$ip:${redis##*:}
            fi ;;
    esac

    NGX_REDIS=$redis

    file_env GMS_REDIS_PASSWORD
    if [ -n "$value" ]; then
        ngx_quote "password=$value"
        # shellcheck disable=SC2089  # quotes for nginx's parser, not sh's
        NGX_REDIS="$NGX_REDIS \"$quoted\""
    fi

    if [ -n "${REDIS_DB:-}" ]; then
        case $REDIS_DB in
            *[!0-9]*) die "REDIS_DB: '$REDIS_DB' is not a number" ;;
        esac
        NGX_REDIS="$NGX_REDIS db=$REDIS_DB"
    fi

    NGX_REDIS_TIMEOUT=${REDIS_TIMEOUT:-250ms}
    case $NGX_REDIS_TIMEOUT in
        ''|[!0-9]*|*[!0-9a-z]*) die "REDIS_TIMEOUT: '$NGX_REDIS_TIMEOUT'" \
                                    "is not a time such as 250ms or 1s" ;;
    esac

    ngx_quote "${GMS_TOKEN_KEY_PREFIX-gms:}"
    NGX_KEY_PREFIX=$quoted

    file_env GMS_TOKEN_SALT
    ngx_quote "$value"
    NGX_SALT=$quoted

    # GMS's signing key and the system client's secret: files only (the
    # key mints tokens; an environment variable would reach the workers)
    NGX_CREDENTIALS=
    if [ -n "${GMS_TOKEN_SIGNING_KEY_FILE:-}" ]; then
        check_secret_file GMS_TOKEN_SIGNING_KEY_FILE \
                          "$GMS_TOKEN_SIGNING_KEY_FILE"
        NGX_CREDENTIALS="gms_token_signing_key_file $GMS_TOKEN_SIGNING_KEY_FILE;"
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

    cache=${GMS_TOKEN_CACHE:-zone=gms_tokens:16m ttl=30s negative_ttl=5s stale=60s}
    case $cache in
        off) NGX_CACHE='# gms_token_cache: off (GMS_TOKEN_CACHE=off)' ;;
        *[!A-Za-z0-9_=:.\ ]*) die "GMS_TOKEN_CACHE: '$cache': expected" \
                                  "the parameters of gms_token_cache, or off" ;;
        *) NGX_CACHE="gms_token_cache $cache;" ;;
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

    # in the image /run/gms-edge exists (root's, 0755: the workers reach
    # their temporary files under it, and cannot write the configuration)
    mkdir -p "$run_dir" || die "cannot create $run_dir"

    # the rendered file holds the salt and the Redis password: owner only
    (
        umask 077
        # shellcheck disable=SC2090
        export NGX_CONF_DIR NGX_RUN_DIR NGX_LISTEN_PORT NGX_WORKER_PROCESSES \
               NGX_USER NGX_GMS_SERVERS NGX_SEARCH_SERVERS NGX_REDIS \
               NGX_REDIS_TIMEOUT NGX_KEY_PREFIX NGX_SALT NGX_CACHE \
               NGX_METRICS_ALLOW NGX_CREDENTIALS NGX_FRONTEND_SERVERS

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
                  ${NGX_SEARCH_SERVERS} ${NGX_REDIS} ${NGX_REDIS_TIMEOUT}
                  ${NGX_KEY_PREFIX} ${NGX_SALT} ${NGX_CACHE}
                  ${NGX_METRICS_ALLOW} ${NGX_CREDENTIALS}
                  ${NGX_FRONTEND_SERVERS}' \
            < "$layout" > "$tmp" \
            || { rm -f "$layout" "$tmp"; exit 1; }
        rm -f "$layout"
        mv -f "$tmp" "$conf"
    ) || die "cannot write $conf"

    echo "gms-edge: port $NGX_LISTEN_PORT; GMS $GMS_UPSTREAM;" \
         "search $SEARCH_UPSTREAM;" \
         "Redis $redis${FRONTEND_UPSTREAM:+; frontend $FRONTEND_UPSTREAM}" >&2
}


conf_dir=${GMS_EDGE_CONF_DIR:-/etc/gms-edge}
if [ "$(id -u)" = 0 ]; then
    run_dir=${GMS_EDGE_RUN_DIR:-/run/gms-edge}
else
    run_dir=${GMS_EDGE_RUN_DIR:-/tmp/gms-edge}
fi
template=$conf_dir/nginx.conf.template
conf=$run_dir/nginx.conf

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
