#!/usr/bin/perl

# conf-examples/gms-edge.conf as shipped, serving real requests: its http
# block read from the file, with only the addresses (Redis, GMS, the
# search cluster, the listening port), the access log's path and the
# secrets' paths (GMS's signing key, the system client's secret) replaced
# by the test's.  Crafted targets that nginx maps to an open location
# reach GMS only as that location's pinned path; a token is still needed
# everywhere else; the cluster's X-Accel-Redirect is ignored.  The open
# paths of conf-examples/redis-unix-socket.conf are checked the same way.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Stub;
use GmsTest::Redis;
use GmsTest::Shipped;
use GmsTest::JWT;

GmsTest::need_module();
GmsTest::need_redis();

my $FILE = 'conf-examples/gms-edge.conf';

my $shipped = GmsTest::Shipped->load($FILE);

# GMS's signing key and the system client's secret, mounted as files
my $secrets = GmsTest::scratch_dir();
my $key = 'shipped-signing-key';
GmsTest::write_file("$secrets/gms-signing-key", "$key\n");
GmsTest::write_file("$secrets/gms-system-client-secret", "sys-secret\n");

my $redis = GmsTest::Redis->start;
my $gms = GmsTest::Stub->echo;
my $search = GmsTest::Stub->start(handler => sub {
    my ($req) = @_;
    return [200, ['Content-Type' => 'application/json',
                  'X-Accel-Redirect' => '/entities/urn:li:corpuser:x'],
            '{"completed":true,"task":{"node":"shipped","id":1,'
            . '"type":"transport","action":"indices:data/write/reindex",'
            . '"start_time_in_millis":1,"cancellable":true,'
            . '"status":{"total":1},"running_time_in_nanos":3}}'];
});

my $n = $shipped->start(
    redis => $redis->port, gms => $gms->port, search => $search->port,
    access_log => 'shipped-access.log', secrets => $secrets);

my $actor = 'urn:li:corpuser:alice';
my $pat = $shipped->personal_token($redis, $key, 'alice');

sub gms_saw {
    my @uris = map { $_->{uri} =~ s/\?.*//r } @{ $gms->requests };
    $gms->clear_requests;
    return \@uris;
}

# the X-DataHub-Actor headers of GMS's last request, joined (undef: none)
sub gms_actor {
    my $req = $gms->requests->[-1] or return undef;
    $gms->clear_requests;
    my @actors = map { $_->[1] } grep { lc $_->[0] eq 'x-datahub-actor' }
                 @{ $req->{headers} };
    return @actors ? join(', ', @actors) : undef;
}

# [method, target, the path GMS must see (undef: nothing, refused)]
my @open = (
    [GET => '/health', '/health'],
    [GET => '/config', '/config'],
    [GET => '/config/search/export', '/config/search/export'],
    [GET => '/schema-registry/subjects', '/schema-registry/subjects'],
    [GET => '/openapi/check/', '/openapi/check/'],
    [GET => '/openapi/up/', '/openapi/up/'],
    [GET => '/entities/x/%2e%2e/%2e%2e/health', '/health'],
    [GET => '/api/gms/entities/x%2F..%2F..%2F..%2F..%2Fhealth', '/health'],
    [GET => '/aspects%2F..%2Fconfig', '/config'],
    [GET => '/schema-registry/x/%2e%2e/y', '/schema-registry/y'],
    [POST => '/aspects%2F..%2Fhealth?action=ingestProposal', undef],
    [POST => '/health', undef],
    [PUT => '/config', undef],
    [DELETE => '/openapi/up/x', undef],
);

# Sends @open to the edge $n: each open path reaches GMS only as pinned
sub check_open {
    my ($n, $label) = @_;
    for my $case (@open) {
        my ($method, $target, $path) = @$case;
        gms_saw();
        my $res = $n->http($method => $target,
                           { 'Content-Type' => 'application/json' },
                           $method eq 'GET' ? undef : '{"proposal":{}}');
        if (defined $path) {
            is($res->{status}, 200, "$label$method $target: open");
            is_deeply(gms_saw(), [$path], "GMS saw only $path");
        } else {
            is($res->{status}, 403, "$label$method $target: refused");
            is_deeply(gms_saw(), [], 'GMS saw nothing');
        }
    }
}

check_open($n, '');

my $res = $n->http(GET => '/entities/urn%3Ali%3Acorpuser%3Aalice');
is($res->{status}, 401, 'elsewhere a token is needed');
is_deeply(gms_saw(), [], 'GMS saw nothing');

$res = $n->http(GET => '/entities/urn%3Ali%3Acorpuser%3Aalice',
                { Authorization => "Bearer $pat" });
is($res->{status}, 200, "a token hashed with the file's salt: 200");
is_deeply(gms_saw(), ['/entities/urn%3Ali%3Acorpuser%3Aalice'],
          'the request line unchanged');

$res = $n->http(POST => '/operations?action=getEsTaskStatus',
                { Authorization => "Bearer $pat",
                  'Content-Type' => 'application/json' },
                '{"task":"shipped:1"}');
like($res->{body}, qr/\\"taskId\\":\\"shipped:1\\"/,
     "the cluster's X-Accel-Redirect ignored: its answer is the task");
is_deeply(gms_saw(), [], 'and GMS saw nothing');

# --- the credentials GMS accepts, and who GMS is told the user is ---------

my $lookups = lookups();

$res = $n->http(GET => '/entities/x', { Authorization => "Bearer "
    . GmsTest::JWT::session($key, 'bob'), 'X-DataHub-Actor' => $actor });
is($res->{status}, 200, "a session token signed with the file's key: 200");
is(gms_actor(), 'urn:li:corpuser:bob',
   "GMS is told the token's user, not the client's spoofed header");

$res = $n->http(GET => '/entities/x',
                { Authorization => "Bearer $pat",
                  'X-DataHub-Actor' => 'urn:li:corpuser:eve' });
is($res->{status}, 200, 'a personal token with a spoofed X-DataHub-Actor');
is(gms_actor(), $actor, "GMS is told the token's user");

$res = $n->http(GET => '/api/gms/entities/x',
                { Authorization => 'Basic __datahub_system:sys-secret',
                  'X-DataHub-Actor' => 'urn:li:corpuser:carol' });
is($res->{status}, 200, 'the system client with the mounted secret: 200');
is(gms_actor(), 'urn:li:corpuser:carol',
   'GMS is told the user the system client acts for');

$res = $n->http(GET => '/entities/x',
                { Authorization => 'Basic __datahub_system:sys-secret' });
is($res->{status}, 200, 'the system client acting for no one');
is(gms_actor(), undef, 'GMS is told no delegated user');

$res = $n->http(GET => '/entities/x',
                { Authorization => 'Basic __datahub_system:wrong',
                  'X-DataHub-Actor' => 'urn:li:corpuser:carol' });
is($res->{status}, 401, 'a wrong system client secret: 401');
is_deeply(gms_saw(), [], 'GMS saw nothing');

$res = $n->http(GET => '/entities/x', { Authorization => 'Bearer '
    . GmsTest::JWT::personal('not-the-key', 'alice') });
is($res->{status}, 401, 'a token signed with another key: 401');
is_deeply(gms_saw(), [], 'GMS saw nothing');

is(lookups(), $lookups,
   'no Redis call: the personal token was cached, the others need none');

$n->stop;

open my $log, '<', $n->dir . '/shipped-access.log' or die "access log: $!";
my @types = map { /type=(\S*)/ ? $1 : () } <$log>;
close $log;
is_deeply([@types[-6 .. -1]], ['SESSION', 'PERSONAL', 'SYSTEM', 'SYSTEM',
                               '-', '-'],
          '$gms_token_type in the shipped access log');

is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');

# --- conf-examples/redis-unix-socket.conf: the same open paths, pinned -----

{
    my $unix = GmsTest::Shipped->load('conf-examples/redis-unix-socket.conf');
    GmsTest::write_file("$secrets/gms-token-salt", "unix-salt\n");
    my $u = $unix->start(
        gms => $gms->port, access_log => 'unix-access.log',
        replace => {
            qr{gms_token_redis unix:/run/redis/redis-server\.sock }
                => 'gms_token_redis 127.0.0.1:' . $redis->port . ' ',
            qr{/etc/nginx/secrets/gms-token-salt;}
                => "$secrets/gms-token-salt;",
        });

    check_open($u, 'unix example: ');

    my $res = $u->http(GET => '/entities/x');
    is($res->{status}, 401, 'unix example: elsewhere a token is needed');
    is_deeply(gms_saw(), [], 'GMS saw nothing');

    $u->stop;
    is_deeply([$u->bad_log_lines], [], 'unix example: no alerts or crashes');
}

# Lookups Redis answered: EVALSHA/EVAL (a token's, a session user's)
sub lookups {
    my $info = $redis->cmd(INFO => 'commandstats');
    my $calls = 0;
    $calls += $1 while $info =~ /^cmdstat_eval(?:sha)?:calls=(\d+)/mg;
    return $calls;
}

done_testing();
