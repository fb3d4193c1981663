
/*
 * Where Redis is, as configured: gms_token_redis, gms_token_redis_sentinel,
 * gms_token_redis_cluster and the TLS context of gms_token_redis_ssl_*.
 *
 * The three directives share one parser: their parameters are a table
 * (ngx_http_gms_redis_params), each entry naming the directives that take
 * it.  An argument that is no parameter is an address: the one address of
 * gms_token_redis (its first argument), any number of Sentinels or
 * cluster nodes.
 */


#include "ngx_http_gms_redis_conf.h"
#include "ngx_http_gms_secret.h"

#include "gms_contract.h"
#include "gms_lookup.h"
#include "gms_slot.h"

#include <openssl/sha.h>


/* the directives, as a parameter's mask names them */
#define NGX_HTTP_GMS_REDIS_ONE       0x01  /* gms_token_redis */
#define NGX_HTTP_GMS_REDIS_SENTINEL  0x02  /* gms_token_redis_sentinel */
#define NGX_HTTP_GMS_REDIS_CLUSTER   0x04  /* gms_token_redis_cluster */
#define NGX_HTTP_GMS_REDIS_ANY       0x07


/* a directive's conf: the Redis conf at cmd->offset in the module's */
#define ngx_http_gms_redis_rcf(conf, cmd)                                    \
    ((ngx_http_gms_redis_conf_t *) ((u_char *) (conf) + (cmd)->offset))


typedef struct ngx_http_gms_redis_param_s  ngx_http_gms_redis_param_t;

/* NGX_CONF_OK, NGX_CONF_ERROR (said), or "" for "invalid parameter" */
typedef char *(*ngx_http_gms_redis_set_pt)(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);

struct ngx_http_gms_redis_param_s {
    ngx_str_t                     name;        /* "tls", or "name=" */
    ngx_uint_t                    directives;  /* NGX_HTTP_GMS_REDIS_* */
    ngx_http_gms_redis_set_pt     set;
    size_t                        offset;      /* in the Redis conf */
    ngx_uint_t                    nonempty;    /* "name=" refused */
};


static char *ngx_http_gms_redis_parse(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_uint_t directive);
static char *ngx_http_gms_redis_address(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value, ngx_uint_t directive);
static char *ngx_http_gms_redis_tls(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);
static char *ngx_http_gms_redis_str(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);
static char *ngx_http_gms_redis_secret_file(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);
static char *ngx_http_gms_redis_db(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);
static char *ngx_http_gms_redis_replica(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);
static char *ngx_http_gms_redis_max_age(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, ngx_str_t *value,
    ngx_http_gms_redis_param_t *param, ngx_uint_t directive);
static ngx_int_t ngx_http_gms_redis_addr(ngx_conf_t *cf, ngx_str_t *text,
    ngx_http_gms_redis_addr_t *addr);
static char *ngx_http_gms_redis_timeout(ngx_conf_t *cf, void *post,
    void *data);
static char *ngx_http_gms_redis_peers(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf);
static char *ngx_http_gms_redis_cluster_prefix(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf);
static ngx_int_t ngx_http_gms_redis_key(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf, const char *name, ngx_str_t *key);
#if (NGX_SSL)
static ngx_int_t ngx_http_gms_redis_ssl(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf);
#endif


static ngx_http_gms_redis_param_t  ngx_http_gms_redis_params[] = {

    { ngx_string("tls"), NGX_HTTP_GMS_REDIS_ANY,
      ngx_http_gms_redis_tls, 0, 0 },

    { ngx_string("password="), NGX_HTTP_GMS_REDIS_ANY,
      ngx_http_gms_redis_str,
      offsetof(ngx_http_gms_redis_conf_t, password), 0 },

    { ngx_string("password_file="), NGX_HTTP_GMS_REDIS_ANY,
      ngx_http_gms_redis_secret_file,
      offsetof(ngx_http_gms_redis_conf_t, password), 0 },

    { ngx_string("user="), NGX_HTTP_GMS_REDIS_ANY,
      ngx_http_gms_redis_str,
      offsetof(ngx_http_gms_redis_conf_t, user), 1 },

    /* a cluster refuses it, saying why */
    { ngx_string("db="), NGX_HTTP_GMS_REDIS_ANY,
      ngx_http_gms_redis_db, 0, 0 },

    { ngx_string("master="), NGX_HTTP_GMS_REDIS_SENTINEL,
      ngx_http_gms_redis_str,
      offsetof(ngx_http_gms_redis_conf_t, master_name), 0 },

    { ngx_string("sentinel_password="), NGX_HTTP_GMS_REDIS_SENTINEL,
      ngx_http_gms_redis_str,
      offsetof(ngx_http_gms_redis_conf_t, sentinel_password), 0 },

    { ngx_string("sentinel_password_file="), NGX_HTTP_GMS_REDIS_SENTINEL,
      ngx_http_gms_redis_secret_file,
      offsetof(ngx_http_gms_redis_conf_t, sentinel_password), 0 },

    { ngx_string("replica="),
      NGX_HTTP_GMS_REDIS_SENTINEL|NGX_HTTP_GMS_REDIS_CLUSTER,
      ngx_http_gms_redis_replica, 0, 0 },

    { ngx_string("max_age="), NGX_HTTP_GMS_REDIS_ANY,
      ngx_http_gms_redis_max_age, 0, 0 },

    { ngx_null_string, 0, NULL, 0, 0 }
};


ngx_conf_post_handler_pt  ngx_http_gms_redis_conf_timeout_p =
    ngx_http_gms_redis_timeout;


/* what the other two directives say of a directive given after them */
static char  *ngx_http_gms_redis_conflict[] = {
    "cannot be used with \"gms_token_redis\"",
    "cannot be used with \"gms_token_redis_sentinel\"",
    "cannot be used with \"gms_token_redis_cluster\""
};


/*
 * The three directives' conf is the Redis conf at cmd->offset in the
 * module's, as proxy_* directives set the upstream conf in proxy's.
 *
 * gms_token_redis ADDRESS [tls] [password=STRING | password_file=PATH]
 *     [user=NAME] [db=N] [max_age=TIME];
 */

char *
ngx_http_gms_redis_conf_redis(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return ngx_http_gms_redis_parse(cf, ngx_http_gms_redis_rcf(conf, cmd),
                                    NGX_HTTP_GMS_REDIS_ONE);
}


/*
 * gms_token_redis_sentinel ADDRESS ... master=NAME [password=STRING |
 *     password_file=PATH] [sentinel_password=STRING |
 *     sentinel_password_file=PATH] [user=NAME] [db=N] [tls]
 *     [replica=prefer|off] [max_age=TIME];
 */

char *
ngx_http_gms_redis_conf_sentinel(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    return ngx_http_gms_redis_parse(cf, ngx_http_gms_redis_rcf(conf, cmd),
                                    NGX_HTTP_GMS_REDIS_SENTINEL);
}


/*
 * gms_token_redis_cluster ADDRESS ... [tls] [password=STRING |
 *     password_file=PATH] [user=NAME] [replica=prefer|off] [max_age=TIME];
 */

char *
ngx_http_gms_redis_conf_cluster(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    return ngx_http_gms_redis_parse(cf, ngx_http_gms_redis_rcf(conf, cmd),
                                    NGX_HTTP_GMS_REDIS_CLUSTER);
}


static char *
ngx_http_gms_redis_parse(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_uint_t directive)
{
    char                        *rv;
    ngx_str_t                   *value;
    ngx_uint_t                   i, k, given[3];
    ngx_array_t                **addrs;
    ngx_http_gms_redis_param_t  *p;

    given[0] = (rcf->server.name.data != NULL);
    given[1] = (rcf->sentinels != NULL);
    given[2] = (rcf->cluster != NULL);

    /* directive is 1 << k */
    for (k = 0; directive >> k != 1; k++) { /* void */ }

    if (given[k]) {
        return "is duplicate";
    }

    for (i = 0; i < 3; i++) {
        if (given[i]) {
            return ngx_http_gms_redis_conflict[i];
        }
    }

    addrs = (directive == NGX_HTTP_GMS_REDIS_SENTINEL) ? &rcf->sentinels
            : (directive == NGX_HTTP_GMS_REDIS_CLUSTER) ? &rcf->cluster
            : NULL;

    if (addrs) {
        *addrs = ngx_array_create(cf->pool, 3,
                                  sizeof(ngx_http_gms_redis_addr_t));
        if (*addrs == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    /* gms_token_redis's address comes first */
    i = 1;

    if (addrs == NULL) {
        if (ngx_http_gms_redis_addr(cf, &value[1], &rcf->server) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        i = 2;
    }

    for ( /* void */ ; i < cf->args->nelts; i++) {

        for (p = ngx_http_gms_redis_params; p->name.len; p++) {
            if (p->name.data[p->name.len - 1] == '='
                ? ngx_strncmp(value[i].data, p->name.data, p->name.len) == 0
                : ngx_strcmp(value[i].data, p->name.data) == 0)
            {
                break;
            }
        }

        rv = "";

        if (p->name.len && (p->directives & directive)) {
            rv = p->set(cf, rcf, &value[i], p, directive);

        } else if (p->name.len == 0 && addrs
                   && ngx_strlchr(value[i].data,
                                  value[i].data + value[i].len, '=')
                      == NULL)
        {
            rv = ngx_http_gms_redis_address(cf, rcf, &value[i], directive);
        }

        if (rv == NGX_CONF_OK) {
            continue;
        }

        if (rv == NGX_CONF_ERROR) {
            return rv;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (directive == NGX_HTTP_GMS_REDIS_SENTINEL) {
        if (rcf->sentinels->nelts == 0) {
            return "needs at least one Sentinel address";
        }

        if (rcf->master_name.len == 0) {
            return "needs \"master=NAME\"";
        }
    }

    if (directive == NGX_HTTP_GMS_REDIS_CLUSTER
        && rcf->cluster->nelts == 0)
    {
        return "needs at least one node's address";
    }

    return NGX_CONF_OK;
}


/* a Sentinel's or a cluster node's address */

static char *
ngx_http_gms_redis_address(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_uint_t directive)
{
    ngx_http_gms_redis_addr_t  *addr;

    if (directive == NGX_HTTP_GMS_REDIS_CLUSTER
        && ngx_strncmp(value->data, "unix:", 5) == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid cluster node \"%V\": a cluster's "
                           "nodes are reached over TCP", value);
        return NGX_CONF_ERROR;
    }

    addr = ngx_array_push(directive == NGX_HTTP_GMS_REDIS_CLUSTER
                          ? rcf->cluster : rcf->sentinels);
    if (addr == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_redis_addr(cf, value, addr) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_gms_redis_tls(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_http_gms_redis_param_t *param,
    ngx_uint_t directive)
{
#if (NGX_SSL)
    rcf->tls = 1;
    return NGX_CONF_OK;
#else
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"tls\" needs nginx built with OpenSSL");
    return NGX_CONF_ERROR;
#endif
}


/* name=STRING into the Redis conf's field, empty unless the table says */

static char *
ngx_http_gms_redis_str(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_http_gms_redis_param_t *param,
    ngx_uint_t directive)
{
    ngx_str_t  *field;

    if (param->nonempty && value->len == param->name.len) {
        return "";
    }

    field = (ngx_str_t *) ((u_char *) rcf + param->offset);

    field->data = value->data + param->name.len;
    field->len = value->len - param->name.len;

    return NGX_CONF_OK;
}


/*
 * password_file=PATH, sentinel_password_file=PATH: the password from a
 * file (ngx_http_gms_secret.c's rule), read at configuration (nginx -t
 * refuses a file that breaks the rule), kept as a full path for the
 * workers, which read it again when it changes
 * (ngx_http_gms_redis_secret.c); never in a log; the inline form given
 * before it is refused
 */

static char *
ngx_http_gms_redis_secret_file(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_http_gms_redis_param_t *param,
    ngx_uint_t directive)
{
    ngx_str_t   name, *field, *file;
    ngx_uint_t  n;

    field = (ngx_str_t *) ((u_char *) rcf + param->offset);
    file = (field == &rcf->password) ? &rcf->password_file
                                     : &rcf->sentinel_password_file;

    /* "password" of "password_file=" */
    n = param->name.len - sizeof("_file=") + 1;

    if (field->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%*s=\" and \"%V\" are exclusive", n,
                           param->name.data, &param->name);
        return NGX_CONF_ERROR;
    }

    name.data = value->data + param->name.len;
    name.len = value->len - param->name.len;

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    /* NUL-terminated: the parameter ends its argument */
    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    *file = name;

    if (ngx_http_gms_secret_file(cf, &name, NGX_HTTP_GMS_PASSWORD_MAX, field)
        != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (field->len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": the file holds no password", &name);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_gms_redis_db(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_http_gms_redis_param_t *param,
    ngx_uint_t directive)
{
    if (directive == NGX_HTTP_GMS_REDIS_CLUSTER) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": a Redis Cluster has only db 0", value);
        return NGX_CONF_ERROR;
    }

    rcf->db = ngx_atoi(value->data + 3, value->len - 3);

    if (rcf->db == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid redis db \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    rcf->db_text.data = value->data + 3;
    rcf->db_text.len = value->len - 3;

    return NGX_CONF_OK;
}


/* replica=prefer or replica=off */

static char *
ngx_http_gms_redis_replica(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_http_gms_redis_param_t *param,
    ngx_uint_t directive)
{
    if (ngx_strcmp(value->data, "replica=prefer") == 0) {
        rcf->replica = 1;
        return NGX_CONF_OK;
    }

    if (ngx_strcmp(value->data, "replica=off") == 0) {
        rcf->replica = 0;
        return NGX_CONF_OK;
    }

    return "";
}


/*
 * max_age=TIME: a connection older than that is made anew (one that a
 * provider drops at an age, as ElastiCache does at 12 hours)
 */

static char *
ngx_http_gms_redis_max_age(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    ngx_str_t *value, ngx_http_gms_redis_param_t *param,
    ngx_uint_t directive)
{
    ngx_str_t   s;
    ngx_msec_t  ms;

    s.data = value->data + param->name.len;
    s.len = value->len - param->name.len;

    ms = ngx_parse_time(&s, 0);

    if (ms == (ngx_msec_t) NGX_ERROR || ms < 1000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid \"%V\": a time of a second or more, "
                           "such as \"11h\"", value);
        return NGX_CONF_ERROR;
    }

    rcf->max_age = ms;

    return NGX_CONF_OK;
}


/*
 * In a cluster every key of the contract must live in one hash slot (the
 * lookup's script reads two keys): the prefix must carry a hash tag,
 * whose slot is then the one the worker's lookups go to.
 */

static char *
ngx_http_gms_redis_cluster_prefix(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf)
{
    size_t                len;
    const unsigned char  *tag;

    if (!gms_slot_tag(rcf->prefix.data, rcf->prefix.len, &tag, &len)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "gms_token_key_prefix \"%V\" has no hash tag: "
                           "with \"gms_token_redis_cluster\" every key must "
                           "be in one hash slot, so the prefix needs a "
                           "non-empty \"{...}\", such as \"{gms}:\"",
                           &rcf->prefix);
        return NGX_CONF_ERROR;
    }

    rcf->cluster_slot = gms_slot(rcf->prefix.data, rcf->prefix.len);

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


/* a lookup with no time to answer would fail every request */

static char *
ngx_http_gms_redis_timeout(ngx_conf_t *cf, void *post, void *data)
{
    ngx_msec_t  *timeout = data;

    if (*timeout == 0) {
        return "must be more than 0";
    }

    return NGX_CONF_OK;
}


void
ngx_http_gms_redis_conf_create(ngx_http_gms_redis_conf_t *rcf)
{
    /*
     * set by ngx_pcalloc() of the main conf:
     *
     *     rcf->server = { 0 };
     *     rcf->sentinels = NULL;
     *     rcf->cluster = NULL;
     *     rcf->user = { 0, NULL };
     *     rcf->password = { 0, NULL };
     *     rcf->password_file = { 0, NULL };
     *     rcf->sentinel_password_file = { 0, NULL };
     *     rcf->max_age = 0;
     *     rcf->db = 0;
     *     rcf->tls = 0;
     *     rcf->ssl_* = { 0, NULL };
     *     rcf->token_prefix = { 0, NULL };
     *     rcf->script_sha = "";
     */

    rcf->timeout = NGX_CONF_UNSET_MSEC;
    rcf->ssl_verify = NGX_CONF_UNSET;
    rcf->prefix.len = NGX_CONF_UNSET_SIZE;
}


/*
 * At the end of the http block: where Redis is and how it is reached,
 * the contract's keys, and the lookup script's SHA-1, by which EVALSHA
 * names it.
 */

char *
ngx_http_gms_redis_conf_init(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf)
{
    unsigned char  md[SHA_DIGEST_LENGTH];

    if (ngx_http_gms_redis_peers(cf, rcf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_conf_init_msec_value(rcf->timeout, 250);

    if (rcf->prefix.len == NGX_CONF_UNSET_SIZE) {
        if (rcf->cluster) {
            /* every key in one hash slot: the lookup's script needs it */
            ngx_str_set(&rcf->prefix, "{gms}:");

        } else {
            ngx_str_set(&rcf->prefix, "gms:");
        }
    }

    if (rcf->cluster
        && ngx_http_gms_redis_cluster_prefix(cf, rcf) != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_redis_key(cf, rcf, GMS_KEY_TOKEN, &rcf->token_prefix)
           != NGX_OK
        || ngx_http_gms_redis_key(cf, rcf, GMS_KEY_ACTOR, &rcf->actor_prefix)
           != NGX_OK
        || ngx_http_gms_redis_key(cf, rcf, GMS_KEY_INVALIDATE,
                                  &rcf->invalidate)
           != NGX_OK
        || ngx_http_gms_redis_key(cf, rcf, GMS_KEY_SYNC, &rcf->sync_key)
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    SHA1((const unsigned char *) gms_lookup_script, gms_lookup_script_len,
         md);

    ngx_hex_dump(rcf->script_sha, md, SHA_DIGEST_LENGTH);
    rcf->script_sha[40] = '\0';

    return NGX_CONF_OK;
}


/* <prefix><name>: a key of the contract, or the start of one */

static ngx_int_t
ngx_http_gms_redis_key(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf,
    const char *name, ngx_str_t *key)
{
    size_t  len;

    len = ngx_strlen(name);

    key->len = rcf->prefix.len + len;
    key->data = ngx_pnalloc(cf->pool, key->len);
    if (key->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ngx_cpymem(key->data, rcf->prefix.data, rcf->prefix.len),
               name, len);

    return NGX_OK;
}


/* the default address, the resolver a host name needs, the TLS context */

static char *
ngx_http_gms_redis_peers(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf)
{
    ngx_str_t                   dflt = ngx_string("127.0.0.1:6379");
    ngx_uint_t                  i, n;
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_gms_redis_addr_t  *addrs;

    if (rcf->server.name.data == NULL && rcf->sentinels == NULL
        && rcf->cluster == NULL
        && ngx_http_gms_redis_addr(cf, &dflt, &rcf->server) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (rcf->sentinels) {
        addrs = rcf->sentinels->elts;
        n = rcf->sentinels->nelts;

    } else if (rcf->cluster) {
        addrs = rcf->cluster->elts;
        n = rcf->cluster->nelts;

    } else {
        addrs = &rcf->server;
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

    rcf->resolver = clcf->resolver;
    rcf->resolver_timeout = (clcf->resolver_timeout == NGX_CONF_UNSET_MSEC)
                             ? 30000 : clcf->resolver_timeout;

    ngx_conf_init_value(rcf->ssl_verify, 1);

    if (rcf->cluster && rcf->tls && rcf->ssl_name.len == 0
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
        rcf->ssl_name = addrs[0].host;
    }

    if (rcf->cluster && rcf->tls && rcf->ssl_verify
        && rcf->ssl_name.len == 0)
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

    if (!rcf->tls) {
        if (rcf->ssl_certificate.len || rcf->ssl_trusted_certificate.len) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "gms_token_redis_ssl_* are ignored without "
                               "\"tls\" in the redis address");
        }

        return NGX_CONF_OK;
    }

#if (NGX_SSL)
    if (ngx_http_gms_redis_ssl(cf, rcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }
#endif

    return NGX_CONF_OK;
}


#if (NGX_SSL)

static ngx_int_t
ngx_http_gms_redis_ssl(ngx_conf_t *cf, ngx_http_gms_redis_conf_t *rcf)
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

    if (rcf->ssl_certificate.len) {

        if (rcf->ssl_certificate_key.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "no \"gms_token_redis_ssl_certificate_key\" "
                               "for \"gms_token_redis_ssl_certificate\"");
            return NGX_ERROR;
        }

        if (ngx_ssl_certificate(cf, ssl, &rcf->ssl_certificate,
                                &rcf->ssl_certificate_key, NULL)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (rcf->ssl_verify) {

        if (rcf->ssl_trusted_certificate.len) {
            if (ngx_ssl_trusted_certificate(cf, ssl,
                                            &rcf->ssl_trusted_certificate,
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

    rcf->ssl = ssl;

    return NGX_OK;
}

#endif
