
/*
 * Where Redis is, as configured: gms_token_redis, gms_token_redis_sentinel,
 * gms_token_redis_cluster and the TLS context of gms_token_redis_ssl_*.
 */


#include "ngx_http_gms_redis_conf.h"
#include "ngx_http_gms_secret.h"

#include "gms_slot.h"


/* the longest password read from a file */
#define NGX_HTTP_GMS_PASSWORD_MAX  1023


static ngx_int_t ngx_http_gms_redis_addr(ngx_conf_t *cf, ngx_str_t *text,
    ngx_http_gms_redis_addr_t *addr);
static char *ngx_http_gms_redis_param(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf, ngx_str_t *value);
static char *ngx_http_gms_redis_password_file(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf, ngx_str_t *value);
static char *ngx_http_gms_redis_sentinel_password(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf, ngx_str_t *value);
#if (NGX_SSL)
static ngx_int_t ngx_http_gms_redis_ssl(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf);
#endif


/* gms_token_redis ADDRESS [tls] [password=STRING] [db=N]; */

char *
ngx_http_gms_redis_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gms_main_conf_t *gmcf = conf;

    char        *rv;
    ngx_str_t   *value;
    ngx_uint_t   i;

    if (gmcf->redis.name.data != NULL) {
        return "is duplicate";
    }

    if (gmcf->sentinels) {
        return "cannot be used with \"gms_token_redis_sentinel\"";
    }

    if (gmcf->cluster) {
        return "cannot be used with \"gms_token_redis_cluster\"";
    }

    value = cf->args->elts;

    if (ngx_http_gms_redis_addr(cf, &value[1], &gmcf->redis) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {
        rv = ngx_http_gms_redis_param(cf, gmcf, &value[i]);

        if (rv != NGX_CONF_OK) {
            if (rv == NGX_CONF_ERROR) {
                return rv;
            }

            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/*
 * gms_token_redis_sentinel ADDRESS ... master=NAME [password=STRING |
 *     password_file=PATH] [sentinel_password=STRING |
 *     sentinel_password_file=PATH] [db=N] [tls] [replica=prefer|off];
 */

char *
ngx_http_gms_redis_sentinel_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_gms_main_conf_t *gmcf = conf;

    char                       *rv;
    ngx_str_t                  *value;
    ngx_uint_t                  i;
    ngx_http_gms_redis_addr_t  *addr;

    if (gmcf->sentinels) {
        return "is duplicate";
    }

    if (gmcf->redis.name.data != NULL) {
        return "cannot be used with \"gms_token_redis\"";
    }

    if (gmcf->cluster) {
        return "cannot be used with \"gms_token_redis_cluster\"";
    }

    gmcf->sentinels = ngx_array_create(cf->pool, 3,
                                       sizeof(ngx_http_gms_redis_addr_t));
    if (gmcf->sentinels == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "master=", 7) == 0) {
            gmcf->master_name.data = value[i].data + 7;
            gmcf->master_name.len = value[i].len - 7;
            continue;
        }

        if (ngx_strncmp(value[i].data, "sentinel_password=", 18) == 0
            || ngx_strncmp(value[i].data, "sentinel_password_file=", 23) == 0)
        {
            if (ngx_http_gms_redis_sentinel_password(cf, gmcf, &value[i])
                != NGX_CONF_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strcmp(value[i].data, "replica=prefer") == 0) {
            gmcf->replica = 1;
            continue;
        }

        if (ngx_strcmp(value[i].data, "replica=off") == 0) {
            gmcf->replica = 0;
            continue;
        }

        rv = ngx_http_gms_redis_param(cf, gmcf, &value[i]);

        if (rv == NGX_CONF_OK) {
            continue;
        }

        if (rv == NGX_CONF_ERROR) {
            return rv;
        }

        if (ngx_strlchr(value[i].data, value[i].data + value[i].len, '=')
            != NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        addr = ngx_array_push(gmcf->sentinels);
        if (addr == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_gms_redis_addr(cf, &value[i], addr) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (gmcf->sentinels->nelts == 0) {
        return "needs at least one Sentinel address";
    }

    if (gmcf->master_name.len == 0) {
        return "needs \"master=NAME\"";
    }

    return NGX_CONF_OK;
}


/*
 * gms_token_redis_cluster ADDRESS ... [tls] [password=STRING |
 *     password_file=PATH] [user=NAME] [replica=prefer|off];
 */

char *
ngx_http_gms_redis_cluster_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_gms_main_conf_t *gmcf = conf;

    char                       *rv;
    ngx_str_t                  *value;
    ngx_uint_t                  i;
    ngx_http_gms_redis_addr_t  *addr;

    if (gmcf->cluster) {
        return "is duplicate";
    }

    if (gmcf->redis.name.data != NULL) {
        return "cannot be used with \"gms_token_redis\"";
    }

    if (gmcf->sentinels) {
        return "cannot be used with \"gms_token_redis_sentinel\"";
    }

    gmcf->cluster = ngx_array_create(cf->pool, 3,
                                     sizeof(ngx_http_gms_redis_addr_t));
    if (gmcf->cluster == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strcmp(value[i].data, "replica=prefer") == 0) {
            gmcf->replica = 1;
            continue;
        }

        if (ngx_strcmp(value[i].data, "replica=off") == 0) {
            gmcf->replica = 0;
            continue;
        }

        if (ngx_strncmp(value[i].data, "db=", 3) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\": a Redis Cluster has only db 0",
                               &value[i]);
            return NGX_CONF_ERROR;
        }

        rv = ngx_http_gms_redis_param(cf, gmcf, &value[i]);

        if (rv == NGX_CONF_OK) {
            continue;
        }

        if (rv == NGX_CONF_ERROR) {
            return rv;
        }

        if (ngx_strlchr(value[i].data, value[i].data + value[i].len, '=')
            != NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (ngx_strncmp(value[i].data, "unix:", 5) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid cluster node \"%V\": a cluster's "
                               "nodes are reached over TCP", &value[i]);
            return NGX_CONF_ERROR;
        }

        addr = ngx_array_push(gmcf->cluster);
        if (addr == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_gms_redis_addr(cf, &value[i], addr) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (gmcf->cluster->nelts == 0) {
        return "needs at least one node's address";
    }

    return NGX_CONF_OK;
}


/*
 * In a cluster every key of the contract must live in one hash slot (the
 * lookup's script reads two keys): the prefix must carry a hash tag,
 * whose slot is then the one the worker's lookups go to.
 */

char *
ngx_http_gms_redis_cluster_prefix(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf)
{
    size_t                len;
    const unsigned char  *tag;

    if (!gms_slot_tag(gmcf->prefix.data, gmcf->prefix.len, &tag, &len)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "gms_token_key_prefix \"%V\" has no hash tag: "
                           "with \"gms_token_redis_cluster\" every key must "
                           "be in one hash slot, so the prefix needs a "
                           "non-empty \"{...}\", such as \"{gms}:\"",
                           &gmcf->prefix);
        return NGX_CONF_ERROR;
    }

    gmcf->cluster_slot = gms_slot(gmcf->prefix.data, gmcf->prefix.len);

    return NGX_CONF_OK;
}


/*
 * tls, password=, password_file=, user=, db=: NGX_CONF_OK,
 * NGX_CONF_ERROR, or "" for not these
 */

static char *
ngx_http_gms_redis_param(ngx_conf_t *cf, ngx_http_gms_main_conf_t *gmcf,
    ngx_str_t *value)
{
    if (ngx_strcmp(value->data, "tls") == 0) {
#if (NGX_SSL)
        gmcf->tls = 1;
        return NGX_CONF_OK;
#else
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tls\" needs nginx built with OpenSSL");
        return NGX_CONF_ERROR;
#endif
    }

    if (ngx_strncmp(value->data, "password=", 9) == 0) {
        gmcf->password.data = value->data + 9;
        gmcf->password.len = value->len - 9;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "password_file=", 14) == 0) {
        return ngx_http_gms_redis_password_file(cf, gmcf, value);
    }

    if (ngx_strncmp(value->data, "user=", 5) == 0 && value->len > 5) {
        gmcf->user.data = value->data + 5;
        gmcf->user.len = value->len - 5;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "db=", 3) == 0) {
        gmcf->db = ngx_atoi(value->data + 3, value->len - 3);

        if (gmcf->db == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid redis db \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        gmcf->db_text.data = value->data + 3;
        gmcf->db_text.len = value->len - 3;
        return NGX_CONF_OK;
    }

    return "";
}


/*
 * password_file=PATH: the password from a file (ngx_http_gms_secret.c's
 * rule), read at configuration (a reload reads it again); it never
 * appears in a log.
 */

static char *
ngx_http_gms_redis_password_file(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf, ngx_str_t *value)
{
    ngx_str_t  name;

    if (gmcf->password.data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"password=\" and \"password_file=\" are "
                           "exclusive");
        return NGX_CONF_ERROR;
    }

    name.data = value->data + 14;
    name.len = value->len - 14;

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_secret_file(cf, &name, NGX_HTTP_GMS_PASSWORD_MAX,
                                 &gmcf->password)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (gmcf->password.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": the file holds no password", &name);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * sentinel_password=STRING or sentinel_password_file=PATH (read as
 * password_file=): the Sentinels' own password, never in a log
 */

static char *
ngx_http_gms_redis_sentinel_password(ngx_conf_t *cf,
    ngx_http_gms_main_conf_t *gmcf, ngx_str_t *value)
{
    ngx_str_t  name;

    if (gmcf->sentinel_password.data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"sentinel_password=\" and "
                           "\"sentinel_password_file=\" are exclusive");
        return NGX_CONF_ERROR;
    }

    if (value->data[17] == '=') {
        gmcf->sentinel_password.data = value->data + 18;
        gmcf->sentinel_password.len = value->len - 18;
        return NGX_CONF_OK;
    }

    name.data = value->data + 23;
    name.len = value->len - 23;

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_secret_file(cf, &name, NGX_HTTP_GMS_PASSWORD_MAX,
                                 &gmcf->sentinel_password)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (gmcf->sentinel_password.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": the file holds no password", &name);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * host:port, [ipv6]:port or unix:/path.  Addresses are parsed here; a
 * host name is left to nginx's resolver in the workers, never to a
 * blocking getaddrinfo().
 */

static ngx_int_t
ngx_http_gms_redis_addr(ngx_conf_t *cf, ngx_str_t *text,
    ngx_http_gms_redis_addr_t *addr)
{
    ngx_url_t    u;
    ngx_addr_t  *a;

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = *text;
    u.no_resolve = 1;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid redis address \"%V\": %s; expected "
                           "\"host:port\", \"[ipv6]:port\" or "
                           "\"unix:/path\"", text,
                           u.err ? u.err : "cannot parse");
        return NGX_ERROR;
    }

    if (u.family != AF_UNIX && (u.no_port || u.port == 0)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid redis address \"%V\": a port is "
                           "required", text);
        return NGX_ERROR;
    }

    addr->name = *text;
    addr->host = u.host;
    addr->port = u.port;
    addr->addrs = u.addrs;
    addr->naddrs = u.naddrs;

    if (u.naddrs == 0
        && ngx_inet_addr(u.host.data, u.host.len) != INADDR_NONE)
    {
        /* an IPv4 address, which no_resolve leaves unparsed */

        a = ngx_pcalloc(cf->pool, sizeof(ngx_addr_t));
        if (a == NULL) {
            return NGX_ERROR;
        }

        if (ngx_parse_addr(cf->pool, a, u.host.data, u.host.len) != NGX_OK) {
            return NGX_ERROR;
        }

        ngx_inet_set_port(a->sockaddr, u.port);
        a->name = *text;

        addr->addrs = a;
        addr->naddrs = 1;
    }

    if (u.family == AF_UNIX) {
        ngx_str_null(&addr->host);
    }

    return NGX_OK;
}


/*
 * At the end of the http block: the default address, the resolver a host
 * name needs, and the TLS context.
 */

char *
ngx_http_gms_redis_init_conf(ngx_conf_t *cf, ngx_http_gms_main_conf_t *gmcf)
{
    ngx_str_t                   dflt = ngx_string("127.0.0.1:6379");
    ngx_uint_t                  i, n;
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_gms_redis_addr_t  *addrs;

    if (gmcf->redis.name.data == NULL && gmcf->sentinels == NULL
        && gmcf->cluster == NULL
        && ngx_http_gms_redis_addr(cf, &dflt, &gmcf->redis) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (gmcf->sentinels) {
        addrs = gmcf->sentinels->elts;
        n = gmcf->sentinels->nelts;

    } else if (gmcf->cluster) {
        addrs = gmcf->cluster->elts;
        n = gmcf->cluster->nelts;

    } else {
        addrs = &gmcf->redis;
        n = 1;
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    for (i = 0; i < n; i++) {
        if (addrs[i].addrs != NULL) {
            continue;
        }

        if (clcf->resolver == NULL || clcf->resolver->connections.nelts == 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "the redis address \"%V\" is a host name: "
                               "it needs a \"resolver\" at the http level "
                               "(names are resolved by nginx, never by a "
                               "blocking call in the workers)",
                               &addrs[i].name);
            return NGX_CONF_ERROR;
        }
    }

    gmcf->resolver = clcf->resolver;
    gmcf->resolver_timeout = (clcf->resolver_timeout == NGX_CONF_UNSET_MSEC)
                             ? 30000 : clcf->resolver_timeout;

    ngx_conf_init_value(gmcf->ssl_verify, 1);

    if (gmcf->cluster && gmcf->tls && gmcf->ssl_name.len == 0
        && addrs[0].host.len
        && ngx_inet_addr(addrs[0].host.data, addrs[0].host.len)
           == INADDR_NONE
        && ngx_strlchr(addrs[0].host.data,
                       addrs[0].host.data + addrs[0].host.len, ':')
           == NULL)
    {
        /*
         * the nodes are reached where the cluster says: their certificate
         * is checked against the configured endpoint's name, which a
         * managed cluster's wildcard certificate covers
         */
        gmcf->ssl_name = addrs[0].host;
    }

    if (gmcf->cluster && gmcf->tls && gmcf->ssl_verify
        && gmcf->ssl_name.len == 0)
    {
        /* else every connection would fail, each saying so, at run time */
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "gms_token_redis_cluster with \"tls\": the "
                           "nodes' certificates are checked against a name, "
                           "and \"%V\" is an address: set "
                           "\"gms_token_redis_ssl_name\" to the name they "
                           "hold", &addrs[0].name);
        return NGX_CONF_ERROR;
    }

    if (!gmcf->tls) {
        if (gmcf->ssl_certificate.len || gmcf->ssl_trusted_certificate.len) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "gms_token_redis_ssl_* are ignored without "
                               "\"tls\" in the redis address");
        }

        return NGX_CONF_OK;
    }

#if (NGX_SSL)
    if (ngx_http_gms_redis_ssl(cf, gmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }
#endif

    return NGX_CONF_OK;
}


#if (NGX_SSL)

static ngx_int_t
ngx_http_gms_redis_ssl(ngx_conf_t *cf, ngx_http_gms_main_conf_t *gmcf)
{
    ngx_ssl_t           *ssl;
    ngx_pool_cleanup_t  *cln;

    static ngx_str_t     ciphers = ngx_string("DEFAULT");

    ssl = ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t));
    if (ssl == NULL) {
        return NGX_ERROR;
    }

    ssl->log = cf->log;

    if (ngx_ssl_create(ssl, NGX_SSL_TLSv1_2|NGX_SSL_TLSv1_3, NULL) != NGX_OK)
    {
        return NGX_ERROR;
    }

#ifdef SSL_MODE_RELEASE_BUFFERS
    /*
     * nginx frees a connection's TLS buffers whenever they are empty, which
     * suits many idle client connections; a worker's few Redis connections
     * are busy, and would allocate and free a 16 KB buffer in every
     * SSL_read() and SSL_write() of a lookup: theirs are kept.
     */
    SSL_CTX_clear_mode(ssl->ctx, SSL_MODE_RELEASE_BUFFERS);
#endif

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        ngx_ssl_cleanup_ctx(ssl);
        return NGX_ERROR;
    }

    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = ssl;

    if (ngx_ssl_ciphers(cf, ssl, &ciphers, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    if (gmcf->ssl_certificate.len) {

        if (gmcf->ssl_certificate_key.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "no \"gms_token_redis_ssl_certificate_key\" "
                               "for \"gms_token_redis_ssl_certificate\"");
            return NGX_ERROR;
        }

        if (ngx_ssl_certificate(cf, ssl, &gmcf->ssl_certificate,
                                &gmcf->ssl_certificate_key, NULL)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (gmcf->ssl_verify) {

        if (gmcf->ssl_trusted_certificate.len) {
            if (ngx_ssl_trusted_certificate(cf, ssl,
                                            &gmcf->ssl_trusted_certificate,
                                            4)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

        } else if (SSL_CTX_set_default_verify_paths(ssl->ctx) != 1) {
            /* a managed Redis with a public CA: the system's store */
            ngx_ssl_error(NGX_LOG_EMERG, cf->log, 0,
                          "SSL_CTX_set_default_verify_paths() failed");
            return NGX_ERROR;
        }
    }

    gmcf->ssl = ssl;

    return NGX_OK;
}

#endif
