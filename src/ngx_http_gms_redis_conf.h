
/*
 * The Redis client's settings, as configured: where Redis is
 * (gms_token_redis, gms_token_redis_sentinel, gms_token_redis_cluster),
 * how it is reached (gms_token_redis_ssl_*, gms_token_redis_timeout) and
 * the keys of the contract (gms_token_key_prefix).  The module's main
 * conf holds one.
 */


#ifndef _NGX_HTTP_GMS_REDIS_CONF_H_INCLUDED_
#define _NGX_HTTP_GMS_REDIS_CONF_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


/* the longest password read from a file */
#define NGX_HTTP_GMS_PASSWORD_MAX  1023


/* host:port, [ipv6]:port or unix:/path, as gms_token_redis* take it */
typedef struct {
    ngx_str_t                  name;           /* as configured */
    ngx_str_t                  host;           /* resolved; the TLS name */
    in_port_t                  port;
    ngx_addr_t                *addrs;          /* NULL: host to resolve */
    ngx_uint_t                 naddrs;
} ngx_http_gms_redis_addr_t;


typedef struct {
    ngx_http_gms_redis_addr_t  server;         /* gms_token_redis */
    ngx_str_t                  password;       /* as first read */
    ngx_str_t                  password_file;  /* full path, or empty */
    ngx_str_t                  user;           /* AUTH user password */
    ngx_msec_t                 max_age;        /* max_age=; 0: off */
    ngx_int_t                  db;
    ngx_str_t                  db_text;        /* for SELECT */

    /* gms_token_redis_sentinel */
    ngx_array_t               *sentinels;      /* of addresses */
    ngx_str_t                  master_name;
    ngx_str_t                  sentinel_password;
    ngx_str_t                  sentinel_password_file;
    ngx_flag_t                 replica;        /* replica=prefer */

    /* gms_token_redis_cluster: the seed nodes */
    ngx_array_t               *cluster;        /* of addresses */
    ngx_uint_t                 cluster_slot;   /* the prefix's tag's */

    ngx_resolver_t            *resolver;       /* http's, for host names */
    ngx_msec_t                 resolver_timeout;

    /* gms_token_redis ... tls, and gms_token_redis_ssl_* */
    ngx_flag_t                 tls;
    ngx_flag_t                 ssl_verify;
    ngx_str_t                  ssl_name;
    ngx_str_t                  ssl_trusted_certificate;
    ngx_str_t                  ssl_certificate;
    ngx_str_t                  ssl_certificate_key;
#if (NGX_SSL)
    ngx_ssl_t                 *ssl;
#endif

    ngx_msec_t                 timeout;

    /* gms_token_key_prefix, and the contract's keys under it */
    ngx_str_t                  prefix;
    ngx_str_t                  token_prefix;   /* <prefix>token: */
    ngx_str_t                  actor_prefix;   /* <prefix>actor: */
    ngx_str_t                  invalidate;     /* <prefix>invalidate */
    ngx_str_t                  sync_key;       /* <prefix>sync */

    u_char                     script_sha[41]; /* the lookup's, for EVALSHA */
} ngx_http_gms_redis_conf_t;


char *ngx_http_gms_redis_conf_redis(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_gms_redis_conf_sentinel(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_gms_redis_conf_cluster(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
void ngx_http_gms_redis_conf_create(ngx_http_gms_redis_conf_t *rcf);
char *ngx_http_gms_redis_conf_init(ngx_conf_t *cf,
    ngx_http_gms_redis_conf_t *rcf);


extern ngx_conf_post_handler_pt  ngx_http_gms_redis_conf_timeout_p;


#endif /* _NGX_HTTP_GMS_REDIS_CONF_H_INCLUDED_ */
