
/*
 * gms-token jwks: an OAuth issuer's JWKS fetched into the file that
 * gms_token_oauth's jwks_file= names.  The discovery document is found as
 * DataHub's JwksUriResolver finds it (1.3.0): the URL without a trailing
 * '/', then /.well-known/openid-configuration unless it ends so already;
 * its jwks_uri is fetched next.  Both over libcurl (http or https, TLS
 * verified, no redirects, as Java's HttpClient by default), 200 only.
 * The JWKS must parse as the module parses it (src/lib/gms_oauth_jwks.c)
 * or the file is left as it was; a good one replaces it atomically: a
 * temporary file in the same directory, fsync'ed, renamed over it.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <curl/curl.h>
#include <jansson.h>

#include "gms_oauth_jwks.h"
#include "gms_cmd_jwks.h"
#include "gms_tool_msgs.h"


#define GMS_JWKS_DISCOVERY     "/.well-known/openid-configuration"
#define GMS_JWKS_TIMEOUT_MS    30000


typedef struct {
    char                  *data;
    size_t                 len;
    int                    too_big;
} gms_jwks_body_t;


static int gms_cmd_jwks_handler(gms_tool_t *t, gms_tool_args_t *a);
static char *gms_jwks_get(gms_tool_t *t, const char *url,
    const char *ca_file, size_t *len);
static size_t gms_jwks_write(char *data, size_t size, size_t n,
    void *userdata);
static int gms_jwks_save(gms_tool_t *t, const char *path, const char *data,
    size_t len);
static int gms_jwks_url(const char *url);


const gms_tool_command_t  gms_cmd_jwks = {
    "jwks", gms_cmd_jwks_handler,
    GMS_OPT(GMS_OPT_ISSUER) | GMS_OPT(GMS_OPT_OUT)
    | GMS_OPT(GMS_OPT_CA_FILE),
    0, 0,
    "Usage: gms-token jwks --issuer URL --out FILE [--ca-file FILE]\n"
    "\n"
    "Fetches an OAuth issuer's JSON Web Key Set into FILE, the jwks_file= "
    "of\n"
    "gms_token_oauth: URL/.well-known/openid-configuration (URL may be "
    "that\n"
    "document's own address), then its jwks_uri.  FILE is replaced "
    "atomically,\n"
    "and only by a JWKS the module accepts (RSA keys with a kid, at least "
    "2048\n"
    "bits); otherwise it is left as it was.  The edge's workers pick a "
    "new\n"
    "file up within a second, without a reload.  Run it from cron or a "
    "timer.\n"
    "\n"
    "Options:\n"
    "  --issuer URL          the issuer (http:// or https://), as "
    "issuer=\n"
    "  --out FILE            the JWKS file to write\n"
    "  --ca-file FILE        the CAs to verify the issuer's TLS "
    "certificate with\n"
    "                        (default: the system's)\n"
    "\n"
    "Exit status: 0 written, 2 usage or FILE not writable, 4 the issuer's\n"
    "documents not fetched or not valid.\n"
};


static int
gms_cmd_jwks_handler(gms_tool_t *t, gms_tool_args_t *a)
{
    int          rc;
    char        *discovery, *doc_text, *jwks_text;
    size_t       len, doc_len, jwks_len;
    json_t      *doc;
    gms_jwks_t  *jwks;
    const char  *issuer, *out, *ca_file, *jwks_uri, *doc_issuer, *error;

    issuer = a->val[GMS_OPT_ISSUER];
    out = a->val[GMS_OPT_OUT];
    ca_file = a->val[GMS_OPT_CA_FILE];

    if (issuer == NULL || out == NULL || out[0] == '\0') {
        gms_tool_msgs_error(t, "--issuer and --out are needed; see "
                            "'gms-token jwks --help'");
        return GMS_TOOL_USAGE;
    }

    if (!gms_jwks_url(issuer)) {
        gms_tool_msgs_error(t, "--issuer: '%s' is not an http:// or "
                            "https:// URL", gms_tool_msgs_shown(issuer));
        return GMS_TOOL_USAGE;
    }

    /* JwksUriResolver.deriveJwksUriFromDiscoveryUri */

    len = strlen(issuer);

    if (issuer[len - 1] == '/') {
        len--;
    }

    discovery = malloc(len + sizeof(GMS_JWKS_DISCOVERY));
    if (discovery == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_GMS;
    }

    memcpy(discovery, issuer, len);
    discovery[len] = '\0';

    if (len < sizeof(GMS_JWKS_DISCOVERY) - 1
        || strcmp(discovery + len - (sizeof(GMS_JWKS_DISCOVERY) - 1),
                  GMS_JWKS_DISCOVERY) != 0)
    {
        memcpy(discovery + len, GMS_JWKS_DISCOVERY,
               sizeof(GMS_JWKS_DISCOVERY));
    }

    rc = GMS_TOOL_GMS;
    doc = NULL;
    jwks_text = NULL;

    doc_text = gms_jwks_get(t, discovery, ca_file, &doc_len);
    if (doc_text == NULL) {
        goto done;
    }

    doc = json_loadb(doc_text, doc_len, 0, NULL);
    jwks_uri = json_string_value(json_object_get(doc, "jwks_uri"));

    if (jwks_uri == NULL || !gms_jwks_url(jwks_uri)) {
        gms_tool_msgs_error(t, "%s: %s", discovery,
                            json_is_object(doc)
                            ? "no jwks_uri, or not an http(s) URL"
                            : "not a JSON object");
        goto done;
    }

    /* keys over plain HTTP from an https issuer: anyone between forges */
    if (strncmp(discovery, "https://", 8) == 0
        && strncmp(jwks_uri, "https://", 8) != 0)
    {
        gms_tool_msgs_error(t, "%s: jwks_uri '%s' is not https, where the "
                            "issuer is: refused", discovery,
                            gms_tool_msgs_shown(jwks_uri));
        goto done;
    }

    /*
     * OpenID Connect Discovery 1.0, 4.3: the document names the issuer,
     * which tokens carry as iss; given the issuer, say when they differ
     */

    doc_issuer = json_string_value(json_object_get(doc, "issuer"));

    if (doc_issuer != NULL && strcmp(doc_issuer, issuer) != 0
        && strstr(issuer, GMS_JWKS_DISCOVERY) == NULL)
    {
        gms_tool_msgs_warn(t, "%s names the issuer '%s', not '%s': tokens "
                           "carry that iss", discovery,
                           gms_tool_msgs_shown(doc_issuer),
                           gms_tool_msgs_shown(issuer));
    }

    jwks_text = gms_jwks_get(t, jwks_uri, ca_file, &jwks_len);
    if (jwks_text == NULL) {
        goto done;
    }

    jwks = gms_oauth_jwks_parse(jwks_text, jwks_len, &error);

    if (jwks == NULL) {
        gms_tool_msgs_error(t, "%s: not a JWKS the module accepts: %s; %s left "
                            "as it was", jwks_uri, error, out);
        goto done;
    }

    len = gms_oauth_jwks_nkeys(jwks);
    gms_oauth_jwks_free(jwks);

    if (gms_jwks_save(t, out, jwks_text, jwks_len) != 0) {
        rc = GMS_TOOL_USAGE;
        goto done;
    }

    printf("%s: %zu RSA key%s from %s\n", out, len, len == 1 ? "" : "s",
           jwks_uri);

    rc = GMS_TOOL_OK;

done:

    json_decref(doc);
    free(doc_text);
    free(jwks_text);
    free(discovery);

    return rc;
}


/* the body of a 200 answer to a GET, or NULL once reported */

static char *
gms_jwks_get(gms_tool_t *t, const char *url, const char *ca_file,
    size_t *len)
{
    long             status;
    CURL            *curl;
    CURLcode         rc;
    gms_jwks_body_t  body;
    char             error[CURL_ERROR_SIZE];

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        gms_tool_msgs_error(t, "cannot initialise libcurl");
        return NULL;
    }

    memset(&body, 0, sizeof(gms_jwks_body_t));
    error[0] = '\0';

    curl = curl_easy_init();

    if (curl == NULL
        || curl_easy_setopt(curl, CURLOPT_URL, url) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https")
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                            (long) GMS_JWKS_TIMEOUT_MS) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK
        || (ca_file
            && curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file) != CURLE_OK)
        || curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, gms_jwks_write)
           != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body) != CURLE_OK
        || curl_easy_setopt(curl, CURLOPT_USERAGENT, "gms-token")
           != CURLE_OK)
    {
        gms_tool_msgs_error(t, "cannot set up libcurl");
        curl_easy_cleanup(curl);
        return NULL;
    }

    rc = curl_easy_perform(curl);

    status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);

    if (rc != CURLE_OK) {
        gms_tool_msgs_error(t, "%s: %s", gms_tool_msgs_shown(url),
                            body.too_big ? "answer larger than 1 MiB"
                            : error[0] ? error : curl_easy_strerror(rc));
        free(body.data);
        return NULL;
    }

    if (status != 200) {
        gms_tool_msgs_error(t, "%s: HTTP %ld", gms_tool_msgs_shown(url),
                            status);
        free(body.data);
        return NULL;
    }

    if (body.data == NULL) {
        body.data = calloc(1, 1);

        if (body.data == NULL) {
            gms_tool_msgs_error(t, "out of memory");
            return NULL;
        }
    }

    *len = body.len;

    return body.data;
}


static size_t
gms_jwks_write(char *data, size_t size, size_t n, void *userdata)
{
    gms_jwks_body_t *body = userdata;

    char    *p;
    size_t   len;

    len = size * n;

    if (len > GMS_JWKS_MAX_LEN - body->len) {
        body->too_big = 1;
        return 0;
    }

    p = realloc(body->data, body->len + len + 1);
    if (p == NULL) {
        return 0;
    }

    memcpy(p + body->len, data, len);
    body->data = p;
    body->len += len;
    body->data[body->len] = '\0';

    return len;
}


/* FILE.XXXXXX written, synced and renamed over FILE */

static int
gms_jwks_save(gms_tool_t *t, const char *path, const char *data,
    size_t len)
{
    int      fd;
    char    *tmp;
    size_t   n;
    ssize_t  w;

    n = strlen(path);

    tmp = malloc(n + sizeof(".XXXXXX"));
    if (tmp == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return -1;
    }

    memcpy(tmp, path, n);
    memcpy(tmp + n, ".XXXXXX", sizeof(".XXXXXX"));

    fd = mkstemp(tmp);

    if (fd == -1) {
        gms_tool_msgs_error(t, "--out: cannot create %s: %s", tmp,
                            strerror(errno));
        free(tmp);
        return -1;
    }

    for (n = 0; n < len; n += (size_t) w) {
        w = write(fd, data + n, len - n);

        if (w <= 0) {
            if (w == -1 && errno == EINTR) {
                w = 0;
                continue;
            }

            goto failed;
        }
    }

    if (fchmod(fd, 0644) == -1 || fsync(fd) == -1) {
        goto failed;
    }

    if (close(fd) == -1) {
        fd = -1;
        goto failed;
    }

    fd = -1;

    if (rename(tmp, path) == -1) {
        goto failed;
    }

    free(tmp);

    return 0;

failed:

    gms_tool_msgs_error(t, "--out: cannot write %s: %s", path, strerror(errno));

    if (fd != -1) {
        (void) close(fd);
    }

    (void) unlink(tmp);
    free(tmp);

    return -1;
}


static int
gms_jwks_url(const char *url)
{
    return (strncmp(url, "http://", 7) == 0 && url[7] != '\0')
           || (strncmp(url, "https://", 8) == 0 && url[8] != '\0');
}
