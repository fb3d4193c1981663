
/*
 * gms-token sync: the cached tokens made equal to DataHub's own list
 * (GraphQL listAccessTokens, one page a line on stdin, or asked of GMS
 * itself with --gms).  The whole list is read and checked first, so that
 * bad input or a failed page changes nothing; then every token is written
 * as 'put' writes it, in pipelined batches; --prune walks the cached
 * tokens with SCAN and deletes those the list does not have, except those
 * created in the last minute (DataHub's search index lags behind) and,
 * with --gms, those GMS still has when asked for by urn (gms_sync_lookup).
 * Every token added, changed, deleted as expired or pruned is published
 * on <prefix>invalidate: an edge drops what it cached for it, the "no such
 * token" of a token tried before it was listed included.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gms_token.h"
#include "gms_sync_tokens.h"
#include "gms_tool_msgs.h"
#include "gms_tool_conn.h"
#include "gms_tool_redis.h"


/* tokens per pipelined batch, and keys asked of each SCAN step */
#define GMS_SYNC_BATCH         1000

/* a token created this recently may be missing from DataHub's list */
#define GMS_SYNC_PRUNE_GRACE   60000

/* cached tokens the list misses, asked for by urn in one request */
#define GMS_SYNC_LOOKUP        100

/* StatefulTokenService.tokenUrnFromKey: a token's urn, from its id */
#define GMS_SYNC_TOKEN_URN     "urn:li:dataHubAccessToken:"

/* DataHub's ListAccessTokensResolver (auth.graphql) */
#define GMS_SYNC_QUERY                                                       \
    "query listAccessTokens($input: ListAccessTokenInput!) {\n"              \
    "  listAccessTokens(input: $input) {\n"                                  \
    "    start\n    count\n    total\n"                                      \
    "    tokens {\n      urn\n      id\n      actorUrn\n      ownerUrn\n"    \
    "      name\n      createdAt\n      expiresAt\n    }\n  }\n}"

/*
 * Deletes a token's key unless it was created after ARGV[1] (-1: kept);
 * what it deleted is published on ARGV[2] as ARGV[3], in the same step,
 * unless ARGV[3] is empty (a key that holds no token id).  An expired
 * token is deleted with an ARGV[1] of the end of time.  A key that is no
 * hash has no createdAt (pcall) and is deleted, as DEL alone would.
 */
static const char  gms_sync_delete_script[] =
    "local c = tonumber(redis.pcall('HGET', KEYS[1], 'createdAt'))\n"
    "if c and c > tonumber(ARGV[1]) then return -1 end\n"
    "if redis.call('DEL', KEYS[1]) == 0 then return 0 end\n"
    "if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[2], ARGV[3]) end\n"
    "return 1\n";

#define GMS_SYNC_FOREVER       "9007199254740992"


typedef struct {
    char                   id[GMS_TOKEN_ID_LEN + 1];
    char                  *actor;
    size_t                 actor_len;
    int64_t                expires_at;     /* ms since the epoch, 0: never */
    int64_t                created_at;     /* ms since the epoch, 0: unknown */
    size_t                 seq;            /* input order */
    unsigned               changed;        /* written: added or updated */
    size_t                 index;          /* in its page's tokens[] */
    unsigned               line;
} gms_sync_token_t;


/* a cached token's key that the list does not have */
typedef struct {
    char                  *key;
    size_t                 len;
} gms_sync_missing_t;


typedef struct {
    gms_sync_token_t      *tokens;
    size_t                 ntokens;
    size_t                 nalloc;
    size_t                 pages;
    int64_t                total;          /* the largest total of a page */
    const char            *where;          /* "stdin:", "page ", ... */
    char                  *channel;        /* <prefix>invalidate */
    size_t                 channel_len;
    gms_sync_missing_t    *missing;        /* --prune: sorted, unique */
    size_t                 nmissing;
    size_t                 nalloc_missing;
} gms_sync_input_t;




static int gms_sync_stdin(gms_tool_t *t, gms_sync_input_t *in);
static int gms_sync_fetch(gms_tool_t *t, const gms_graphql_conf_t *gms,
    long page_size, gms_sync_input_t *in);
static char *gms_sync_read_all(gms_tool_t *t, size_t *len);
static int gms_sync_parse(gms_tool_t *t, const char *buf, size_t len,
    gms_sync_input_t *in);
static int gms_sync_ask(gms_tool_t *t, gms_graphql_t *g, json_t *vars,
    unsigned page, gms_sync_input_t *in);
static int gms_sync_page(gms_tool_t *t, json_t *doc, unsigned line,
    gms_sync_input_t *in);
static int gms_sync_token(gms_tool_t *t, json_t *v, unsigned line,
    size_t index, gms_sync_input_t *in);
static int gms_sync_unique(gms_tool_t *t, gms_sync_input_t *in);
static int gms_sync_write(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
static int gms_sync_publish(gms_tool_t *t, gms_sync_input_t *in,
    size_t from, size_t to);
static int gms_sync_missing(gms_tool_t *t, gms_sync_input_t *in);
static int gms_sync_lookup(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, gms_tool_sync_counts_t *counts);
static int gms_sync_lookup_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, size_t from, size_t to, size_t before);
static int gms_sync_prune(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts);
static int gms_sync_holders(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders);
static int gms_sync_listed(gms_sync_input_t *in, const char *id, size_t len);
static unsigned gms_sync_error_line(const char *buf, size_t len,
    size_t off, unsigned line, json_error_t *err);
static const char *gms_sync_shown(json_t *v);
static int gms_sync_cmp(const void *one, const void *two);
static int gms_sync_id_cmp(const void *key, const void *elt);
static int gms_sync_missing_cmp(const void *one, const void *two);
static void gms_sync_free(gms_sync_input_t *in);


int
gms_tool_sync(gms_tool_t *t, int prune, const gms_graphql_conf_t *gms,
    long page_size, gms_tool_sync_counts_t *counts,
    gms_tool_holders_t *holders)
{
    int                rc;
    gms_sync_input_t   in;

    memset(&in, 0, sizeof(gms_sync_input_t));

    in.where = gms ? "page " : "stdin:";

    rc = gms ? gms_sync_fetch(t, gms, page_size, &in)
             : gms_sync_stdin(t, &in);

    if (rc != GMS_TOOL_OK) {
        goto done;
    }

    rc = GMS_TOOL_USAGE;

    if (in.pages == 0) {
        gms_tool_error(t, "stdin: no listAccessTokens page");
        goto done;
    }

    if (gms_sync_unique(t, &in) != 0) {
        goto done;
    }

    if (prune && in.total > (int64_t) in.ntokens) {
        gms_tool_error(t, "%s: %zu tokens, but listAccessTokens has a "
                       "total of %lld: the list is incomplete, refusing "
                       "to --prune", gms ? gms->url : "stdin", in.ntokens,
                       (long long) in.total);
        rc = gms ? GMS_TOOL_GMS : GMS_TOOL_USAGE;
        goto done;
    }

    if (t->conn == NULL) {
        rc = gms_tool_connect(t);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }
    }

    rc = GMS_TOOL_REDIS;

    in.channel = gms_tool_key(t, GMS_KEY_INVALIDATE, "", 0,
                              &in.channel_len);
    if (in.channel == NULL) {
        goto done;
    }

    if (prune && gms_sync_missing(t, &in) != 0) {
        goto done;
    }

    if (prune && gms && in.nmissing) {
        rc = gms_sync_lookup(t, gms, &in, counts);
        if (rc != GMS_TOOL_OK) {
            goto done;
        }

        rc = GMS_TOOL_REDIS;
    }

    counts->tokens = in.ntokens;

    if (gms_sync_write(t, &in, counts) != 0
        || (prune && gms_sync_prune(t, &in, counts) != 0)
        || (holders && gms_sync_holders(t, &in, holders) != 0))
    {
        goto done;
    }

    rc = GMS_TOOL_OK;

done:

    gms_sync_free(&in);

    return rc;
}


void
gms_tool_sync_print(const gms_tool_sync_counts_t *counts)
{
    printf("tokens=%zu added=%zu updated=%zu unchanged=%zu expired=%zu "
           "pruned=%zu kept=%zu\n", counts->tokens, counts->added,
           counts->updated, counts->unchanged, counts->expired,
           counts->pruned, counts->kept);
}


void
gms_tool_holders_free(gms_tool_holders_t *holders)
{
    size_t  i;

    for (i = 0; i < holders->n; i++) {
        free(holders->urns[i]);
    }

    free(holders->urns);
    memset(holders, 0, sizeof(gms_tool_holders_t));
}


static int
gms_sync_stdin(gms_tool_t *t, gms_sync_input_t *in)
{
    int     rc;
    char   *buf;
    size_t  len;

    buf = gms_sync_read_all(t, &len);
    if (buf == NULL) {
        return GMS_TOOL_USAGE;
    }

    rc = gms_sync_parse(t, buf, len, in);
    free(buf);

    return rc;
}


/*
 * Every page of listAccessTokens, asked of GMS: until the tokens number
 * the total it gives, or a page comes back empty.  A failed page fails
 * the whole sync before anything is written.
 */

static int
gms_sync_fetch(gms_tool_t *t, const gms_graphql_conf_t *gms, long page_size,
    gms_sync_input_t *in)
{
    int             rc;
    size_t          before;
    json_t         *vars;
    json_int_t      start;
    unsigned        page;
    gms_graphql_t  *g;

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        return GMS_TOOL_GMS;
    }

    rc = GMS_TOOL_OK;
    start = 0;

    for (page = 1; /* void */ ; page++) {
        vars = json_pack("{s:{s:I, s:I, s:[]}}", "input", "start", start,
                         "count", (json_int_t) page_size, "filters");

        before = in->ntokens;

        if (gms_sync_ask(t, g, vars, page, in) != GMS_TOOL_OK) {
            rc = GMS_TOOL_GMS;
            break;
        }

        if (in->ntokens == before || (int64_t) in->ntokens >= in->total) {
            break;
        }

        start += in->ntokens - before;
    }

    gms_graphql_close(g);

    return rc;
}


/*
 * One listAccessTokens request (vars: its variables, taken), its answer
 * read into "in" as a page of the stdin form, checked the same way.
 */

static int
gms_sync_ask(gms_tool_t *t, gms_graphql_t *g, json_t *vars, unsigned page,
    gms_sync_input_t *in)
{
    int      rc;
    json_t  *list, *doc;

    list = vars ? gms_graphql_query(g, GMS_SYNC_QUERY, vars,
                                    "listAccessTokens")
                : NULL;

    if (list == NULL) {
        return GMS_TOOL_GMS;
    }

    doc = json_pack("{s:{s:o}}", "data", "listAccessTokens", list);

    if (doc == NULL) {
        return GMS_TOOL_GMS;
    }

    rc = gms_sync_page(t, doc, page, in);

    json_decref(doc);

    return rc == GMS_TOOL_OK ? GMS_TOOL_OK : GMS_TOOL_GMS;
}


static char *
gms_sync_read_all(gms_tool_t *t, size_t *len)
{
    char    *buf, *p;
    size_t   n, size;

    size = 65536;
    *len = 0;

    buf = malloc(size);
    if (buf == NULL) {
        gms_tool_error(t, "out of memory");
        return NULL;
    }

    for ( ;; ) {
        if (*len == size) {
            size *= 2;
            p = realloc(buf, size);

            if (p == NULL) {
                free(buf);
                gms_tool_error(t, "out of memory");
                return NULL;
            }

            buf = p;
        }

        n = fread(buf + *len, 1, size - *len, stdin);
        *len += n;

        if (n == 0) {
            break;
        }
    }

    if (ferror(stdin)) {
        gms_tool_error(t, "stdin: cannot read: %s", strerror(errno));
        free(buf);
        return NULL;
    }

    return buf;
}


/*
 * JSON documents one after the other: one a line as asked, though a
 * pretty-printed page parses as well; a line number is that of the first
 * line of the document (of the fault itself for malformed JSON).
 */

static int
gms_sync_parse(gms_tool_t *t, const char *buf, size_t len,
    gms_sync_input_t *in)
{
    int           rc;
    size_t        off, end;
    json_t       *doc;
    unsigned      line;
    json_error_t  err;

    off = 0;
    line = 1;

    for ( ;; ) {
        while (off < len && (buf[off] == ' ' || buf[off] == '\t'
                             || buf[off] == '\r' || buf[off] == '\n'))
        {
            if (buf[off] == '\n') {
                line++;
            }

            off++;
        }

        if (off == len) {
            return GMS_TOOL_OK;
        }

        doc = json_loadb(buf + off, len - off,
                         JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES,
                         &err);

        if (doc == NULL) {
            gms_tool_error(t, "%s%u: malformed JSON: %s", in->where,
                           gms_sync_error_line(buf, len, off, line, &err),
                           err.text);
            return GMS_TOOL_USAGE;
        }

        rc = gms_sync_page(t, doc, line, in);
        json_decref(doc);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }

        for (end = off + err.position; off < end; off++) {
            if (buf[off] == '\n') {
                line++;
            }
        }
    }
}


static int
gms_sync_page(gms_tool_t *t, json_t *doc, unsigned line,
    gms_sync_input_t *in)
{
    int          rc;
    size_t       i;
    json_t      *list, *tokens, *total, *errors, *message;
    const char  *shown;

    errors = json_object_get(doc, "errors");

    if (json_array_size(errors) > 0) {
        message = json_object_get(json_array_get(errors, 0), "message");
        shown = gms_sync_shown(message);

        gms_tool_error(t, "%s%u: the page carries GraphQL errors%s%s",
                       in->where, line, shown ? ": " : "", shown ? shown : "");
        return GMS_TOOL_USAGE;
    }

    list = json_object_get(json_object_get(doc, "data"), "listAccessTokens");

    if (!json_is_object(list)) {
        gms_tool_error(t, "%s%u: not a listAccessTokens page: no "
                       "data.listAccessTokens object", in->where, line);
        return GMS_TOOL_USAGE;
    }

    tokens = json_object_get(list, "tokens");

    if (!json_is_array(tokens)) {
        gms_tool_error(t, "%s%u: data.listAccessTokens.tokens is %s",
                       in->where, line, tokens ? "not an array" : "missing");
        return GMS_TOOL_USAGE;
    }

    total = json_object_get(list, "total");

    if (total) {
        if (!json_is_integer(total) || json_integer_value(total) < 0) {
            gms_tool_error(t, "%s%u: data.listAccessTokens.total is not "
                           "a count", in->where, line);
            return GMS_TOOL_USAGE;
        }

        if (json_integer_value(total) > in->total) {
            in->total = json_integer_value(total);
        }
    }

    for (i = 0; i < json_array_size(tokens); i++) {
        rc = gms_sync_token(t, json_array_get(tokens, i), line, i, in);

        if (rc != GMS_TOOL_OK) {
            return rc;
        }
    }

    in->pages++;

    return GMS_TOOL_OK;
}


static int
gms_sync_token(gms_tool_t *t, json_t *v, unsigned line, size_t index,
    gms_sync_input_t *in)
{
    json_t            *id, *actor, *expires, *created;
    int64_t            ms, created_ms;
    const char        *shown;
    gms_sync_token_t  *tok, *p;

    if (!json_is_object(v)) {
        gms_tool_error(t, "%s%u: tokens[%zu] is not an object", in->where, line,
                       index);
        return GMS_TOOL_USAGE;
    }

    id = json_object_get(v, "id");

    if (!json_is_string(id)) {
        gms_tool_error(t, "%s%u: tokens[%zu]: id is %s", in->where, line, index,
                       id ? "not a string" : "missing");
        return GMS_TOOL_USAGE;
    }

    if (!gms_token_id_valid(json_string_value(id), json_string_length(id))) {
        shown = gms_sync_shown(id);

        gms_tool_error(t, "%s%u: tokens[%zu]: id %s%s%sis not base64 "
                       "of 32 bytes", in->where, line, index, shown ? "'" : "",
                       shown ? shown : "", shown ? "' " : "");
        return GMS_TOOL_USAGE;
    }

    actor = json_object_get(v, "actorUrn");

    if (!json_is_string(actor)) {
        gms_tool_error(t, "%s%u: tokens[%zu]: actorUrn is %s", in->where, line,
                       index, actor ? "not a string" : "missing");
        return GMS_TOOL_USAGE;
    }

    if (!gms_actor_valid(json_string_value(actor),
                              json_string_length(actor)))
    {
        shown = gms_sync_shown(actor);

        gms_tool_error(t, "%s%u: tokens[%zu]: actorUrn %s%s%sis not a "
                       "user URN (urn:li:..., no control characters)", in->where, line,
                       index, shown ? "'" : "", shown ? shown : "",
                       shown ? "' " : "");
        return GMS_TOOL_USAGE;
    }

    /* optional: when it was made, for --prune's grace period */
    created = json_object_get(v, "createdAt");
    created_ms = 0;

    if (created != NULL && !json_is_null(created)) {
        if (!json_is_integer(created) || json_integer_value(created) < 0) {
            gms_tool_error(t, "%s%u: tokens[%zu]: createdAt is neither "
                           "milliseconds since the epoch nor null",
                           in->where, line, index);
            return GMS_TOOL_USAGE;
        }

        created_ms = json_integer_value(created);
    }

    expires = json_object_get(v, "expiresAt");

    if (expires == NULL) {
        gms_tool_error(t, "%s%u: tokens[%zu]: expiresAt is missing "
                       "(null for a token that never expires)", in->where, line, index);
        return GMS_TOOL_USAGE;
    }

    if (json_is_null(expires)) {
        ms = 0;

    } else if (json_is_integer(expires) && json_integer_value(expires) >= 0) {
        ms = json_integer_value(expires);

    } else {
        gms_tool_error(t, "%s%u: tokens[%zu]: expiresAt is neither "
                       "milliseconds since the epoch nor null", in->where, line, index);
        return GMS_TOOL_USAGE;
    }

    if (in->ntokens == in->nalloc) {
        in->nalloc = in->nalloc ? in->nalloc * 2 : 1024;
        p = realloc(in->tokens, in->nalloc * sizeof(gms_sync_token_t));

        if (p == NULL) {
            gms_tool_error(t, "out of memory");
            return GMS_TOOL_REDIS;
        }

        in->tokens = p;
    }

    tok = &in->tokens[in->ntokens];

    tok->actor_len = json_string_length(actor);
    tok->actor = malloc(tok->actor_len + 1);

    if (tok->actor == NULL) {
        gms_tool_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    memcpy(tok->actor, json_string_value(actor), tok->actor_len + 1);
    memcpy(tok->id, json_string_value(id), GMS_TOKEN_ID_LEN + 1);
    tok->expires_at = ms;
    tok->created_at = created_ms;
    tok->seq = in->ntokens;
    tok->changed = 0;
    tok->index = index;
    tok->line = line;

    in->ntokens++;

    return GMS_TOOL_OK;
}


/*
 * Sorted by id, each id once.  Pages fetched while tokens come and go may
 * list a token twice, always alike: DataHub never changes a token's user
 * or expiry.  Two different records under one id are bad input.
 */

static int
gms_sync_unique(gms_tool_t *t, gms_sync_input_t *in)
{
    size_t             i, n;
    gms_sync_token_t  *a, *b;

    if (in->ntokens == 0) {
        return 0;
    }

    qsort(in->tokens, in->ntokens, sizeof(gms_sync_token_t), gms_sync_cmp);

    n = 1;

    for (i = 1; i < in->ntokens; i++) {
        a = &in->tokens[n - 1];
        b = &in->tokens[i];

        if (strcmp(a->id, b->id) != 0) {
            in->tokens[n++] = *b;
            continue;
        }

        if (a->actor_len != b->actor_len
            || memcmp(a->actor, b->actor, a->actor_len) != 0
            || a->expires_at != b->expires_at)
        {
            gms_tool_error(t, "%s%u: tokens[%zu]: id %s is also in %s%u "
                           "(tokens[%zu]) with another actorUrn or "
                           "expiresAt", in->where, b->line, b->index, b->id,
                           in->where, a->line, a->index);

            /* [n, i) were moved down or freed: keep gms_sync_free exact */
            for ( /* void */ ; i < in->ntokens; i++) {
                free(in->tokens[i].actor);
            }

            in->ntokens = n;
            return -1;
        }

        free(b->actor);
    }

    in->ntokens = n;

    return 0;
}


static int
gms_sync_write(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    char               *key;
    size_t              i, j, end, key_len;
    int64_t             now;
    redisReply         *reply;
    gms_tool_token_t    tok;
    gms_sync_token_t   *s;
    gms_tool_put_rc_e   rc;

    now = gms_tool_now_ms();
    memset(&tok, 0, sizeof(gms_tool_token_t));

    for (i = 0; i < in->ntokens; i = end) {
        end = i + GMS_SYNC_BATCH < in->ntokens ? i + GMS_SYNC_BATCH
                                               : in->ntokens;

        for (j = i; j < end; j++) {
            s = &in->tokens[j];

            key = gms_tool_key(t, GMS_KEY_TOKEN, s->id, GMS_TOKEN_ID_LEN,
                               &key_len);
            if (key == NULL) {
                return -1;
            }

            if (s->expires_at != 0 && s->expires_at <= now) {
                gms_tool_append(t, "EVAL %s 1 %b %s %b %s",
                                gms_sync_delete_script, key, key_len,
                                GMS_SYNC_FOREVER, in->channel,
                                in->channel_len, s->id);

            } else {
                tok.actor = s->actor;
                tok.actor_len = s->actor_len;
                tok.expires_at = s->expires_at;
                tok.created_at = s->created_at;
                gms_tool_put_append(t, key, key_len, &tok);
            }

            free(key);
        }

        for (j = i; j < end; j++) {
            s = &in->tokens[j];

            if (s->expires_at != 0 && s->expires_at <= now) {
                (void) gms_tool_get_reply(t, &reply);

                if (gms_tool_reply_error(t, reply, "EVAL") != 0) {
                    return -1;
                }

                freeReplyObject(reply);
                counts->expired++;
                continue;
            }

            tok.actor = s->actor;
            tok.actor_len = s->actor_len;
            tok.expires_at = s->expires_at;
            tok.created_at = s->created_at;

            if (gms_tool_put_read(t, &tok, &rc) != 0) {
                return -1;
            }

            switch (rc) {
            case GMS_TOOL_ADDED:
                counts->added++;
                s->changed = 1;
                break;
            case GMS_TOOL_UPDATED:
                counts->updated++;
                s->changed = 1;
                break;
            default:
                counts->unchanged++;
            }
        }

        if (gms_sync_publish(t, in, i, end) != 0) {
            return -1;
        }
    }

    return 0;
}


/*
 * The ids of a batch's added and changed tokens, pipelined.  After the
 * writes, not with them: only their replies tell what changed.
 */

static int
gms_sync_publish(gms_tool_t *t, gms_sync_input_t *in, size_t from,
    size_t to)
{
    size_t       i, n;
    redisReply  *reply;

    n = 0;

    for (i = from; i < to; i++) {
        if (in->tokens[i].changed) {
            gms_tool_append(t, "PUBLISH %b %s", in->channel,
                            in->channel_len, in->tokens[i].id);
            n++;
        }
    }

    for (i = 0; i < n; i++) {
        (void) gms_tool_get_reply(t, &reply);

        if (gms_tool_reply_error(t, reply, "PUBLISH") != 0) {
            return -1;
        }

        freeReplyObject(reply);
    }

    return 0;
}


/*
 * SCAN MATCH <prefix>token:*, never KEYS: Redis goes on serving
 * meanwhile.  The keys of the tokens the list does not have are kept, each
 * once (SCAN may return a key twice), for gms_sync_prune.
 */

static int
gms_sync_missing(gms_tool_t *t, gms_sync_input_t *in)
{
    int                  rc;
    size_t               i, n, base;
    redisReply          *keys, *key;
    gms_tool_scan_t      scan;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    if (gms_tool_scan_open(t, &scan, GMS_KEY_TOKEN) != 0) {
        return -1;
    }

    rc = -1;

    do {
        keys = gms_tool_scan_next(t, &scan);
        if (keys == NULL) {
            goto done;
        }

        for (i = 0; i < keys->elements; i++) {
            key = keys->element[i];

            if (key->type != REDIS_REPLY_STRING || key->len < base
                || gms_sync_listed(in, key->str + base, key->len - base))
            {
                continue;
            }

            if (in->nmissing == in->nalloc_missing) {
                n = in->nalloc_missing ? 2 * in->nalloc_missing : 64;
                m = realloc(in->missing, n * sizeof(gms_sync_missing_t));

                if (m == NULL) {
                    gms_tool_error(t, "out of memory");
                    goto done;
                }

                in->missing = m;
                in->nalloc_missing = n;
            }

            m = &in->missing[in->nmissing];

            m->key = malloc(key->len);
            if (m->key == NULL) {
                gms_tool_error(t, "out of memory");
                goto done;
            }

            memcpy(m->key, key->str, key->len);
            m->len = key->len;
            in->nmissing++;
        }

    } while (!scan.done);

    rc = 0;

    if (in->nmissing == 0) {
        goto done;
    }

    qsort(in->missing, in->nmissing, sizeof(gms_sync_missing_t),
          gms_sync_missing_cmp);

    for (n = 1, i = 1; i < in->nmissing; i++) {
        if (gms_sync_missing_cmp(&in->missing[n - 1], &in->missing[i]) == 0) {
            free(in->missing[i].key);
            continue;
        }

        in->missing[n++] = in->missing[i];
    }

    in->nmissing = n;

done:

    gms_tool_scan_close(&scan);

    return rc;
}


/*
 * The cached tokens the list misses, asked for by urn, GMS_SYNC_LOOKUP at
 * a time: a filter on the "urn" that every search document has
 * (SearchDocumentTransformer).  ListAccessTokensResolver pages by offset
 * over a search index that may change between two pages: a token deleted
 * from a page already read while another is created moves a live token
 * past the pages read, the total still matching.  A token found is listed
 * after all (written, its user a holder, not pruned); a revoked one is
 * gone from the index, and pruned in this very sync.  A failed,
 * incomplete or strange answer fails the sync: nothing is written.
 */

static int
gms_sync_lookup(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, gms_tool_sync_counts_t *counts)
{
    int                  rc;
    char                 urn[sizeof(GMS_SYNC_TOKEN_URN) + GMS_TOKEN_ID_LEN];
    size_t               i, from, n, base, listed, before;
    json_t              *urns, *vars;
    int64_t              total;
    unsigned             page;
    gms_graphql_t       *g;
    gms_sync_missing_t  *m;

    g = gms_graphql_open(t, gms);
    if (g == NULL) {
        return GMS_TOOL_GMS;
    }

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    memcpy(urn, GMS_SYNC_TOKEN_URN, sizeof(GMS_SYNC_TOKEN_URN) - 1);

    rc = GMS_TOOL_OK;
    in->where = "urn lookup ";
    total = in->total;
    listed = in->ntokens;
    page = 0;

    for (i = 0; i < in->nmissing; /* void */ ) {
        urns = json_array();
        if (urns == NULL) {
            gms_tool_error(t, "out of memory");
            rc = GMS_TOOL_REDIS;
            break;
        }

        from = i;

        for (n = 0; i < in->nmissing && n < GMS_SYNC_LOOKUP; i++) {
            m = &in->missing[i];

            /* a key that holds no token id: no token to ask for */
            if (!gms_token_id_valid(m->key + base, m->len - base)) {
                continue;
            }

            memcpy(urn + sizeof(GMS_SYNC_TOKEN_URN) - 1, m->key + base,
                   GMS_TOKEN_ID_LEN);

            if (json_array_append_new(urns,
                                      json_stringn(urn, sizeof(urn) - 1))
                != 0)
            {
                gms_tool_error(t, "out of memory");
                rc = GMS_TOOL_REDIS;
                break;
            }

            n++;
        }

        if (rc != GMS_TOOL_OK) {
            json_decref(urns);
            break;
        }

        if (n == 0) {
            json_decref(urns);
            continue;
        }

        vars = json_pack("{s:{s:i, s:I, s:[{s:s, s:o}]}}", "input", "start",
                         0, "count", (json_int_t) n, "filters", "field", "urn",
                         "values", urns);

        before = in->ntokens;
        in->total = 0;

        if (gms_sync_ask(t, g, vars, ++page, in) != GMS_TOOL_OK) {
            rc = GMS_TOOL_GMS;
            break;
        }

        if (gms_sync_lookup_check(t, gms, in, from, i, before) != 0) {
            rc = GMS_TOOL_GMS;
            break;
        }
    }

    in->total = total;
    gms_graphql_close(g);

    if (rc != GMS_TOOL_OK) {
        return rc;
    }

    if (gms_sync_unique(t, in) != 0) {
        return GMS_TOOL_GMS;
    }

    counts->kept += in->ntokens - listed;

    return GMS_TOOL_OK;
}


/* an answer lists every token asked for it has, and only those */

static int
gms_sync_lookup_check(gms_tool_t *t, const gms_graphql_conf_t *gms,
    gms_sync_input_t *in, size_t from, size_t to, size_t before)
{
    size_t               i, j, base;
    gms_sync_missing_t  *m;

    if (in->total > (int64_t) (in->ntokens - before)) {
        gms_tool_error(t, "%s: listAccessTokens by urn lists %zu tokens of "
                       "a total of %lld: the answer is incomplete, refusing "
                       "to --prune", gms->url, in->ntokens - before,
                       (long long) in->total);
        return -1;
    }

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;

    for (i = before; i < in->ntokens; i++) {
        for (j = from; j < to; j++) {
            m = &in->missing[j];

            if (m->len == base + GMS_TOKEN_ID_LEN
                && memcmp(m->key + base, in->tokens[i].id, GMS_TOKEN_ID_LEN)
                   == 0)
            {
                break;
            }
        }

        if (j == to) {
            gms_tool_error(t, "%s: listAccessTokens by urn lists the token "
                           "%s, not asked for: refusing to --prune", gms->url,
                           in->tokens[i].id);
            return -1;
        }
    }

    return 0;
}


/*
 * The missing keys deleted, pipelined, but those of the tokens found since
 * (gms_sync_lookup) and, in the script, those created in the last minute.
 */

static int
gms_sync_prune(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_sync_counts_t *counts)
{
    char                *id;
    size_t               i, j, end, n, base, id_len;
    int64_t              cutoff;
    redisReply          *del;
    gms_sync_missing_t  *m;

    base = t->prefix_len + sizeof(GMS_KEY_TOKEN) - 1;
    cutoff = gms_tool_now_ms() - GMS_SYNC_PRUNE_GRACE;

    for (i = 0; i < in->nmissing; i = end) {
        end = i + GMS_SYNC_BATCH < in->nmissing ? i + GMS_SYNC_BATCH
                                                : in->nmissing;
        n = 0;

        for (j = i; j < end; j++) {
            m = &in->missing[j];
            id = m->key + base;
            id_len = m->len - base;

            if (gms_sync_listed(in, id, id_len)) {
                continue;
            }

            if (!gms_token_id_valid(id, id_len)) {
                id_len = 0;
            }

            gms_tool_append(t, "EVAL %s 1 %b %lld %b %b",
                            gms_sync_delete_script, m->key, m->len,
                            (long long) cutoff, in->channel,
                            in->channel_len, id, id_len);
            n++;
        }

        for (j = 0; j < n; j++) {
            (void) gms_tool_get_reply(t, &del);

            if (gms_tool_reply_error(t, del, "EVAL") != 0) {
                return -1;
            }

            if (del->type == REDIS_REPLY_INTEGER) {
                if (del->integer < 0) {
                    counts->kept++;

                } else {
                    counts->pruned += del->integer;
                }
            }

            freeReplyObject(del);
        }
    }

    return 0;
}


/* the users of the tokens listed, handed over to the privileges mirror */

static int
gms_sync_holders(gms_tool_t *t, gms_sync_input_t *in,
    gms_tool_holders_t *holders)
{
    size_t  i;

    memset(holders, 0, sizeof(gms_tool_holders_t));

    holders->listed = in->ntokens;
    holders->total = in->total;

    if (in->ntokens == 0) {
        return 0;
    }

    holders->urns = malloc(in->ntokens * sizeof(char *));
    if (holders->urns == NULL) {
        gms_tool_error(t, "out of memory");
        return -1;
    }

    for (i = 0; i < in->ntokens; i++) {
        holders->urns[i] = in->tokens[i].actor;
        in->tokens[i].actor = NULL;
    }

    holders->n = in->ntokens;

    return 0;
}


/* an empty listing has no array: no bsearch of NULL */

static int
gms_sync_listed(gms_sync_input_t *in, const char *id, size_t len)
{
    return len == GMS_TOKEN_ID_LEN && in->ntokens
           && bsearch(id, in->tokens, in->ntokens, sizeof(gms_sync_token_t),
                      gms_sync_id_cmp)
              != NULL;
}


/*
 * The line of a JSON fault; one found at the end of the input is put on
 * the last line there is, not on the empty one after its newline.
 */

static unsigned
gms_sync_error_line(const char *buf, size_t len, size_t off, unsigned line,
    json_error_t *err)
{
    unsigned  last;

    if (err->line <= 0) {
        return line;
    }

    for (last = line; off < len; off++) {
        if (buf[off] == '\n' && off + 1 < len) {
            last++;
        }
    }

    line += err->line - 1;

    return line < last ? line : last;
}


/* a value short and printable enough to quote in a message, else NULL */

static const char *
gms_sync_shown(json_t *v)
{
    size_t       i, len;
    const char  *s;

    if (!json_is_string(v)) {
        return NULL;
    }

    s = json_string_value(v);
    len = json_string_length(v);

    if (len == 0 || len > 120) {
        return NULL;
    }

    for (i = 0; i < len; i++) {
        if (s[i] < 0x20 || s[i] > 0x7e) {
            return NULL;
        }
    }

    return s;
}


static int
gms_sync_cmp(const void *one, const void *two)
{
    int                      r;
    const gms_sync_token_t  *a, *b;

    a = one;
    b = two;

    r = strcmp(a->id, b->id);

    if (r != 0) {
        return r;
    }

    return (a->seq > b->seq) - (a->seq < b->seq);
}


static int
gms_sync_id_cmp(const void *key, const void *elt)
{
    const gms_sync_token_t  *tok;

    tok = elt;

    return memcmp(key, tok->id, GMS_TOKEN_ID_LEN);
}


static int
gms_sync_missing_cmp(const void *one, const void *two)
{
    int                        r;
    const gms_sync_missing_t  *a, *b;

    a = one;
    b = two;

    r = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);

    if (r != 0) {
        return r;
    }

    return (a->len > b->len) - (a->len < b->len);
}


static void
gms_sync_free(gms_sync_input_t *in)
{
    size_t  i;

    for (i = 0; i < in->ntokens; i++) {
        free(in->tokens[i].actor);
    }

    for (i = 0; i < in->nmissing; i++) {
        free(in->missing[i].key);
    }

    free(in->tokens);
    free(in->missing);
    free(in->channel);
}
