
/*
 * gms-token's own connection to Redis: a blocking socket (a host name, an
 * IPv4 or IPv6 address, or a unix socket), TLS through OpenSSL when asked,
 * and hiredis only to format the commands and to parse the replies.
 * Debian bookworm's hiredis (0.14) has no TLS, and the module no longer
 * uses hiredis's connection either.
 *
 * Commands are appended to an output buffer that is written when a reply
 * is asked for and none is read yet, as hiredis's redisAppendCommand and
 * redisGetReply do: a pipelined batch is one write, then its replies.
 * Once the connection failed (I/O, timeout, a reply it cannot parse),
 * every later call fails with the same message: the caller drops it.
 */


#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "gms_tool_conn.h"
#include "gms_tool_input.h"
#include "gms_hiredis.h"
#include "gms_tool_msgs.h"


/* as hiredis's redisConnectWithTimeout and redisSetTimeout were given */
#define GMS_CONN_CONNECT_TIMEOUT  5000
#define GMS_CONN_IO_TIMEOUT       60000

/*
 * What a reply may announce, refused before hiredis allocates for it: an
 * array's elements, and the bytes of a reply not yet complete (Redis's
 * own proto-max-bulk-len is 512 MB).  hiredis 0.14 itself refuses arrays
 * nested deeper than 7.
 */
#define GMS_CONN_MAX_ELEMENTS     (1024 * 1024 * 16)
#define GMS_CONN_MAX_PENDING      ((size_t) 512 * 1024 * 1024 + 64)


struct gms_tool_conn_s {
    int                    fd;
    SSL_CTX               *ssl_ctx;
    SSL                   *ssl;
    redisReader           *reader;
    char                  *out;            /* commands not yet written */
    size_t                 out_len;
    size_t                 out_size;
    unsigned               failed:1;
    unsigned               capped:1;       /* the reader refused a size */
    unsigned               cert_asked:1;   /* and none was given */
    char                   error[200];
};


static int gms_conn_connect(gms_tool_t *t, const char *option,
    const char *addr, gms_tool_conn_t **conn, char *err, size_t size);
static int gms_conn_parse(const char *option, const char *addr, char *host,
    size_t size, char port[8], int *unix_socket, char *err, size_t err_size);
static int gms_conn_tcp(gms_tool_conn_t *c, const char *host,
    const char *port, int64_t deadline);
static int gms_conn_unix(gms_tool_conn_t *c, const char *path,
    int64_t deadline);
static int gms_conn_finish(gms_tool_conn_t *c, int64_t deadline);
static int gms_conn_tls_context(gms_tool_conn_t *c, gms_tool_t *t,
    char *err, size_t size);
static int gms_conn_tls(gms_tool_conn_t *c, gms_tool_t *t,
    const char *host, int64_t deadline);
static int gms_conn_no_passphrase(char *buf, int size, int rwflag,
    void *data);
static int gms_conn_cert_asked(SSL *ssl, X509 **x509, EVP_PKEY **pkey);
static const char *gms_conn_ssl_reason(void);
static int gms_conn_wait(gms_tool_conn_t *c, int ssl_rc, short events,
    int64_t deadline);
static int gms_conn_flush(gms_tool_conn_t *c);
static ssize_t gms_conn_recv(gms_tool_conn_t *c, char *buf, size_t size);
static int gms_conn_buffer(gms_tool_conn_t *c, const char *cmd, int len);
static redisReply *gms_conn_run(gms_tool_t *t, const char *cmd, int len);
static void gms_conn_fail(gms_tool_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void *gms_conn_create_array(const redisReadTask *task,
    gms_hiredis_count_t elements);
static int64_t gms_conn_now(void);


/* hiredis's own reply functions, but for the cap on arrays */
static redisReplyObjectFunctions   gms_conn_functions;
static void                     *(*gms_conn_default_array)(
                                     const redisReadTask *task,
                                     gms_hiredis_count_t n);


/*
 * The Redis password: --password-file, else GMS_REDIS_PASSWORD, else none
 * (NULL); the caller's to cleanse and free.  Returns an exit code.
 */

int
gms_tool_conn_password(gms_tool_t *t, char **password, size_t *len)
{
    const char  *env;

    *password = NULL;
    *len = 0;

    if (t->password_file) {
        *password = gms_tool_input_read_file(t, "--password-file",
                                             t->password_file, len);
        return *password ? GMS_TOOL_OK : GMS_TOOL_USAGE;
    }

    env = t->password_env_off ? NULL : getenv("GMS_REDIS_PASSWORD");

    if (env == NULL || *env == '\0') {
        return GMS_TOOL_OK;
    }

    *password = strdup(env);
    if (*password == NULL) {
        gms_tool_msgs_error(t, "out of memory");
        return GMS_TOOL_REDIS;
    }

    *len = strlen(*password);

    return GMS_TOOL_OK;
}


/*
 * A connection to a Redis or a Sentinel, authenticated when a password is
 * given (as user when one is given: --user, never for a Sentinel); the
 * reason of a failure in err, as gms_conn_connect's.
 */

int
gms_tool_conn_peer_open(gms_tool_t *t, const char *option,
    const char *addr, const char *user, const char *password,
    size_t password_len, gms_tool_conn_t **conn, char *err, size_t size)
{
    int               rc;
    char              reason[200];
    const char       *why;
    redisReply       *reply;
    gms_tool_conn_t  *c;

    rc = gms_conn_connect(t, option, addr, conn, reason, sizeof(reason));

    if (rc != GMS_TOOL_OK) {
        if (rc == GMS_TOOL_REDIS) {
            snprintf(err, size, "cannot connect: %s", reason);

        } else {
            snprintf(err, size, "%s", reason);
        }

        return rc;
    }

    if (password == NULL) {
        return GMS_TOOL_OK;
    }

    c = *conn;

    if (user) {
        reply = gms_tool_conn_peer_command(c, "AUTH %s %b", user, password,
                                           password_len);

    } else {
        reply = gms_tool_conn_peer_command(c, "AUTH %b", password,
                                           password_len);
    }

    if (reply == NULL || reply->type == REDIS_REPLY_ERROR) {
        why = reply ? reply->str : gms_tool_conn_peer_error(c);
        snprintf(err, size, "AUTH: %s", why ? why : "no reply");

        if (reply) {
            freeReplyObject(reply);
        }

        gms_tool_conn_peer_close(c);
        *conn = NULL;

        return GMS_TOOL_REDIS;
    }

    freeReplyObject(reply);

    return GMS_TOOL_OK;
}


/*
 * host:port, [ipv6]:port or unix:/path.  GMS_TOOL_USAGE for an address
 * or a TLS file that is wrong whatever the network does, GMS_TOOL_REDIS
 * when it cannot connect; the reason in err either way.
 */

static int
gms_conn_connect(gms_tool_t *t, const char *option, const char *addr,
    gms_tool_conn_t **conn, char *err, size_t size)
{
    int               rc, unix_socket;
    char              host[256], port[8];
    int64_t           deadline;
    redisReader      *r;
    gms_tool_conn_t  *c;

    *conn = NULL;

    if (gms_conn_parse(option, addr, host, sizeof(host), port, &unix_socket,
                       err, size)
        != 0)
    {
        return GMS_TOOL_USAGE;
    }

    if (unix_socket && t->tls) {
        snprintf(err, size, "--tls: '%s' is a unix socket, Redis serves TLS "
                 "on TCP only", gms_tool_msgs_shown(addr));
        return GMS_TOOL_USAGE;
    }

    /* a connection Redis closed is an error to report, not the end */
    signal(SIGPIPE, SIG_IGN);

    c = calloc(1, sizeof(gms_tool_conn_t));
    r = redisReaderCreate();

    if (c == NULL || r == NULL) {
        free(c);

        if (r) {
            redisReaderFree(r);
        }

        snprintf(err, size, "out of memory");
        return GMS_TOOL_REDIS;
    }

    c->fd = -1;
    c->reader = r;

    if (gms_conn_default_array == NULL) {
        gms_conn_functions = *r->fn;
        gms_conn_default_array = r->fn->createArray;
        gms_conn_functions.createArray = gms_conn_create_array;
    }

    r->fn = &gms_conn_functions;
    r->privdata = c;

    if (t->tls) {
        rc = gms_conn_tls_context(c, t, err, size);
        if (rc != GMS_TOOL_OK) {
            gms_tool_conn_peer_close(c);
            return rc;
        }
    }

    deadline = gms_conn_now() + GMS_CONN_CONNECT_TIMEOUT;

    rc = unix_socket ? gms_conn_unix(c, host, deadline)
                     : gms_conn_tcp(c, host, port, deadline);

    if (rc == 0 && t->tls) {
        rc = gms_conn_tls(c, t, host, deadline);
    }

    if (rc != 0) {
        snprintf(err, size, "%s", c->error);
        gms_tool_conn_peer_close(c);
        return GMS_TOOL_REDIS;
    }

    *conn = c;

    return GMS_TOOL_OK;
}


static int
gms_conn_parse(const char *option, const char *addr, char *host, size_t size,
    char port[8], int *unix_socket, char *err, size_t err_size)
{
    long         n;
    char        *end;
    size_t       len;
    const char  *colon;

    *unix_socket = 0;

    if (strncmp(addr, "unix:", 5) == 0 && addr[5] != '\0') {
        if (strlen(addr + 5) >= sizeof(((struct sockaddr_un *) 0)->sun_path)
            || strlen(addr + 5) >= size)
        {
            snprintf(err, err_size, "%s: '%s': the path is too long",
                     option, gms_tool_msgs_shown(addr));
            return -1;
        }

        strcpy(host, addr + 5);
        *unix_socket = 1;

        return 0;
    }

    colon = strrchr(addr, ':');

    if (colon == NULL || colon == addr) {
        snprintf(err, err_size, "%s: '%s' is neither host:port, [ipv6]:port "
                 "nor unix:/path", option, gms_tool_msgs_shown(addr));
        return -1;
    }

    errno = 0;
    n = strtol(colon + 1, &end, 10);

    if (errno || *end != '\0' || end == colon + 1 || colon[1] == '+'
        || colon[1] == '-' || n < 1 || n > 65535)
    {
        snprintf(err, err_size, "%s: bad port in '%s'", option,
                 gms_tool_msgs_shown(addr));
        return -1;
    }

    snprintf(port, 8, "%ld", n);

    len = colon - addr;

    if (addr[0] == '[') {
        if (len < 3 || colon[-1] != ']') {
            snprintf(err, err_size, "%s: '%s': an IPv6 address is written "
                     "[ADDRESS]:PORT", option, gms_tool_msgs_shown(addr));
            return -1;
        }

        addr++;
        len -= 2;

    } else if (memchr(addr, ':', len)) {
        snprintf(err, err_size, "%s: '%s': an IPv6 address is written "
                 "[ADDRESS]:PORT", option, gms_tool_msgs_shown(addr));
        return -1;
    }

    if (len >= size) {
        snprintf(err, err_size, "%s: '%s': the host is too long",
                 option, gms_tool_msgs_shown(addr));
        return -1;
    }

    memcpy(host, addr, len);
    host[len] = '\0';

    return 0;
}


/* every address the name has, in getaddrinfo's order, until one answers */

static int
gms_conn_tcp(gms_tool_conn_t *c, const char *host, const char *port,
    int64_t deadline)
{
    int               rc, one;
    struct addrinfo   hints, *res, *ai;

    memset(&hints, 0, sizeof(struct addrinfo));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;

    rc = getaddrinfo(host, port, &hints, &res);

    if (rc != 0) {
        gms_conn_fail(c, "no address for %s: %s", host,
                      rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -1;
    }

    rc = -1;

    for (ai = res; ai; ai = ai->ai_next) {
        c->fd = socket(ai->ai_family,
                       ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       ai->ai_protocol);

        if (c->fd == -1) {
            gms_conn_fail(c, "socket(): %s", strerror(errno));
            continue;
        }

        one = 1;
        (void) setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

        if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0
            && errno != EINPROGRESS)
        {
            gms_conn_fail(c, "%s", strerror(errno));

        } else if (gms_conn_finish(c, deadline) == 0) {
            rc = 0;
            break;
        }

        close(c->fd);
        c->fd = -1;
    }

    freeaddrinfo(res);

    if (rc == 0) {
        c->failed = 0;
        c->error[0] = '\0';
    }

    return rc;
}


static int
gms_conn_unix(gms_tool_conn_t *c, const char *path, int64_t deadline)
{
    struct sockaddr_un  sun;

    memset(&sun, 0, sizeof(struct sockaddr_un));
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, path);

    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (c->fd == -1) {
        gms_conn_fail(c, "socket(): %s", strerror(errno));
        return -1;
    }

    if (connect(c->fd, (struct sockaddr *) &sun, sizeof(struct sockaddr_un))
        != 0
        && errno != EINPROGRESS && errno != EAGAIN)
    {
        gms_conn_fail(c, "%s", strerror(errno));
        return -1;
    }

    return gms_conn_finish(c, deadline);
}


/* a connect() under way, until it succeeds, fails or the deadline */

static int
gms_conn_finish(gms_tool_conn_t *c, int64_t deadline)
{
    int        error;
    socklen_t  len;

    if (gms_conn_wait(c, 0, POLLOUT, deadline) != 0) {
        gms_conn_fail(c, "%s", strerror(errno));
        return -1;
    }

    error = 0;
    len = sizeof(error);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) {
        error = errno;
    }

    if (error) {
        gms_conn_fail(c, "%s", strerror(error));
        return -1;
    }

    return 0;
}


/*
 * The certificate is always verified: against --tls-ca-file, else the
 * system's CAs.  Read at each connect, so that follow takes renewed
 * files.  A file that cannot be used is a usage error.
 */

static int
gms_conn_tls_context(gms_tool_conn_t *c, gms_tool_t *t, char *err,
    size_t size)
{
    c->ssl_ctx = SSL_CTX_new(TLS_client_method());

    if (c->ssl_ctx == NULL) {
        snprintf(err, size, "TLS: %s", gms_conn_ssl_reason());
        return GMS_TOOL_REDIS;
    }

    (void) SSL_CTX_set_min_proto_version(c->ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(c->ssl_ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(c->ssl_ctx, SSL_VERIFY_PEER, NULL);

    /* an encrypted key is refused, never asked for on the terminal */
    SSL_CTX_set_default_passwd_cb(c->ssl_ctx, gms_conn_no_passphrase);

    if (t->tls_ca_file) {
        if (SSL_CTX_load_verify_locations(c->ssl_ctx, t->tls_ca_file, NULL)
            != 1)
        {
            snprintf(err, size, "--tls-ca-file: cannot load %s: %s",
                     gms_tool_msgs_shown(t->tls_ca_file),
                     gms_conn_ssl_reason());
            return GMS_TOOL_USAGE;
        }

    } else if (SSL_CTX_set_default_verify_paths(c->ssl_ctx) != 1) {
        snprintf(err, size, "TLS: cannot load the system's CAs: %s",
                 gms_conn_ssl_reason());
        return GMS_TOOL_REDIS;
    }

    if (t->tls_cert == NULL) {
        SSL_CTX_set_client_cert_cb(c->ssl_ctx, gms_conn_cert_asked);
        return GMS_TOOL_OK;
    }

    if (SSL_CTX_use_certificate_chain_file(c->ssl_ctx, t->tls_cert) != 1) {
        snprintf(err, size, "--tls-cert: cannot load %s: %s",
                 gms_tool_msgs_shown(t->tls_cert), gms_conn_ssl_reason());
        return GMS_TOOL_USAGE;
    }

    if (SSL_CTX_use_PrivateKey_file(c->ssl_ctx, t->tls_key,
                                    SSL_FILETYPE_PEM)
        != 1
        && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH)
    {
        snprintf(err, size, "--tls-key: cannot load %s: %s",
                 gms_tool_msgs_shown(t->tls_key), gms_conn_ssl_reason());
        return GMS_TOOL_USAGE;
    }

    if (SSL_CTX_check_private_key(c->ssl_ctx) != 1) {
        snprintf(err, size, "--tls-key: %s is not the key of --tls-cert %s",
                 gms_tool_msgs_shown(t->tls_key),
                 gms_tool_msgs_shown(t->tls_cert));
        ERR_clear_error();
        return GMS_TOOL_USAGE;
    }

    return GMS_TOOL_OK;
}


/*
 * The handshake, the name checked as the module checks it: --tls-name,
 * else the host of the address; an IP address against the certificate's
 * IP addresses, a name against its DNS names, and sent as SNI.
 */

static int
gms_conn_tls(gms_tool_conn_t *c, gms_tool_t *t, const char *host,
    int64_t deadline)
{
    int            rc, err;
    long           verify;
    const char    *name;
    unsigned char  ip[sizeof(struct in6_addr)];

    name = t->tls_name ? t->tls_name : host;

    c->ssl = SSL_new(c->ssl_ctx);

    if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1
        || SSL_set_app_data(c->ssl, c) != 1)
    {
        gms_conn_fail(c, "TLS: %s", gms_conn_ssl_reason());
        return -1;
    }

    if (inet_pton(AF_INET, name, ip) == 1
        || inet_pton(AF_INET6, name, ip) == 1)
    {
        rc = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), name);

    } else {
        rc = SSL_set_tlsext_host_name(c->ssl, name) == 1
             && SSL_set1_host(c->ssl, name) == 1;
    }

    if (rc != 1) {
        gms_conn_fail(c, "TLS: cannot verify the name \"%s\": %s", name,
                      gms_conn_ssl_reason());
        return -1;
    }

    for ( ;; ) {
        ERR_clear_error();

        rc = SSL_connect(c->ssl);
        if (rc == 1) {
            return 0;
        }

        err = SSL_get_error(c->ssl, rc);

        if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
            break;
        }

        if (gms_conn_wait(c, err, 0, deadline) != 0) {
            gms_conn_fail(c, "TLS handshake: %s", strerror(errno));
            return -1;
        }
    }

    verify = SSL_get_verify_result(c->ssl);

    if (verify == X509_V_ERR_HOSTNAME_MISMATCH
        || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
    {
        gms_conn_fail(c, "TLS: the server's certificate does not match "
                      "\"%s\"", name);

    } else if (verify != X509_V_OK) {
        gms_conn_fail(c, "TLS: the server's certificate does not verify: %s",
                      X509_verify_cert_error_string(verify));

    } else if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        gms_conn_fail(c, "TLS handshake: %s",
                      errno ? strerror(errno) : "the server closed the "
                      "connection");

    } else {
        gms_conn_fail(c, "TLS handshake: %s", gms_conn_ssl_reason());
    }

    ERR_clear_error();

    return -1;
}


static int
gms_conn_no_passphrase(char *buf, int size, int rwflag, void *data)
{
    (void) buf;
    (void) size;
    (void) rwflag;
    (void) data;

    return 0;
}


/*
 * The server asks for a client certificate and none was given: with TLS
 * 1.3 a server that requires one says so after the handshake, and the
 * client sees the connection reset at its first command; the messages
 * then say why.
 */

static int
gms_conn_cert_asked(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    gms_tool_conn_t  *c;

    (void) x509;
    (void) pkey;

    c = SSL_get_app_data(ssl);
    c->cert_asked = 1;

    return 0;
}


/* OpenSSL's reason for the last error, as "certificate verify failed" */

static const char *
gms_conn_ssl_reason(void)
{
    const char     *reason;
    unsigned long   e;

    e = ERR_peek_last_error();
    reason = e ? ERR_reason_error_string(e) : NULL;
    ERR_clear_error();

    return reason ? reason : "unknown error";
}


/*
 * Waits until the socket can be read or written (for TLS: as OpenSSL
 * wants), or the deadline: errno ETIMEDOUT.  A signal does not end the
 * wait: the command under way is finished, it is short.
 */

static int
gms_conn_wait(gms_tool_conn_t *c, int ssl_rc, short events, int64_t deadline)
{
    int            n;
    int64_t        left;
    struct pollfd  pfd;

    if (ssl_rc == SSL_ERROR_WANT_READ) {
        events = POLLIN;

    } else if (ssl_rc == SSL_ERROR_WANT_WRITE) {
        events = POLLOUT;
    }

    for ( ;; ) {
        left = deadline - gms_conn_now();

        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }

        pfd.fd = c->fd;
        pfd.events = events;
        pfd.revents = 0;

        n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int) left);

        if (n > 0) {
            return 0;
        }

        if (n == 0) {
            errno = ETIMEDOUT;
            return -1;
        }

        if (errno != EINTR) {
            return -1;
        }
    }
}


void
gms_tool_conn_peer_append(gms_tool_conn_t *c, const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    gms_tool_conn_peer_vappend(c, fmt, args);
    va_end(args);
}


void
gms_tool_conn_peer_vappend(gms_tool_conn_t *c, const char *fmt, va_list args)
{
    int    len;
    char  *cmd;

    if (c->failed) {
        return;
    }

    len = redisvFormatCommand(&cmd, fmt, args);

    if (len < 0) {
        gms_conn_fail(c, "cannot format a command: %s",
                      len == -1 ? "out of memory" : "bad format");
        return;
    }

    (void) gms_conn_buffer(c, cmd, len);

    redisFreeCommand(cmd);
}


void
gms_tool_conn_peer_append_argv(gms_tool_conn_t *c, int argc, const char **argv,
    const size_t *lens)
{
    int    len;
    char  *cmd;

    if (c->failed) {
        return;
    }

    len = redisFormatCommandArgv(&cmd, argc, argv, lens);

    if (len < 0) {
        gms_conn_fail(c, "cannot format a command: out of memory");
        return;
    }

    (void) gms_conn_buffer(c, cmd, len);

    redisFreeCommand(cmd);
}


/* a command already in Redis's protocol */

void
gms_tool_conn_peer_append_raw(gms_tool_conn_t *c, const char *cmd, size_t len)
{
    if (!c->failed) {
        (void) gms_conn_buffer(c, cmd, (int) len);
    }
}


static int
gms_conn_buffer(gms_tool_conn_t *c, const char *cmd, int len)
{
    char    *out;
    size_t   size;

    if (c->out_len + len > c->out_size) {
        size = c->out_size ? c->out_size : 16384;

        while (size < c->out_len + len) {
            size *= 2;
        }

        out = realloc(c->out, size);
        if (out == NULL) {
            gms_conn_fail(c, "out of memory");
            return -1;
        }

        c->out = out;
        c->out_size = size;
    }

    memcpy(c->out + c->out_len, cmd, len);
    c->out_len += len;

    return 0;
}


/*
 * The next reply: one already read, else the commands appended are
 * written and replies read until one is complete.  0, or -1 with *reply
 * NULL and the reason in gms_tool_conn_peer_error().
 */

int
gms_tool_conn_peer_get_reply(gms_tool_conn_t *c, redisReply **reply)
{
    char     buf[16384];
    void    *r;
    ssize_t  n;

    *reply = NULL;
    r = NULL;

    if (c->failed) {
        return -1;
    }

    if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
        goto protocol;
    }

    if (r == NULL && gms_conn_flush(c) != 0) {
        return -1;
    }

    while (r == NULL) {
        n = gms_conn_recv(c, buf, sizeof(buf));
        if (n < 0) {
            return -1;
        }

        if (redisReaderFeed(c->reader, buf, n) != REDIS_OK) {
            goto protocol;
        }

        if (c->reader->len - c->reader->pos > GMS_CONN_MAX_PENDING) {
            gms_conn_fail(c, "redis protocol error: a reply longer than "
                          "%zu bytes", GMS_CONN_MAX_PENDING);
            return -1;
        }

        if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
            goto protocol;
        }
    }

    *reply = r;

    return 0;

protocol:

    if (c->capped) {
        gms_conn_fail(c, "redis protocol error: an array of more than %d "
                      "elements", GMS_CONN_MAX_ELEMENTS);

    } else {
        gms_conn_fail(c, "redis protocol error: %s", c->reader->errstr);
    }

    return -1;
}


redisReply *
gms_tool_conn_peer_command(gms_tool_conn_t *c, const char *fmt, ...)
{
    va_list      args;
    redisReply  *reply;

    va_start(args, fmt);
    gms_tool_conn_peer_vappend(c, fmt, args);
    va_end(args);

    (void) gms_tool_conn_peer_get_reply(c, &reply);

    return reply;
}


static int
gms_conn_flush(gms_tool_conn_t *c)
{
    int       err;
    size_t    sent;
    ssize_t   n;
    int64_t   deadline;

    sent = 0;
    deadline = gms_conn_now() + GMS_CONN_IO_TIMEOUT;

    while (sent < c->out_len) {
        err = 0;

        if (c->ssl) {
            ERR_clear_error();

            n = SSL_write(c->ssl, c->out + sent,
                          c->out_len - sent > INT_MAX
                          ? INT_MAX : (int) (c->out_len - sent));

            if (n <= 0) {
                err = SSL_get_error(c->ssl, (int) n);

                if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
                {
                    gms_conn_fail(c, "cannot write: %s",
                                  err == SSL_ERROR_SYSCALL
                                  && ERR_peek_error() == 0
                                  ? strerror(errno) : gms_conn_ssl_reason());
                    return -1;
                }
            }

        } else {
            n = send(c->fd, c->out + sent, c->out_len - sent, MSG_NOSIGNAL);

            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                gms_conn_fail(c, "cannot write: %s", strerror(errno));
                return -1;
            }
        }

        if (n > 0) {
            sent += n;
            deadline = gms_conn_now() + GMS_CONN_IO_TIMEOUT;
            continue;
        }

        if (gms_conn_wait(c, err, POLLOUT, deadline) != 0) {
            gms_conn_fail(c, "cannot write: %s", strerror(errno));
            return -1;
        }
    }

    c->out_len = 0;

    return 0;
}


static ssize_t
gms_conn_recv(gms_tool_conn_t *c, char *buf, size_t size)
{
    int       err;
    ssize_t   n;
    int64_t   deadline;

    deadline = gms_conn_now() + GMS_CONN_IO_TIMEOUT;

    for ( ;; ) {
        err = 0;

        if (c->ssl) {
            ERR_clear_error();

            n = SSL_read(c->ssl, buf, (int) size);
            if (n > 0) {
                return n;
            }

            err = SSL_get_error(c->ssl, (int) n);

            if (err == SSL_ERROR_ZERO_RETURN
                || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0
                    && (n == 0 || errno == 0)))
            {
                gms_conn_fail(c, "the server closed the connection");
                return -1;
            }

            if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
                gms_conn_fail(c, "cannot read: %s", strerror(errno));
                return -1;
            }

            if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
                gms_conn_fail(c, "cannot read: TLS: %s",
                              gms_conn_ssl_reason());
                return -1;
            }

        } else {
            n = recv(c->fd, buf, size, 0);
            if (n > 0) {
                return n;
            }

            if (n == 0) {
                gms_conn_fail(c, "the server closed the connection");
                return -1;
            }

            if (errno != EAGAIN && errno != EINTR) {
                gms_conn_fail(c, "cannot read: %s", strerror(errno));
                return -1;
            }
        }

        if (gms_conn_wait(c, err, POLLIN, deadline) != 0) {
            gms_conn_fail(c, "cannot read: %s", strerror(errno));
            return -1;
        }
    }
}


/* NULL: the connection works */

const char *
gms_tool_conn_peer_error(gms_tool_conn_t *c)
{
    if (c == NULL) {
        return "not connected";
    }

    return c->failed ? c->error : NULL;
}


void
gms_tool_conn_peer_close(gms_tool_conn_t *c)
{
    if (c == NULL) {
        return;
    }

    if (c->ssl) {
        /* a close_notify if it can go at once; the socket closes anyway */
        if (!c->failed) {
            (void) SSL_shutdown(c->ssl);
        }

        SSL_free(c->ssl);
    }

    if (c->ssl_ctx) {
        SSL_CTX_free(c->ssl_ctx);
    }

    if (c->fd != -1) {
        close(c->fd);
    }

    if (c->reader) {
        redisReaderFree(c->reader);
    }

    free(c->out);
    free(c);

    ERR_clear_error();
}


static void
gms_conn_fail(gms_tool_conn_t *c, const char *fmt, ...)
{
    size_t   len;
    va_list  args;

    va_start(args, fmt);
    vsnprintf(c->error, sizeof(c->error), fmt, args);
    va_end(args);

    if (c->cert_asked) {
        len = strlen(c->error);
        snprintf(c->error + len, sizeof(c->error) - len, " (the server asked "
                 "for a client certificate: --tls-cert, --tls-key)");
    }

    c->failed = 1;
}


static void *
gms_conn_create_array(const redisReadTask *task,
    gms_hiredis_count_t elements)
{
    gms_tool_conn_t  *c;

    /* hiredis 0.14's int: a negative count is over the cap, as size_t */
    if ((size_t) elements > GMS_CONN_MAX_ELEMENTS) {
        c = task->privdata;
        c->capped = 1;
        return NULL;
    }

    return gms_conn_default_array(task, elements);
}


static int64_t
gms_conn_now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* the same, on the tool's connection to Redis, t->conn */

redisReply *
gms_tool_conn_command(gms_tool_t *t, const char *fmt, ...)
{
    int          len;
    char        *cmd;
    va_list      args;
    redisReply  *reply;

    if (t->conn == NULL) {
        return NULL;
    }

    va_start(args, fmt);
    len = redisvFormatCommand(&cmd, fmt, args);
    va_end(args);

    if (len < 0) {
        gms_conn_fail(t->conn, "cannot format a command: %s",
                      len == -1 ? "out of memory" : "bad format");
        return NULL;
    }

    reply = gms_conn_run(t, cmd, len);

    redisFreeCommand(cmd);

    return reply;
}


redisReply *
gms_tool_conn_command_argv(gms_tool_t *t, int argc, const char **argv,
    const size_t *lens)
{
    int          len;
    char        *cmd;
    redisReply  *reply;

    if (t->conn == NULL) {
        return NULL;
    }

    len = redisFormatCommandArgv(&cmd, argc, argv, lens);

    if (len < 0) {
        gms_conn_fail(t->conn, "cannot format a command: out of memory");
        return NULL;
    }

    reply = gms_conn_run(t, cmd, len);

    redisFreeCommand(cmd);

    return reply;
}


/* one command, and its reply; in a cluster a redirection followed once */

static redisReply *
gms_conn_run(gms_tool_t *t, const char *cmd, int len)
{
    redisReply  *reply;

    if (t->conn->failed) {
        return NULL;
    }

    (void) gms_conn_buffer(t->conn, cmd, len);
    (void) gms_tool_conn_peer_get_reply(t->conn, &reply);

    if (t->redirect && reply && reply->type == REDIS_REPLY_ERROR) {
        reply = t->redirect(t, reply, cmd, len);
    }

    return reply;
}


void
gms_tool_conn_append(gms_tool_t *t, const char *fmt, ...)
{
    va_list  args;

    if (t->conn == NULL) {
        return;
    }

    va_start(args, fmt);
    gms_tool_conn_peer_vappend(t->conn, fmt, args);
    va_end(args);
}


void
gms_tool_conn_append_argv(gms_tool_t *t, int argc, const char **argv,
    const size_t *lens)
{
    if (t->conn) {
        gms_tool_conn_peer_append_argv(t->conn, argc, argv, lens);
    }
}


int
gms_tool_conn_get_reply(gms_tool_t *t, redisReply **reply)
{
    if (t->conn == NULL) {
        *reply = NULL;
        return -1;
    }

    return gms_tool_conn_peer_get_reply(t->conn, reply);
}


void
gms_tool_conn_close(gms_tool_t *t)
{
    gms_tool_conn_peer_close(t->conn);
    t->conn = NULL;
}
