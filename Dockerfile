# The GMS edge in a container: Debian's nginx with ngx_http_gms_module and
# the gms-token tool.  See docs/operations.md, "Container".
#
#   make docker-base            # debian:trixie, made with debootstrap when
#                               # no registry can be reached
#   docker build -t gms-edge .  # --build-arg BASE_IMAGE=debian:bookworm
#   docker run -d -p 8000:8000 --read-only --tmpfs /run/gms-edge \
#       -e GMS_UPSTREAM=gms:8080 -e SEARCH_UPSTREAM=elasticsearch:9200 \
#       -e REDIS_ADDRESS=redis:6379 -e GMS_TOKEN_SALT_FILE=/run/secrets/salt \
#       -v /srv/gms-edge/salt:/run/secrets/salt:ro gms-edge
#
# and, from the same image, the process that keeps Redis equal to DataHub
# (docs/gms-token.md, "Following GMS"):
#
#   docker run -d --no-healthcheck -v /srv/gms-token:/run/secrets:ro \
#       gms-edge gms-token follow --gms http://gms:8080 \
#       --gms-token-file /run/secrets/gms.token --redis redis:6379
#
# Plain Dockerfile syntax (no BuildKit-only features); only Debian's apt is
# used over the network.  The module must match the nginx it loads into:
# both stages install from the same release's archive (trixie, as the
# official nginx image; bookworm builds too), and the final stage loads
# the module with 'nginx -t' before the image is done.

ARG BASE_IMAGE=debian:trixie


# --- build: the module and the tool, with the repository's own make ---------

FROM ${BASE_IMAGE} AS build

# policy-rc.d: no package may start a service while the image is built
RUN set -eux; \
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; \
    chmod 0755 /usr/sbin/policy-rc.d; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        nginx-dev libhiredis-dev libjansson-dev libssl-dev \
        libcurl4-openssl-dev gcc libc6-dev make; \
    rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .

# the module against /usr/share/nginx/src with Debian's configure flags
# (build/nginx/objs/ngx_http_gms_module.so), and build/gms-token
RUN make

# the runtime stage's libraries, as the release names them: the packages
# that ship what the module and the tool link (libhiredis0.14 on
# bookworm, libhiredis1.1.0 on trixie; libssl3 or libssl3t64, libcurl4
# or libcurl4t64, libjansson4, libc6), in build/runtime-packages
RUN set -eu; \
    objdump -p build/nginx/objs/ngx_http_gms_module.so build/gms-token \
        | awk '$1 == "NEEDED" { print $2 }' | sort -u > build/needed; \
    for so in $(cat build/needed); do dpkg -S "*/$so"; done > build/owners; \
    cut -d : -f 1 build/owners | sort -u > build/runtime-packages; \
    grep -q '^libhiredis' build/runtime-packages; \
    cat build/runtime-packages


# --- runtime: nginx and the libraries, nothing to build with ----------------

FROM ${BASE_IMAGE}

COPY --from=build /src/build/runtime-packages /tmp/runtime-packages

# runtime packages only; then out again: the policy-rc.d that kept
# services from starting during the build, nginx's default site, apt's
# lists, and the documentation but for each package's copyright
RUN set -eux; \
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; \
    chmod 0755 /usr/sbin/policy-rc.d; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        nginx $(cat /tmp/runtime-packages) ca-certificates gettext-base; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old \
           /tmp/runtime-packages /usr/share/man/* /usr/share/info/* \
           /etc/nginx/sites-enabled/default /usr/sbin/policy-rc.d; \
    find /usr/share/doc -type f ! -name copyright -delete; \
    mkdir -p /etc/gms-edge/http.d /etc/gms-edge/server.d; \
    install -d -o www-data -g www-data -m 0700 /run/gms-edge

COPY --from=build /src/build/nginx/objs/ngx_http_gms_module.so /usr/lib/nginx/modules/
COPY --from=build /src/build/gms-token /usr/local/bin/gms-token
COPY conf-examples/gms-edge.conf.template /etc/gms-edge/nginx.conf.template
COPY conf-examples/open-paths/ /etc/gms-edge/open-paths/
COPY docker/entrypoint.sh /usr/local/bin/gms-edge-entrypoint
COPY docker/healthcheck.sh /usr/local/bin/gms-edge-healthcheck

RUN chmod 0755 /usr/local/bin/gms-edge-entrypoint \
              /usr/local/bin/gms-edge-healthcheck

# Not root: nginx's master and workers run as www-data (uid 33; numeric,
# so that Kubernetes' runAsNonRoot can check it), which needs no privilege
# for port 8000.  The run directory /run/gms-edge is its own (the rendered
# configuration, with the salt, is owner-only); with --read-only, mount a
# tmpfs there.  'docker run --user 0' gives the old layout: a root master
# binding any port, workers as www-data.  Secret files must be readable
# by the user the container runs as.
USER 33:33

# The image is only done if the module loads into this nginx and a
# rendered configuration passes 'nginx -t' as the image's own user.  What
# is checked is the image, not a deployment: placeholder addresses and a
# placeholder salt (the entry point refuses to start without one),
# rendered into a scratch directory that is removed again.
RUN set -eux; \
    check=$(mktemp -d); \
    GMS_EDGE_RUN_DIR=$check GMS_UPSTREAM=127.0.0.1:8080 \
        SEARCH_UPSTREAM=127.0.0.1:9200 REDIS_ADDRESS=127.0.0.1:6379 \
        GMS_TOKEN_SALT=image-build-check \
        /usr/local/bin/gms-edge-entrypoint gms-edge -t -q; \
    rm -rf "$check"; \
    /usr/local/bin/gms-token --help > /dev/null

EXPOSE 8000

# SIGQUIT: a graceful shutdown, requests in flight are finished
STOPSIGNAL SIGQUIT

HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/gms-edge-healthcheck"]

ENTRYPOINT ["/usr/local/bin/gms-edge-entrypoint"]
CMD ["gms-edge"]
