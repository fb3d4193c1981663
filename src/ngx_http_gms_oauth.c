
/*
 * External OAuth tokens, as DataHub 1.3.0's DataHubOAuthAuthenticator
 * accepts them (src/lib/gms_oauth.c says how): gms_token_oauth names an
 * issuer, its audiences and the file its JWKS is kept in (gms-token jwks
 * writes it).  No network from a worker: the file is read by the master
 * at configuration time (nginx -t refuses one that is not a JWKS), and
 * each worker looks at it again at most once a second (a stat, when a
 * token is checked) and reads it when it changed, so that keys rotated by
 * the issuer are picked up without a reload.  A file that no longer
 * parses (one caught mid-write included) is logged and the keys read
 * before stay.  It is the only file the module reads while it runs: the
 * salt, signing key, secret and password files and the TLS files are
 * read at configuration time, and a reload reads them again.
 *
 * A good token's user is urn:li:corpuser:__oauth_<issuer>_<subject>;
 * its privileges are read from Redis as a session token's user's are,
 * only where a location needs one.  A bad one is refused here: no Redis.
 */


#include "ngx_http_gms_oauth.h"
#include "ngx_http_gms_cache.h"
#include "ngx_http_gms_metrics.h"

#include "gms_oauth.h"

#include <openssl/sha.h>


/* issuers: one gms_token_oauth each */
#define NGX_HTTP_GMS_OAUTH_MAX  8


/* what stat says of the file: any write changes one of them */
typedef struct {
    ngx_file_uniq_t            uniq;
    off_t                      size;
    struct timespec            mtime;          /* POSIX.1-2008 st_mtim */
    struct timespec            ctime;          /* st_ctim */
} ngx_http_gms_oauth_stamp_t;


/* the file as last read: its stamp then and its content's digest */
typedef struct {
    ngx_http_gms_oauth_stamp_t  stamp;
    u_char                      digest[SHA256_DIGEST_LENGTH];
    unsigned                    racy:1;        /* the stamp is not enough */
} ngx_http_gms_oauth_seen_t;


typedef struct {
    gms_oauth_provider_t       provider;       /* jwks: the master's */
    ngx_str_t                  jwks_file;      /* full, NUL-terminated */
    ngx_http_gms_oauth_seen_t  seen;           /* by the master */
} ngx_http_gms_oauth_t;


/* a worker's own JWKS of an issuer, once its file changed */
typedef struct {
    ngx_http_gms_oauth_t      *oauth;          /* what it is for */
    gms_jwks_t                *jwks;           /* NULL: the master's */
    time_t                     checked;
    ngx_http_gms_oauth_seen_t  seen;
    unsigned                   missing:1;      /* logged */
} ngx_http_gms_oauth_state_t;


static char *ngx_http_gms_oauth_audiences(ngx_conf_t *cf,
    ngx_http_gms_oauth_t *oa, ngx_str_t *list);
static ngx_int_t ngx_http_gms_oauth_read(u_char *path,
    ngx_http_gms_oauth_seen_t *seen, gms_jwks_t **jwks, const char **error,
    ngx_err_t *err);
static void ngx_http_gms_oauth_stamp(ngx_file_info_t *fi,
    ngx_http_gms_oauth_stamp_t *stamp);
static ngx_int_t ngx_http_gms_oauth_same(ngx_http_gms_oauth_stamp_t *one,
    ngx_http_gms_oauth_stamp_t *two);
static void ngx_http_gms_oauth_refresh(ngx_log_t *log,
    ngx_http_gms_oauth_t *oa, ngx_http_gms_oauth_state_t *st);
static void ngx_http_gms_oauth_cleanup(void *data);


/* per worker process: written only at request time, so zero at fork */
static ngx_http_gms_oauth_state_t
    ngx_http_gms_oauth_states[NGX_HTTP_GMS_OAUTH_MAX];


/*
 * gms_token_oauth issuer=URL audience=AUD[,AUD...] ... jwks_file=PATH
 *     [user_claim=NAME] [algorithm=RS256]
 *
 * GMS's static configuration (EXTERNAL_OAUTH_TRUSTED_ISSUERS, _ALLOWED_
 * AUDIENCES, _USER_ID_CLAIM, _ALGORITHM), one issuer a directive.
 */

char *
ngx_http_gms_oauth_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_gms_main_conf_t *gmcf = conf;

    char                  *rv;
    ngx_err_t              err;
    ngx_str_t             *value, v;
    ngx_uint_t             i;
    gms_jwks_t            *jwks;
    const char            *error;
    ngx_pool_cleanup_t    *cln;
    ngx_http_gms_oauth_t  *oa, *other;

    if (gmcf->credentials.oauth == NULL) {
        gmcf->credentials.oauth = ngx_array_create(cf->pool, 2,
                                          sizeof(ngx_http_gms_oauth_t));
        if (gmcf->credentials.oauth == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (gmcf->credentials.oauth->nelts == NGX_HTTP_GMS_OAUTH_MAX) {
        return "is given for more than 8 issuers";
    }

    oa = ngx_array_push(gmcf->credentials.oauth);
    if (oa == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(oa, sizeof(ngx_http_gms_oauth_t));

    /*
     * set by ngx_memzero():
     *
     *     oa->provider.issuer = NULL;
     *     oa->provider.naudiences = 0;
     *     oa->provider.alg = GMS_OAUTH_RS256;   (GMS's default)
     *     oa->provider.jwks = NULL;
     *     oa->jwks_file = { 0, NULL };
     *     oa->seen = { 0 };
     */

    oa->provider.user_claim = "sub";

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        /* nginx's arguments end in a NUL: the values are C strings */

        if (ngx_strncmp(value[i].data, "issuer=", 7) == 0
            && value[i].len > 7 && oa->provider.issuer == NULL)
        {
            oa->provider.issuer = (const char *) value[i].data + 7;
            continue;
        }

        if (ngx_strncmp(value[i].data, "audience=", 9) == 0) {
            v.data = value[i].data + 9;
            v.len = value[i].len - 9;

            rv = ngx_http_gms_oauth_audiences(cf, oa, &v);
            if (rv != NGX_CONF_OK) {
                return rv;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "jwks_file=", 10) == 0
            && value[i].len > 10 && oa->jwks_file.data == NULL)
        {
            oa->jwks_file.data = value[i].data + 10;
            oa->jwks_file.len = value[i].len - 10;
            continue;
        }

        if (ngx_strncmp(value[i].data, "user_claim=", 11) == 0
            && value[i].len > 11 && value[i].len <= 11 + GMS_OAUTH_CLAIM_MAX)
        {
            oa->provider.user_claim = (const char *) value[i].data + 11;
            continue;
        }

        if (ngx_strncmp(value[i].data, "algorithm=", 10) == 0) {
            if (gms_oauth_alg_parse((const char *) value[i].data + 10,
                                    value[i].len - 10, &oa->provider.alg)
                != 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid algorithm \"%V\": GMS verifies "
                                   "RS256, RS384, RS512, PS256, PS384 or "
                                   "PS512 only", &value[i]);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    if (oa->provider.issuer == NULL || oa->provider.naudiences == 0
        || oa->jwks_file.data == NULL)
    {
        return "needs issuer=, audience= and jwks_file=";
    }

    other = gmcf->credentials.oauth->elts;

    for (i = 0; i + 1 < gmcf->credentials.oauth->nelts; i++) {
        if (ngx_strcmp(other[i].provider.issuer, oa->provider.issuer) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "issuer \"%s\" is given twice: give its "
                               "audiences in one gms_token_oauth",
                               oa->provider.issuer);
            return NGX_CONF_ERROR;
        }
    }

    if (ngx_conf_full_name(cf->cycle, &oa->jwks_file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_gms_oauth_read(oa->jwks_file.data, &oa->seen, &jwks,
                                &error, &err)
        != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, err,
                           "jwks_file \"%s\" is not a JWKS: %s",
                           oa->jwks_file.data, error);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_gms_oauth_cleanup;
    cln->data = jwks;

    oa->provider.jwks = jwks;

    return NGX_CONF_OK;
}


/* audience=A,B: split at commas and trimmed, as GMS's allowedAudiences */

static char *
ngx_http_gms_oauth_audiences(ngx_conf_t *cf, ngx_http_gms_oauth_t *oa,
    ngx_str_t *list)
{
    u_char  *p, *end, *start, *last, *aud;

    p = list->data;
    end = list->data + list->len;

    while (p < end) {
        start = p;

        while (p < end && *p != ',') {
            p++;
        }

        last = p++;

        while (start < last && *start == ' ') {
            start++;
        }

        while (last > start && last[-1] == ' ') {
            last--;
        }

        if (start == last) {
            continue;
        }

        if (oa->provider.naudiences == GMS_OAUTH_AUDIENCES_MAX) {
            return "has more than 16 audiences for an issuer";
        }

        aud = ngx_pnalloc(cf->pool, last - start + 1);
        if (aud == NULL) {
            return NGX_CONF_ERROR;
        }

        *ngx_cpymem(aud, start, last - start) = '\0';
        oa->provider.audiences[oa->provider.naudiences++] = (char *) aud;
    }

    return NGX_CONF_OK;
}


/*
 * A JWKS file read and parsed, and what seen says of it updated:
 * NGX_OK, a new key set in *jwks; NGX_DECLINED, the content seen before
 * (not parsed again); NGX_AGAIN, the file changed while it was read
 * (racy, so that it is read again); NGX_ERROR, why in *error (and errno
 * in *err, if a call failed), a content that is not a JWKS remembered
 * as seen so that it is reported once.
 *
 * Whether the stamp can tell the next change is git's "racy" question
 * (Documentation/technical/racy-git.txt): a write in the same clock tick
 * as the one that made the content read here (a second on some file
 * systems, a few milliseconds on others) leaves the stamp as it was.
 * Until the file's ctime, which only the kernel sets, is two seconds
 * older than the read, the file is read again at each check and its
 * SHA-256 compared with this one's.
 */

static ngx_int_t
ngx_http_gms_oauth_read(u_char *path, ngx_http_gms_oauth_seen_t *seen,
    gms_jwks_t **jwks, const char **error, ngx_err_t *err)
{
    u_char                      *buf, digest[SHA256_DIGEST_LENGTH];
    size_t                       size;
    ssize_t                      n;
    ngx_fd_t                     fd;
    ngx_int_t                    rc;
    ngx_file_info_t              fi;
    ngx_http_gms_oauth_stamp_t   before, after;

    *err = 0;
    *jwks = NULL;

    fd = ngx_open_file(path, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        *err = ngx_errno;
        *error = ngx_open_file_n " failed";
        return NGX_ERROR;
    }

    rc = NGX_ERROR;
    buf = NULL;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        *err = ngx_errno;
        *error = ngx_fd_info_n " failed";
        goto done;
    }

    ngx_http_gms_oauth_stamp(&fi, &before);
    seen->stamp = before;

    if (!ngx_is_file(&fi) || ngx_file_size(&fi) > GMS_JWKS_MAX_LEN) {
        *error = "not a file of at most 1 MiB";
        goto done;
    }
    size = (size_t) ngx_file_size(&fi);

    buf = ngx_alloc(size + 1, ngx_cycle->log);
    if (buf == NULL) {
        *error = "out of memory";
        goto done;
    }

    n = ngx_read_fd(fd, buf, size + 1);

    if (n == -1) {
        *err = ngx_errno;
        *error = ngx_read_fd_n " failed";
        goto done;
    }

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR) {
        *err = ngx_errno;
        *error = ngx_fd_info_n " failed";
        goto done;
    }

    ngx_http_gms_oauth_stamp(&fi, &after);

    if ((size_t) n != size || !ngx_http_gms_oauth_same(&before, &after)) {
        *error = "changed while it was read";
        seen->racy = 1;
        rc = NGX_AGAIN;
        goto done;
    }

    SHA256(buf, size, digest);

    seen->racy = (before.ctime.tv_sec + 2 > ngx_time());

    if (ngx_memcmp(digest, seen->digest, SHA256_DIGEST_LENGTH) == 0) {
        rc = NGX_DECLINED;
        goto done;
    }

    ngx_memcpy(seen->digest, digest, SHA256_DIGEST_LENGTH);

    *jwks = gms_oauth_jwks_parse((const char *) buf, size, error);
    rc = (*jwks == NULL) ? NGX_ERROR : NGX_OK;

done:

    if (buf) {
        ngx_free(buf);
    }

    (void) ngx_close_file(fd);

    return rc;
}


static void
ngx_http_gms_oauth_stamp(ngx_file_info_t *fi,
    ngx_http_gms_oauth_stamp_t *stamp)
{
    stamp->uniq = ngx_file_uniq(fi);
    stamp->size = ngx_file_size(fi);
    stamp->mtime = fi->st_mtim;
    stamp->ctime = fi->st_ctim;
}


static ngx_int_t
ngx_http_gms_oauth_same(ngx_http_gms_oauth_stamp_t *one,
    ngx_http_gms_oauth_stamp_t *two)
{
    return one->uniq == two->uniq && one->size == two->size
           && one->mtime.tv_sec == two->mtime.tv_sec
           && one->mtime.tv_nsec == two->mtime.tv_nsec
           && one->ctime.tv_sec == two->ctime.tv_sec
           && one->ctime.tv_nsec == two->ctime.tv_nsec;
}


/*
 * At most once a second: the file's stamp (inode, size, mtime and ctime
 * to the nanosecond) as stat says it; read again when it changed, or
 * while it is racy.  gms-token jwks replaces it by a rename, so a new
 * inode; a file rewritten in place is seen too, whatever its size and
 * however soon.
 */

static void
ngx_http_gms_oauth_refresh(ngx_log_t *log, ngx_http_gms_oauth_t *oa,
    ngx_http_gms_oauth_state_t *st)
{
    time_t                       now;
    ngx_err_t                    err;
    ngx_int_t                    rc;
    gms_jwks_t                  *jwks;
    const char                  *error;
    ngx_file_info_t              fi;
    ngx_http_gms_oauth_stamp_t   stamp;

    now = ngx_time();

    if (st->oauth != oa) {
        if (st->jwks) {
            gms_oauth_jwks_free(st->jwks);
        }

        ngx_memzero(st, sizeof(ngx_http_gms_oauth_state_t));

        st->oauth = oa;
        st->seen = oa->seen;
    }

    if (st->checked == now) {
        return;
    }

    st->checked = now;

    if (ngx_file_info(oa->jwks_file.data, &fi) == NGX_FILE_ERROR) {
        if (!st->missing) {
            ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                          "gms: jwks_file \"%s\": " ngx_file_info_n
                          " failed; the keys read before stay",
                          oa->jwks_file.data);
            st->missing = 1;
        }

        return;
    }

    st->missing = 0;

    ngx_http_gms_oauth_stamp(&fi, &stamp);

    if (!st->seen.racy && ngx_http_gms_oauth_same(&stamp, &st->seen.stamp)) {
        return;
    }

    /* a file that cannot be read is tried again once it changes */
    st->seen.stamp = stamp;
    st->seen.racy = 0;

    rc = ngx_http_gms_oauth_read(oa->jwks_file.data, &st->seen, &jwks,
                                 &error, &err);

    switch (rc) {

    case NGX_DECLINED:
        return;

    case NGX_AGAIN:
        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "gms: jwks_file \"%s\" %s; the keys read before "
                      "stay until the next check",
                      oa->jwks_file.data, error);
        return;

    case NGX_ERROR:
        ngx_log_error(NGX_LOG_ERR, log, err,
                      "gms: jwks_file \"%s\" changed but is not a JWKS: "
                      "%s; the keys read before stay",
                      oa->jwks_file.data, error);
        return;
    }

    if (st->jwks) {
        gms_oauth_jwks_free(st->jwks);
    }

    st->jwks = jwks;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "gms: jwks_file \"%s\" read again: %uz keys",
                  oa->jwks_file.data, gms_oauth_jwks_nkeys(jwks));
}


/*
 * A token not in the cache: NGX_DECLINED, not an OAuth token (DataHub's
 * own, checked as before); NGX_OK, verified, claims filled as a session
 * token's; NGX_ABORT, refused (ctx->result says why), without Redis.
 */

ngx_int_t
ngx_http_gms_oauth_verify(ngx_http_request_t *r, ngx_http_gms_ctx_t *ctx,
    const u_char *token, size_t len, gms_jwt_claims_t *claims)
{
    ngx_uint_t                   i, n;
    gms_oauth_rc_e               rc;
    gms_oauth_claims_t           oc;
    ngx_http_gms_oauth_t        *oa;
    gms_oauth_provider_t         providers[NGX_HTTP_GMS_OAUTH_MAX];
    ngx_http_gms_main_conf_t    *gmcf;
    ngx_http_gms_oauth_state_t  *st;

    gmcf = ngx_http_get_module_main_conf(r, ngx_http_gms_module);

    if (gmcf->credentials.oauth == NULL) {
        return NGX_DECLINED;
    }

    oa = gmcf->credentials.oauth->elts;
    n = gmcf->credentials.oauth->nelts;

    for (i = 0; i < n; i++) {
        st = &ngx_http_gms_oauth_states[i];
        ngx_http_gms_oauth_refresh(r->connection->log, &oa[i], st);

        providers[i] = oa[i].provider;

        if (st->jwks) {
            providers[i].jwks = st->jwks;
        }
    }

    rc = gms_oauth_verify(token, len, providers, n, ngx_http_gms_cache_now_ms(),
                          (int64_t) gmcf->credentials.jwt_leeway, &oc);

    switch (rc) {

    case GMS_OAUTH_NOT_OAUTH:
        return NGX_DECLINED;

    case GMS_OAUTH_OK:
        ngx_memzero(claims, sizeof(gms_jwt_claims_t));

        claims->type = GMS_TOKEN_OAUTH;
        claims->version = 1;
        claims->expires_at = oc.expires_at;
        claims->actor_len = oc.actor_len;
        ngx_memcpy(claims->actor, oc.actor, oc.actor_len + 1);

        ctx->type = GMS_TOKEN_OAUTH;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "gms: token id \"%s\" an OAuth token of \"%s\"",
                       ctx->id, providers[oc.provider].issuer);

        return NGX_OK;

    case GMS_OAUTH_EXPIRED:
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_EXPIRED]);
        ctx->result = NGX_HTTP_GMS_EXPIRED;
        break;

    case GMS_OAUTH_PREMATURE:
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_EXPIRED]);
        ctx->result = NGX_HTTP_GMS_INVALID;
        break;

    case GMS_OAUTH_MALFORMED:
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_MALFORMED]);
        ctx->result = NGX_HTTP_GMS_INVALID;
        break;

    default: /* GMS_OAUTH_UNTRUSTED, GMS_OAUTH_BAD_SIGNATURE */
        ngx_http_gms_count(jwt_rejected[NGX_HTTP_GMS_JWT_BAD_SIGNATURE]);
        ctx->result = NGX_HTTP_GMS_INVALID;
        break;
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "gms: token id \"%s\" refused as an OAuth token: %s",
                  ctx->id, oc.error);

    return NGX_ABORT;
}


/* what the cache's entries of OAuth tokens depend on, for its source */

void
ngx_http_gms_oauth_source(ngx_http_gms_main_conf_t *gmcf, uint32_t *crc)
{
    ngx_uint_t             i, k;
    ngx_http_gms_oauth_t  *oa;

    if (gmcf->credentials.oauth == NULL) {
        return;
    }

    oa = gmcf->credentials.oauth->elts;

    for (i = 0; i < gmcf->credentials.oauth->nelts; i++) {
        ngx_crc32_update(crc, (u_char *) oa[i].provider.issuer,
                         ngx_strlen(oa[i].provider.issuer) + 1);

        for (k = 0; k < oa[i].provider.naudiences; k++) {
            ngx_crc32_update(crc, (u_char *) oa[i].provider.audiences[k],
                             ngx_strlen(oa[i].provider.audiences[k]) + 1);
        }

        ngx_crc32_update(crc, (u_char *) oa[i].provider.user_claim,
                         ngx_strlen(oa[i].provider.user_claim) + 1);
        ngx_crc32_update(crc, (u_char *) &oa[i].provider.alg,
                         sizeof(oa[i].provider.alg));
        ngx_crc32_update(crc, oa[i].jwks_file.data, oa[i].jwks_file.len);
    }
}


static void
ngx_http_gms_oauth_cleanup(void *data)
{
    gms_oauth_jwks_free(data);
}
