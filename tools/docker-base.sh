#!/bin/sh
# make docker-base: the base image the Dockerfile and make test-matrix
# build on (BASE_IMAGE: debian:trixie, debian:bookworm or debian:forky)
# when the Docker daemon has none and cannot pull one (these machines
# reach Debian's archive, not Docker Hub).
#
#   1. the image already local: nothing to do;
#   2. 'docker pull' works: that image;
#   3. else debootstrap --variant=minbase from the Debian mirror this
#      host's own apt sources name (nothing hard-coded; the same archive
#      serves every release), with that release's updates and security
#      suites in its sources.list, upgraded from them, then 'docker
#      import'.  forky is Debian's testing: debootstrap's 'sid' script
#      makes it, and its apt does not refuse a Release file past its
#      Valid-Until (testing's often is).
#
#   BASE_IMAGE     the tag to make (debian:trixie)
#   DOCKER         the docker client (docker)
#   PULL_TIMEOUT   seconds a pull may take before it is given up (60)
#
# Needs a Docker daemon (tools/dockerd.sh starts one), debootstrap and root.

set -eu

image=${BASE_IMAGE:-debian:trixie}
docker=${DOCKER:-docker}

say() { echo "docker-base: $*" >&2; }
die() { say "$*"; exit 1; }

if "$docker" image inspect "$image" >/dev/null 2>&1; then
    say "$image is present"
    exit 0
fi

if timeout "${PULL_TIMEOUT:-60}" "$docker" pull -q "$image" >/dev/null 2>&1
then
    say "$image pulled"
    exit 0
fi

script=
case $image in
    debian:bookworm|debian:12) suite=bookworm ;;
    debian:trixie|debian:13)   suite=trixie ;;
    debian:forky|debian:14)    suite=forky script=sid ;;
    *) die "$image is neither local nor pullable, and only debian:bookworm," \
           "debian:trixie and debian:forky can be made here" ;;
esac

[ "$(id -u)" = 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 \
    || die "debootstrap not found (apt-get install debootstrap)"

# "suite uri" for every deb line of the host's apt sources, one-line
# (sources.list, *.list) and deb822 (*.sources) formats
apt_sources() {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\)[[:space:]]\{1,\}\([^[:space:]]\{1,\}\).*/\3 \2/p' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '
            function flush(  n, m, i, j, u, s) {
                if (types ~ /(^| )deb( |$)/ && enabled != "no") {
                    n = split(uris, u, " "); m = split(suites, s, " ")
                    for (i = 1; i <= n; i++)
                        for (j = 1; j <= m; j++) print s[j], u[i]
                }
                types = uris = suites = enabled = ""
            }
            /^[[:space:]]*$/ { flush(); next }
            /^[[:space:]]*#/ { next }
            {
                key = $1; sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
                if (key == "Types") types = $0
                else if (key == "URIs") uris = $0
                else if (key == "Suites") suites = $0
                else if (key == "Enabled") enabled = $0
            }
            END { flush() }' "$f"
    done
}

# the host's Debian archive: the URI of its first suite that is a release
# of its own (not -updates, -security or -backports); its security
# archive: the URI of its -security suite
sources=$(apt_sources)
mirror=$(printf '%s\n' "$sources" \
    | awk '$1 !~ /-(updates|security|backports|proposed-updates)$/ \
           { print $2; exit }')
[ -n "$mirror" ] \
    || die "no Debian archive in this host's apt sources" \
           "(/etc/apt/sources.list, /etc/apt/sources.list.d/)"
security=$(printf '%s\n' "$sources" \
    | awk '$1 ~ /-security$/ { print $2; exit }')
updates=$mirror

root=$(mktemp -d /tmp/gms-docker-base.XXXXXX)
trap 'rm -rf "$root"' EXIT

say "debootstrap --variant=minbase $suite from $mirror (log: $root.log)"
debootstrap --variant=minbase "$suite" "$root" "$mirror" \
        ${script:+/usr/share/debootstrap/scripts/$script} > "$root.log" 2>&1 \
    || { tail -n 20 "$root.log" >&2; die "debootstrap failed"; }

{
    echo "deb $mirror $suite main"
    [ -z "$updates" ] || echo "deb $updates $suite-updates main"
    [ -z "$security" ] || echo "deb $security $suite-security main"
} > "$root/etc/apt/sources.list"
[ "$suite" != forky ] \
    || echo 'Acquire::Check-Valid-Until "false";' \
        > "$root/etc/apt/apt.conf.d/90gms-testing-valid-until"
[ -n "$security" ] \
    || say "warning: no $suite-security in this host's apt sources:" \
           "the image gets no security updates"

# the security and point-release updates debootstrap's suite lacks, then
# what a container image does not need: apt's lists and caches
chroot "$root" sh -c 'apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get -y -qq upgrade &&
    apt-get clean && rm -rf /var/lib/apt/lists/*' >> "$root.log" 2>&1 \
    || { tail -n 20 "$root.log" >&2; die "apt-get upgrade in the image failed"; }
rm -f "$root.log"

tar -C "$root" --numeric-owner -c . \
    | "$docker" import --change 'CMD ["bash"]' - "$image" >/dev/null \
    || die "docker import failed"
say "$image made with debootstrap ($( "$docker" image inspect -f '{{.Size}}' "$image" ) bytes)"
