#!/usr/bin/perl

# gms-token's own connection to Redis (issue 15), against real servers:
# --redis [::1]:PORT and localhost:PORT; TLS (--tls, --tls-ca-file,
# --tls-name, --tls-cert/--tls-key) with the right CA, a wrong CA, a name
# the certificate does not hold, mutual TLS; --sentinel ADDR,... --master
# NAME finding the master, a Sentinel password, no Sentinel reachable,
# and 'follow' following a failover; a peer that is no Redis.  A failure
# to connect is exit code 3 and one line naming the problem, and changes
# nothing in Redis.

use strict;
use warnings;

use Test::More;
use POSIX qw(WNOHANG);

use GmsTest;
use GmsTest::Certs;
use GmsTest::FakeRedis;
use GmsTest::GraphQL;
use GmsTest::Sentinel;
use GmsTest::Tool qw(run_tool start_follow ok_lines gms_account gms_args
                     datahub_id key_of listed now_ms);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $dir = GmsTest::tempdir();
my $now = now_ms();
my $future = $now + 30 * 86_400_000;
my $alice = 'urn:li:corpuser:alice';

sub put {
    my ($name, @conn) = @_;
    return run_tool(undef, 'put', '--id', datahub_id($name), '--actor',
                    $alice, '--expires-at', $future, @conn);
}

sub show {
    my ($name, @conn) = @_;
    return run_tool(undef, 'show', datahub_id($name), @conn);
}

# One page of listAccessTokens, as 'sync' reads it on stdin.
sub page {
    return GmsTest::json_encode({ data => { listAccessTokens => {
        start => 0, count => scalar @_, total => scalar @_,
        tokens => [ map { listed($_) } @_ ] } } }) . "\n";
}

# exit code 3, one line on stderr matching $re, Redis unchanged
sub refused_redis {
    my ($res, $re, $redis, $before, $name) = @_;
    is($res->{rc}, 3, "$name: exit code 3");
    like($res->{err}, qr/^gms-token: [a-z-]+: [^\n]*$re[^\n]*\n\z/,
         "$name: one line on stderr") or diag($res->{err});
    is($res->{out}, '', "$name: nothing on stdout");
    ok($redis->unchanged($before), "$name: Redis unchanged") if $redis;
}

sub refused_usage {
    my ($res, $re, $name) = @_;
    is($res->{rc}, 2, "$name: exit code 2");
    like($res->{err}, qr/^gms-token: [a-z-]+: [^\n]*$re[^\n]*\n\z/,
         "$name: one line on stderr") or diag($res->{err});
}


# --- addresses: [ipv6]:port, a host name -------------------------------------

SKIP: {
    my $v6 = eval { GmsTest::Redis->start(bind => '::1') };
    skip "redis-server on ::1 did not start (no IPv6 loopback?): $@", 5
        unless $v6;

    my @at = ('--redis', '[::1]:' . $v6->port);
    is($v6->address, '[::1]:' . $v6->port, 'the IPv6 address, bracketed');
    my $res = put('v6', @at);
    is_deeply([@$res{qw(rc err)}], [0, ''], 'put --redis [::1]:PORT');
    is($v6->cmd(HGET => key_of('v6'), 'actor'), $alice,
       'the token is in the Redis on ::1');
    $res = show('v6', @at);
    is($res->{rc}, 0, 'show --redis [::1]:PORT');
    like($res->{out}, qr/"actor":"\Q$alice\E"/, 'show: the token');
}

my $redis = GmsTest::Redis->start;

{
    my @at = ('--redis', 'localhost:' . $redis->port);
    my $res = put('by-name', @at);
    is_deeply([@$res{qw(rc err)}], [0, ''],
              'put --redis localhost:PORT: the name resolved (Redis on '
              . '127.0.0.1 only: ::1, if tried first, refuses)');
    is($redis->cmd(HGET => key_of('by-name'), 'actor'), $alice,
       'the token is in Redis');
    is(show('by-name', @at)->{rc}, 0, 'show --redis localhost:PORT');

    my $before = $redis->dump_all;
    refused_redis(put('x', '--redis', 'no-such-host.invalid:6379'),
                  qr/redis no-such-host\.invalid:6379: cannot connect: (?x:
                     )no address for no-such-host\.invalid/,
                  $redis, $before, 'a name that does not resolve');

    refused_usage(put('x', '--redis', '::1:' . $redis->port),
                  qr/--redis: '::1:\d+': an IPv6 address is written (?x:
                     )\[ADDRESS\]:PORT/, 'an IPv6 address without brackets');
    refused_usage(put('x', '--redis', '[::1]'), qr/--redis: bad port/,
                  'brackets and no port');
    refused_usage(put('x', '--redis', 'localhost'),
                  qr/--redis: 'localhost' is neither host:port, (?x:
                     )\[ipv6\]:port nor unix:\/path/, 'no port');
}


# --- TLS ---------------------------------------------------------------------

my $certs = GmsTest::Certs->new;

# OpenSSL's reason when no CA it trusts signed the chain (Redis sends the
# server certificate alone, or with its CA)
my $UNTRUSTED = qr/(?:unable to get local issuer certificate|self-signed (?x:
                   )certificate in certificate chain)/;

{
    my $tls = GmsTest::Redis->start(tls => $certs);
    my $port = $tls->tls_port;
    my @tls = ('--tls', '--tls-ca-file', $certs->{ca});

    my $res = put('tls', '--redis', "127.0.0.1:$port", @tls);
    is_deeply([@$res{qw(rc err)}], [0, ''],
              'put over TLS, the certificate verified by its CA and IP '
              . 'address');
    is($tls->cmd(HGET => key_of('tls'), 'actor'), $alice,
       'the token is in Redis');

    $res = show('tls', '--redis', "localhost:$port", @tls);
    is($res->{rc}, 0, 'show over TLS to localhost: the name verified');
    like($res->{out}, qr/"actor":"\Q$alice\E"/, 'show: the token');

    $res = run_tool(page('sync-1', 'sync-2'), 'sync', '--redis',
                    "127.0.0.1:$port", @tls);
    is_deeply([@$res{qw(rc out err)}],
              [0, "tokens=2 added=2 updated=0 unchanged=0 expired=0 "
                  . "pruned=0 kept=0\n", ''],
              'sync over TLS: pipelined batches');
    ok($tls->cmd(EXISTS => key_of('sync-1'))
       && $tls->cmd(EXISTS => key_of('sync-2')), 'both tokens cached');

    # a pipeline longer than a TLS record and than a socket buffer
    my @many = map { "many-$_" } 1 .. 1500;
    $res = run_tool(page(@many), 'sync', '--redis', "127.0.0.1:$port", @tls);
    is_deeply([@$res{qw(rc out err)}],
              [0, "tokens=1500 added=1500 updated=0 unchanged=0 expired=0 "
                  . "pruned=0 kept=0\n", ''],
              'sync of 1500 tokens over TLS: two batches');

    $res = run_tool(undef, 'grant', $alice, 'GET_ES_TASK_STATUS_PRIVILEGE',
                    '--redis', "127.0.0.1:$port", '--tls-name', 'redis.test',
                    @tls);
    is($res->{rc}, 0, '--tls-name redis.test: a name of the certificate');

    my $before = $tls->dump_all;

    $res = put('wrong-ca', '--redis', "127.0.0.1:$port", '--tls',
               '--tls-ca-file', $certs->{wrong_ca});
    refused_redis($res, qr/redis 127\.0\.0\.1:$port: cannot connect: TLS: (?x:
                           )the server's certificate does not verify: (?x:
                           )$UNTRUSTED/,
                  $tls, $before, 'a wrong CA');

    $res = put('system-ca', '--redis', "127.0.0.1:$port", '--tls');
    refused_redis($res, qr/certificate does not verify: $UNTRUSTED/,
                  $tls, $before,
                  'the system CAs, which do not hold the test CA');

    $res = put('wrong-name', '--redis', "127.0.0.1:$port", @tls,
               '--tls-name', 'other.test');
    refused_redis($res, qr/TLS: the server's certificate does not match (?x:
                           )"other\.test"/,
                  $tls, $before, '--tls-name a name the certificate lacks');

    $res = put('wrong-ip', '--redis', "127.0.0.1:$port", @tls,
               '--tls-name', '127.0.0.2');
    refused_redis($res, qr/does not match "127\.0\.0\.2"/, $tls, $before,
                  'an IP address the certificate lacks');

    $res = put('no-tls', '--redis', "127.0.0.1:$port");
    is($res->{rc}, 3, 'plain to the TLS port: exit code 3');
    ok($tls->unchanged($before), 'plain to the TLS port: Redis unchanged');

    $res = put('tls-to-plain', '--redis', '127.0.0.1:' . $tls->port, @tls);
    refused_redis($res, qr/cannot connect: TLS handshake: /, $tls, $before,
                  'TLS to the plain port');

    refused_usage(put('x', '--redis', "127.0.0.1:$port", '--tls-ca-file',
                      $certs->{ca}),
                  qr/--tls-ca-file goes with --tls/,
                  'a CA file without --tls');
    refused_usage(put('x', '--redis', "127.0.0.1:$port", @tls,
                      '--tls-cert', $certs->{client_cert}),
                  qr/give --tls-cert and --tls-key together/,
                  'a certificate without its key');
    refused_usage(put('x', '--redis', "127.0.0.1:$port", '--tls',
                      '--tls-ca-file', "$dir/none.pem"),
                  qr/--tls-ca-file: cannot load .*none\.pem/,
                  'a CA file that does not exist');
    refused_usage(put('x', '--redis', "unix:$dir/redis.sock", @tls),
                  qr/--tls: 'unix:.*' is a unix socket/,
                  'TLS on a unix socket');
    ok($tls->unchanged($before), 'usage errors: Redis unchanged');
}


# --- mutual TLS --------------------------------------------------------------

{
    my $tls = GmsTest::Redis->start(tls => $certs,
                                    tls_auth_clients => 'yes');
    my @at = ('--redis', '127.0.0.1:' . $tls->tls_port, '--tls',
              '--tls-ca-file', $certs->{ca});
    my $before = $tls->dump_all;

    refused_redis(put('no-cert', @at),
                  qr/redis 127\.0\.0\.1:\d+: .*(?x:
                     )the server asked for a client certificate/,
                  $tls, $before, 'mutual TLS without a client certificate');

    my $res = put('cert', @at, '--tls-cert', $certs->{client_cert},
                  '--tls-key', $certs->{client_key});
    is_deeply([@$res{qw(rc err)}], [0, ''],
              'mutual TLS with the client certificate');
    is($tls->cmd(HGET => key_of('cert'), 'actor'), $alice,
       'the token is in Redis');

    refused_usage(put('x', @at, '--tls-cert', $certs->{client_cert},
                      '--tls-key', $certs->{server_key}),
                  qr/--tls-key: .* is not the key of --tls-cert/,
                  'a key of another certificate');
}


# --- a peer that is no Redis -------------------------------------------------

{
    for my $case ([HUGE_ARRAY => GmsTest::FakeRedis::HUGE_ARRAY,
                   qr/redis protocol error: an array of more than \d+ (?x:
                      )elements/],
                  [GARBAGE => GmsTest::FakeRedis::GARBAGE,
                   qr/redis protocol error: /])
    {
        my ($what, $reply, $re) = @$case;
        my $fake = GmsTest::FakeRedis->start(on => { EVAL => $reply });
        my $res = show('fake', '--redis', '127.0.0.1:' . $fake->port);
        is($res->{rc}, 3, "$what to show's lookup: exit code 3, no crash");
        like($res->{err}, qr/^gms-token: show: redis 127\.0\.0\.1:\d+: (?x:
                             )lookup: $re[^\n]*\n\z/,
             "$what: one line, a protocol error") or diag($res->{err});
        $fake->stop;
    }
}


# --- Sentinel ----------------------------------------------------------------

my $master = GmsTest::Redis->start;
my $replica = GmsTest::Redis->start(replicaof => ['127.0.0.1', $master->port]);
my $sentinels = GmsTest::Sentinel->start(master => $master, name => 'gms');
my @sentinel = ('--sentinel', join(',', $sentinels->addresses),
                '--master', 'gms');

{
    my $res = put('via-sentinel', @sentinel);
    is_deeply([@$res{qw(rc err)}], [0, ''], 'put --sentinel --master');
    is($master->cmd(HGET => key_of('via-sentinel'), 'actor'), $alice,
       'the token is on the master');
    ok(GmsTest::wait_until(sub {
        $replica->cmd(EXISTS => key_of('via-sentinel')) }, 5),
       'and replicated');

    $res = show('via-sentinel', @sentinel);
    is($res->{rc}, 0, 'show --sentinel');

    my $dead = '127.0.0.1:' . GmsTest::free_port();
    $res = put('after-dead', '--sentinel',
               join(',', $dead, $sentinels->addresses), '--master', 'gms');
    is_deeply([@$res{qw(rc err)}], [0, ''],
              'a Sentinel that does not answer: the next one is asked');

    my $before = $master->dump_all;

    $res = put('unknown', '--sentinel', join(',', $sentinels->addresses),
               '--master', 'nosuch');
    refused_redis($res, qr/no sentinel named a master for nosuch (?x:
                           ).*no master of that name/,
                  $master, $before, 'a master name the Sentinels lack');

    my @dead = map { '127.0.0.1:' . GmsTest::free_port() } 1 .. 2;
    $res = put('none', '--sentinel', join(',', @dead), '--master', 'gms');
    refused_redis($res, qr/redis sentinel \Q$dead[0],$dead[1]\E: (?x:
                           )no sentinel named a master for gms (?x:
                           ).*cannot connect/,
                  $master, $before, 'no Sentinel reachable');

    # a replica named as the master (a Sentinel that lags): ROLE refuses it
    my $fake = GmsTest::FakeRedis->start(on => {
        SENTINEL => sub { "*2\r\n\$9\r\n127.0.0.1\r\n\$"
                          . length($replica->port) . "\r\n"
                          . $replica->port . "\r\n" } });
    $res = put('replica', '--sentinel', '127.0.0.1:' . $fake->port,
               '--master', 'gms');
    refused_redis($res, qr/named 127\.0\.0\.1:\d+, whose ROLE is slave/,
                  $replica, $replica->dump_all, 'a replica named: refused');
    $res = put('replica-then-master', '--sentinel',
               join(',', '127.0.0.1:' . $fake->port, $sentinels->addresses),
               '--master', 'gms');
    is_deeply([@$res{qw(rc err)}], [0, ''],
              'a replica named, then the master by the next Sentinel');
    $fake->stop;
    $before = $master->dump_all;

    refused_usage(put('x', '--sentinel', $dead[0]),
                  qr/--sentinel needs --master NAME/, '--sentinel alone');
    refused_usage(put('x', @sentinel, '--redis', '127.0.0.1:6379'),
                  qr/give --redis or --sentinel, not both/,
                  '--redis and --sentinel');
    refused_usage(put('x', '--master', 'gms'),
                  qr/--master goes with --sentinel/, '--master alone');
    refused_usage(put('x', '--sentinel', "$dead[0],localhost",
                      '--master', 'gms'),
                  qr/--sentinel: 'localhost' is neither host:port/,
                  'a bad Sentinel address');
    ok($master->unchanged($before), 'Redis unchanged');
}

# Sentinels with a password of their own
{
    my $m = GmsTest::Redis->start;
    my $s = GmsTest::Sentinel->start(master => $m, name => 'pw', count => 1,
                                     quorum => 1,
                                     sentinel_password => 'sentinel-secret');
    my $file = "$dir/sentinel.pw";
    GmsTest::write_file($file, "sentinel-secret\n");
    my @s = ('--sentinel', join(',', $s->addresses), '--master', 'pw');

    my $before = $m->dump_all;
    refused_redis(put('spw', @s), qr/no sentinel named a master for pw (?x:
                                    ).*NOAUTH/,
                  $m, $before, 'a Sentinel password, not given');
    my $res = put('spw', @s, '--sentinel-password-file', $file);
    is_deeply([@$res{qw(rc err)}], [0, ''], '--sentinel-password-file');
    ok($m->cmd(EXISTS => key_of('spw')), 'the token is on the master');
    unlike(join('', map { $_->{err} } $res), qr/sentinel-secret/,
           'the password is not printed');
    $s->stop;
}


# Sentinels over TLS (GmsTest::Sentinel speaks plain TCP): one Sentinel on
# a TLS port only, talking TLS to a TLS master too
{
    my $m = GmsTest::Redis->start(tls => $certs);
    my $port = GmsTest::free_port();
    my $sdir = GmsTest::tempdir();
    GmsTest::write_file("$sdir/sentinel.conf", <<"CONF");
port 0
tls-port $port
tls-cert-file $certs->{server_cert}
tls-key-file $certs->{server_key}
tls-ca-cert-file $certs->{ca}
tls-auth-clients no
tls-replication yes
bind 127.0.0.1
daemonize no
dir $sdir
sentinel monitor tls 127.0.0.1 @{[ $m->tls_port ]} 1
CONF
    my $pid = GmsTest::spawn([GmsTest::redis_bin('sentinel'), "$sdir/sentinel.conf"],
                             "$sdir/sentinel.out");
    my @s = ('--sentinel', "127.0.0.1:$port", '--master', 'tls');
    my @tls = ('--tls', '--tls-ca-file', $certs->{ca});

    my $res;
    ok(GmsTest::wait_until(sub {
        $res = put('tls-sentinel', @s, @tls);
        $res->{rc} == 0 }, 10),
       '--sentinel with --tls: the Sentinel and the master over TLS')
        or diag($res->{err});
    ok($m->cmd(EXISTS => key_of('tls-sentinel')),
       'the token is on the master');

    my $before = $m->dump_all;
    refused_redis(put('tls-sentinel-ca', @s, '--tls', '--tls-ca-file',
                      $certs->{wrong_ca}),
                  qr/no sentinel named a master for tls .*certificate (?x:
                     )does not verify/,
                  $m, $before, 'a Sentinel whose certificate does not verify');
    kill 'TERM', $pid;
    waitpid $pid, 0;
}


# --- follow through Sentinel, across a failover ------------------------------

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmFuc3BvcnQifQ.'
             . 'c2VjcmV0LWdtcy10cmFuc3BvcnQtc2lnbmF0dXJlLTQ2';
my $token_file = gms_account($SECRET, $dir);

my $gms = GmsTest::GraphQL->start(token => $SECRET);

{
    $gms->tokens([ listed('before-failover') ]);

    my $f = start_follow(gms_args($gms->url, $token_file),
                         '--interval', '1s', '--privileges', 'off',
                         @sentinel);

    ok(GmsTest::wait_until(sub {
        $master->cmd(EXISTS => key_of('before-failover')) }, 10),
       'follow --sentinel: the token written on the master');
    ok(scalar ok_lines($f) >= 1, 'an ok line');

    my $old = $master->port;
    $master->kill;
    my $new = $sentinels->wait_failover($old, 30);
    is($new, $replica->port, 'the Sentinels promote the replica');

    $gms->tokens([ listed('before-failover'), listed('after-failover') ]);
    ok(GmsTest::wait_until(sub {
        $replica->cmd(EXISTS => key_of('after-failover')) }, 40),
       'follow: the next cycles write to the new master');
    is(($replica->cmd('ROLE') // [])->[0], 'master',
       'which is the master now');
    my $oks = ok_lines($f);
    ok(GmsTest::wait_until(sub { ok_lines($f) > $oks }, 10),
       'and follow goes on succeeding');
    like(GmsTest::slurp($f->{err}), qr/failed \(Redis\)/,
         'the cycles while the master was down: failed (Redis) lines');

    kill 'TERM', $f->{pid};
    ok(GmsTest::wait_until(sub { waitpid($f->{pid}, WNOHANG) != 0 }, 5),
       'SIGTERM: follow stops');
    is($?, 0, 'exit 0');
}

done_testing();
