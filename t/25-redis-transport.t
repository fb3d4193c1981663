#!/usr/bin/perl

# The Redis transport (issue 15): nginx owns the connection, hiredis only
# formats commands and parses replies.
#
#   - a hostile peer on the Redis address (a greeting nobody asked for, a
#     reply more than asked for, a header announcing 2^31-1 elements, a
#     bulk string of 2^31 bytes, garbage, a reply nested deeper or with
#     more objects or bytes than any the module reads) gets the lookup a
#     503, logged, while the one worker lives on and answers other
#     requests;
#   - addresses: [::1]:PORT, unix:/path, localhost:PORT and a host name
#     through nginx's resolver, looked up again on every reconnect, and no
#     name without a resolver;
#   - an idle connection is PINGed: a peer gone silent is found, on the
#     lookup connection and on the subscription;
#   - TLS: verified against a CA, refused with the wrong CA or the wrong
#     name (503, logged with the reason), verification off, client
#     certificates.

use strict;
use warnings;

use Test::More;

use GmsTest;
use GmsTest::Certs;
use GmsTest::Checks qw(status metric no_crash);
use GmsTest::DNS;
use GmsTest::Edge;
use GmsTest::FakeRedis;

GmsTest::need_module();
GmsTest::need_redis();

my $certs = GmsTest::Certs->new;


# --- a hostile peer ----------------------------------------------------------

my %lookup = map { $_ => undef } qw(EVALSHA EVALSHA_RO EVAL);

my $MB2 = 'x' x (2 * 1024 * 1024);

# replies hiredis would build, over the module's caps on a whole reply
my $deep = "*1\r\n" x 4 . ":1\r\n";
my $many = "*5\r\n" . ("*1024\r\n" . ":1\r\n" x 1024) x 5;
my $KB64 = 'x' x 65536;
my $bytes = "*20\r\n" . "\$65536\r\n$KB64\r\n" x 20;

# [title, FakeRedis options, what the log says, the module's deadline]
my @hostile = (
    ['a greeting on connect, nothing asked',
     [greeting => "+HELLO\r\n"],
     qr/redis protocol error|unexpected answer/],
    ['one reply more than asked for, every time',
     [extra => "+EXTRA\r\n"],
     qr/redis protocol error|unexpected/],
    ['an array header of 2^31-1 elements',
     [on => { map { $_ => GmsTest::FakeRedis::HUGE_ARRAY } keys %lookup }],
     qr/redis protocol error/],
    ['a bulk string of 2^31 bytes, coming',
     [on => { map { $_ => GmsTest::FakeRedis::HUGE_BULK . $MB2 }
              keys %lookup }],
     qr/redis protocol error/],
    ['a bulk string of 2^31 bytes inside the lookup\'s array',
     [on => { map { $_ => "*4\r\n" . GmsTest::FakeRedis::HUGE_BULK . $MB2 }
              keys %lookup }],
     qr/redis protocol error/],
    ['arrays in arrays in arrays in an array',
     [on => { map { $_ => $deep } keys %lookup }],
     qr/redis protocol error.*over the module's limits/],
    ['5 arrays of 1024 integers: more objects than any reply needs',
     [on => { map { $_ => $many } keys %lookup }],
     qr/redis protocol error.*over the module's limits/],
    ['20 strings of 64 KB: more bytes than any reply needs',
     [on => { map { $_ => $bytes } keys %lookup }],
     qr/redis protocol error.*over the module's limits/],
    ['garbage',
     [on => { map { $_ => GmsTest::FakeRedis::GARBAGE } keys %lookup }],
     qr/redis protocol error/],
    # nothing to refuse yet: the lookup's deadline answers it
    ['a bulk string of 2^31 bytes announced, nothing more',
     [on => { map { $_ => GmsTest::FakeRedis::HUGE_BULK } keys %lookup }],
     qr/\[error\].*gms: /, '1s'],
);

for my $case (@hostile) {
    my ($title, $fake_opt, $logged, $timeout) = @$case;

    subtest "hostile peer: $title" => sub {
        my $fake = GmsTest::FakeRedis->start(@$fake_opt);
        # unless said otherwise, a deadline far beyond the client's: a
        # 503 is the module refusing the reply, not the deadline firing
        my $n = GmsTest::Edge->topology(redis => $fake,
                                        timeout => $timeout // '30s');
        my ($worker) = $n->worker_pids;

        my $all = $n->parallel([
            [GET => '/ok', { Authorization => 'Bearer hostile' }],
            map { [GET => "/open?$_"] } 1 .. 5,
        ], timeout => 10);

        is($all->[0]{status}, 503, 'the lookup: 503');
        is(scalar(grep { ($_->{status} // 0) == 200 && $_->{body} eq "open\n" }
                  @$all[1 .. 5]), 5,
           'the other requests on the worker answered meanwhile');
        cmp_ok($fake->connections, '>=', 1, 'the module did connect');
        like($n->error_log, $logged, 'logged');

        is(status($n, 'hostile'), 503, 'again: 503');
        is(($n->http(GET => '/open')->{status} // 0), 200, 'and /open: 200');
        is_deeply([$n->worker_pids], [$worker], 'the same worker');
        unlike($n->error_log, qr/exited on signal/, 'no worker lost');

        no_crash($n);
    };
}

subtest 'hostile peer: a reply nothing asked for, on a quiet connection' => sub {
    # the lookup is answered (not found), then a reply follows when no
    # command is pending: only a protocol error can explain it
    my $fake = GmsTest::FakeRedis->start(on => {
        map {
            my $name = $_;
            $name => sub {
                my ($c) = @_;
                $c->send("\$-1\r\n");
                select undef, undef, undef, 0.3;
                return "+SURPRISE\r\n";
            }
        } keys %lookup
    });
    my $n = GmsTest::Edge->topology(redis => $fake, timeout => '2s');
    my ($worker) = $n->worker_pids;

    is(status($n, 'unknown'), 401, 'the lookup answered: not found, 401');
    ok(GmsTest::wait_until(sub {
           # (or, when the edge's once-a-second HGET of the sync time was
           # waiting, the surprise is its answer: no string, as wrong)
           $n->error_log =~ /redis protocol error.*(?:a reply nothing asked for|an answer to HGET that is no string)/ }, 5),
       'the surprise is a protocol error');
    cmp_ok(metric($n, 'gms_redis_protocol_errors_total') // 0, '>=', 1,
           'counted in gms_redis_protocol_errors_total');

    # the connection was dropped: the next lookup makes a new one
    ok(GmsTest::wait_until(sub {
           status($n, 'unknown') == 401 && $fake->connections >= 2 }, 5),
       'connection dropped, a new one answers');
    is_deeply([$n->worker_pids], [$worker], 'the same worker');

    no_crash($n);
};


# --- addresses ---------------------------------------------------------------

subtest 'an IPv6 address: [::1]:PORT' => sub {
    my $r = GmsTest::Redis->start(bind => '::1');
    GmsTest::Edge::seed($r, 'six');

    my $n = GmsTest::Edge->topology(redis => $r, timeout => '2s');
    like($r->address, qr/^\[::1\]:\d+$/, 'the address');
    is(status($n, 'six'), 200, 'a seeded token: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');

    no_crash($n);
};

subtest 'a unix socket: unix:/path' => sub {
    my $r = GmsTest::Redis->start(unixsocket => 1);
    GmsTest::Edge::seed($r, 'local');

    my $n = GmsTest::Edge->topology(timeout => '2s', directives =>
        'gms_token_redis unix:' . $r->unixsocket . ';');
    is(status($n, 'local'), 200, 'a seeded token: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');
    like(scalar($r->cmd(CLIENT => 'LIST')), qr/addr=\S*redis\.sock/,
         'over the socket');

    no_crash($n);
};

subtest 'a host name through nginx\'s resolver, again on every reconnect' => sub {
    my $one = GmsTest::Redis->start;
    my $two = GmsTest::Redis->start(bind => '127.0.0.2', port => $one->port);
    GmsTest::Edge::seed($one, 'token-one');
    GmsTest::Edge::seed($two, 'token-two');

    my $dns = GmsTest::DNS->start(names => { 'redis.test' => '127.0.0.1',
                                             'localhost'  => '127.0.0.1' });
    my $port = $one->port;
    my $resolver = 'resolver 127.0.0.1:' . $dns->port . ' valid=1s ipv6=off;';

    # "localhost" too is a name like any other: nginx's resolver, never
    # a blocking getaddrinfo() (or /etc/hosts) in the worker
    my $n = GmsTest::Edge->topology(timeout => '2s', directives =>
        "$resolver\n    gms_token_redis localhost:$port;");
    is(status($n, 'token-one'), 200, 'localhost:PORT: 200');
    cmp_ok($dns->queries('localhost'), '>=', 1, 'localhost was asked for');
    no_crash($n);

    $n = GmsTest::Edge->topology(timeout => '2s', directives =>
        "$resolver\n    gms_token_redis redis.test:$port;");

    is(status($n, 'token-one'), 200, 'the first Redis answers: 200');
    is(status($n, 'token-two'), 401, 'the second one\'s token: 401');
    cmp_ok($dns->queries('redis.test'), '>=', 1, 'the name was asked for');

    # the name moves, the old server dies: the reconnect follows the name
    $dns->set('redis.test' => '127.0.0.2');
    my $asked = $dns->queries('redis.test');
    $one->kill;

    ok(GmsTest::wait_until(sub { status($n, 'token-two') == 200 }, 10),
       'requests follow the name to 127.0.0.2');
    is(status($n, 'token-one'), 401, 'with its data');
    cmp_ok($dns->queries('redis.test'), '>', $asked, 'asked again');

    no_crash($n);
};

subtest 'a name without a resolver: nginx -t fails' => sub {
    my ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis redis.test:6379;
    gms_token_salt "";
}
CONF
    isnt($rc, 0, 'nginx -t fails');
    like($out, qr/needs a "resolver"/, 'saying why');

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    resolver 127.0.0.1:53 ipv6=off;
    gms_token_redis redis.test:6379;
    gms_token_salt "";
}
CONF
    is($rc, 0, 'with a resolver: ok') or diag $out;
};


# --- an idle connection ------------------------------------------------------

subtest 'a peer gone silent: the idle PING finds it, on both connections' => sub {
    # answers everything until the first PING, then nothing more on that
    # connection: a host gone, a firewall that forgot the connection
    my $fake = GmsTest::FakeRedis->start(on => {
        PING => sub { my ($c) = @_; 1 while $c->read_command; return '' },
    });
    my $n = GmsTest::Edge->topology(redis => $fake, timeout => '2s',
        http => 'gms_token_cache zone=tokens:1m ttl=60s;');
    my ($worker) = $n->worker_pids;

    is(status($n, 'before'), 401, 'the lookup connection answers: 401');
    ok(GmsTest::wait_until(sub {
           (metric($n, 'gms_token_invalidation_subscriptions') // 0) == 1 },
           5),
       'subscribed');

    # PINGed after 10 s of quiet, dropped 10 s later without an answer
    ok(GmsTest::wait_until(sub {
           my $log = $n->error_log;
           $log =~ /closing the redis lookup connection to \S+: no answer to PING/
           && $log =~ /closing the redis subscription connection to \S+: no answer to PING/
       }, 40),
       'both connections dropped: "no answer to PING"');
    ok(GmsTest::wait_until(sub {
           (grep { /^SUBSCRIBE / } $fake->commands) >= 2
           && (metric($n, 'gms_token_invalidation_flushes_total') // 0) >= 2
       }, 5),
       'subscribed again, dropping the cache');
    # (503 at once during the short backoff after the drop, by design)
    ok(GmsTest::wait_until(sub { status($n, 'after') == 401 }, 5),
       'a new lookup connection answers: 401');
    is_deeply([$n->worker_pids], [$worker], 'the same worker');

    no_crash($n);
};


# --- TLS ---------------------------------------------------------------------

my $tls = GmsTest::Redis->start(tls => $certs);
GmsTest::Edge::seed($tls, 'secure');
my $tls_port = $tls->tls_port;
my $dns = GmsTest::DNS->start(names => { 'redis.test' => '127.0.0.1' });
my $resolver = 'resolver 127.0.0.1:' . $dns->port . ' valid=1s ipv6=off;';

# An edge on gms_token_redis $address with TLS; @ssl:
# gms_token_redis_ssl_* directives in order, each as the name's end and
# its value (resolver: a resolver line before them).
sub tls_edge {
    my ($address, @ssl) = @_;
    my ($resolver, $conf) = ('', "gms_token_redis $address tls;\n");
    while (my ($name, $value) = splice @ssl, 0, 2) {
        if ($name eq 'resolver') {
            $resolver = "$value\n    ";
        } else {
            $conf .= "    gms_token_redis_ssl_$name $value;\n";
        }
    }
    return GmsTest::Edge->topology(timeout => '2s',
                                   directives => $resolver . $conf);
}

my $local = "127.0.0.1:$tls_port";

subtest 'TLS, verified against the CA, the name from the address' => sub {
    my $n = tls_edge("redis.test:$tls_port", resolver => $resolver,
                      trusted_certificate => $certs->{ca});

    is(status($n, 'secure'), 200, 'a seeded token: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');
    is(metric($n, 'gms_redis_tls_handshake_failures_total'), 0,
       'no handshake failures');

    no_crash($n);
};

# A subtest: with these gms_token_redis_ssl_* directives, a seeded token
# gets a 200.
sub tls_ok {
    my ($title, @ssl) = @_;

    subtest $title => sub {
        my $n = tls_edge($local, @ssl);

        is(status($n, 'secure'), 200, 'a seeded token: 200');
        no_crash($n);
    };
}

tls_ok('TLS, the CA named by gms_token_redis_ssl_name',
       trusted_certificate => $certs->{ca}, name => 'localhost');

subtest 'TLS, an address as the name: the certificate\'s IP entries' => sub {
    my $n = tls_edge($local, trusted_certificate => $certs->{ca});

    is(status($n, 'secure'), 200, '127.0.0.1 is in the certificate: 200');
    no_crash($n);

    $n = tls_edge($local, trusted_certificate => $certs->{ca},
                  name => '127.0.0.2');

    is(status($n, 'secure'), 503, '127.0.0.2 is not: 503');
    like($n->error_log, qr/\[error\].*does not match "127\.0\.0\.2"/,
         'logged: does not match "127.0.0.2"');
    no_crash($n);
};

# The handshake failures counted so far.
sub handshake_failures {
    my ($n) = @_;
    return metric($n, 'gms_redis_tls_handshake_failures_total') // 0;
}

subtest 'TLS, the wrong CA: 503, logged, counted' => sub {
    my $n = tls_edge($local, trusted_certificate => $certs->{wrong_ca},
                     name => 'localhost');

    is(status($n, 'secure'), 503, 'a seeded token: 503, never a downgrade');
    # Redis sends its CA along with its certificate: OpenSSL's reason is
    # then that CA, self-signed and not trusted
    like($n->error_log,
         qr/\[error\].*certificate.*(?:unable\ to\ get\ local\ issuer
            |self-signed\ certificate\ in\ certificate\ chain)/x,
         'logged with the reason');
    cmp_ok(handshake_failures($n), '>=', 1,
           'gms_redis_tls_handshake_failures_total');

    my $before = handshake_failures($n);
    ok(GmsTest::wait_until(sub {
           status($n, 'secure') == 503 && handshake_failures($n) > $before
       }, 5),
       'every attempt fails again and is counted');

    no_crash($n);
};

subtest 'TLS, the wrong name: 503, logged' => sub {
    my $n = tls_edge($local, trusted_certificate => $certs->{ca},
                     name => 'wrong.test');

    is(status($n, 'secure'), 503, 'a seeded token: 503');
    like($n->error_log, qr/\[error\].*does not match "wrong\.test"/,
         'logged: does not match "wrong.test"');
    cmp_ok(handshake_failures($n), '>=', 1, 'counted');

    no_crash($n);
};

tls_ok('TLS, verification off: the wrong CA does not matter',
       trusted_certificate => $certs->{wrong_ca}, verify => 'off');

subtest 'TLS to a plain port: 503, the worker lives' => sub {
    my $n = tls_edge('127.0.0.1:' . $tls->port,
                     trusted_certificate => $certs->{ca},
                     name => 'localhost');
    my ($worker) = $n->worker_pids;

    is(status($n, 'secure'), 503, 'a seeded token: 503');
    is(status($n, 'secure'), 503, 'again');
    is_deeply([$n->worker_pids], [$worker], 'the same worker');
    no_crash($n);
};

# Redis refusing the client's certificate sends a TLS alert; with TLS 1.3
# it arrives on the first read, and nginx's ngx_ssl_connection_error()
# logs alerts it does not list (certificate required, unknown CA) at crit
my $peer_alert = qr/\[crit\].*SSL_(?:read|do_handshake)\(\)\ failed
                   \ \(SSL:.*SSL\ alert\ number\ \d+\)/x;

subtest 'mutual TLS' => sub {
    my $m = GmsTest::Redis->start(tls => $certs, tls_auth_clients => 'yes');
    GmsTest::Edge::seed($m, 'mutual');
    my @verified = (trusted_certificate => $certs->{ca},
                    name => 'redis.test');
    my $mutual = '127.0.0.1:' . $m->tls_port;

    my $n = tls_edge($mutual, @verified);
    is(status($n, 'mutual'), 503, 'without a client certificate: 503');
    is(status($n, 'mutual'), 503, 'again');
    no_crash($n, $peer_alert);

    $n = tls_edge($mutual, @verified,
                  certificate => $certs->{client_cert},
                  certificate_key => $certs->{client_key});
    is(status($n, 'mutual'), 200, 'with the client certificate: 200');
    is(status($n, 'nope'), 401, 'an unknown token: 401');
    no_crash($n);

    # a client certificate from another CA is refused by Redis
    my $other = GmsTest::Certs->new(fresh => 1);
    $n = tls_edge($mutual, @verified,
                  certificate => $other->{client_cert},
                  certificate_key => $other->{client_key});
    is(status($n, 'mutual'), 503, 'a client certificate Redis does not trust: 503');
    no_crash($n, $peer_alert);
};

done_testing();
