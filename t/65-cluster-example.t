#!/usr/bin/perl

# conf-examples/redis-cluster.conf as shipped, against a real Redis Cluster
# on TLS with a password (three masters, three replicas): only the seed's
# address, the resolver, the CA, the secrets' paths, GMS's address and the
# listening port are the test's.
#
#   - a token gms-token put writes through --redis-cluster is let through
#     to GMS with its user, an unknown one refused with 401, and GMS sees
#     nothing of it;
#   - the lookups are read on the slot's replica (replica=prefer);
#   - gms-token revoke through the cluster: 401 at once, though the cache
#     kept it for 30 s;
#   - the open paths are pinned: GMS sees the pinned path whatever the
#     target, and another method is refused;
#   - /metrics answers the loopback.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use GmsTest;
use GmsTest::Certs;
use GmsTest::Cluster;
use GmsTest::Shipped;
use GmsTest::Stub;
use GmsTest::Tool ();

GmsTest::need_module();
GmsTest::need_redis();

my $bin = GmsTest::Tool::bin();
-x $bin or GmsTest::skip_all("gms-token not built: $bin");

my $certs = GmsTest::Certs->new;
my $c = GmsTest::Cluster->start(tls => $certs, password => 'cluster-secret');

my $secrets = GmsTest::scratch_dir();
GmsTest::write_file("$secrets/redis-auth", "cluster-secret\n");
GmsTest::write_file("$secrets/gms-token-salt", "cluster-salt\n");

my $gms = GmsTest::Stub->echo;

my $shipped = GmsTest::Shipped->load('conf-examples/redis-cluster.conf');
my ($seed) = $c->addresses(tls => 1);

my $n = $shipped->start(
    gms => $gms->port, access_log => 'cluster-access.log',
    replace => {
        qr/resolver 10\.0\.0\.2 valid=10s;/ => 'resolver 127.0.0.1:1;',
        qr/clustercfg\.gms-cache\.abc123\.use1\.cache\.amazonaws\.com:6379/
            => $seed,
        qr{password_file=/etc/nginx/secrets/redis-auth}
            => "password_file=$secrets/redis-auth",
        # the test's seed is an address: the nodes' certificates are
        # checked against a name (the README says so for Memorystore)
        qr{/etc/ssl/certs/ca-certificates\.crt;}
            => "$certs->{ca}; gms_token_redis_ssl_name localhost;",
        qr{/etc/nginx/secrets/gms-token-salt;}
            => "$secrets/gms-token-salt;",
    });

# gms-token as the README says, through the cluster with TLS
my @redis = ('--redis-cluster', join(',', $c->addresses(tls => 1)),
             '--tls', '--tls-ca-file', $certs->{ca},
             '--password-file', "$secrets/redis-auth");

sub tool {
    my (@args) = @_;
    my $out = GmsTest::scratch_dir() . '/tool.out';
    unlink $out;
    my $rc = GmsTest::run([$bin, @args, @redis], $out);
    return ($rc, GmsTest::slurp($out));
}

my $token = 'a-personal-token-of-alice';
my $id = GmsTest::sha256_b64("${token}cluster-salt");

my ($rc, $out) = tool('put', '--id', $id, '--actor', 'urn:li:corpuser:alice',
                      '--expires-in', '1d');
is($rc, 0, 'gms-token put --redis-cluster') or diag($out);
($rc, $out) = tool('grant', 'urn:li:corpuser:alice', 'EDIT_ENTITY');
is($rc, 0, 'gms-token grant --redis-cluster') or diag($out);

my $master = $c->master_of($c->slot('{gms}:token:x'));
ok(defined $master->cmd(HGET => "{gms}:token:$id", 'actor'),
   "the token is on the slot's master, under {gms}:");

sub get {
    my ($path, $bearer, $method) = @_;
    return $n->http($method // 'GET', $path,
                    $bearer ? { Authorization => "Bearer $bearer" } : {},
                    undef, timeout => 5);
}

sub gms_saw {
    my @uris = map { $_->{uri} =~ s/\?.*//r } @{ $gms->requests };
    $gms->clear_requests;
    return \@uris;
}

sub actor_seen {
    my $req = $gms->requests->[-1] or return undef;
    my ($a) = map { $_->[1] } grep { lc $_->[0] eq 'x-datahub-actor' }
              @{ $req->{headers} };
    return $a;
}

# the first map may take a moment: the lookup waits for it
my $res = get('/entities/urn%3Ali%3Acorpuser%3Abob', $token);
is($res->{status}, 200, 'a cached token is let through');
is(actor_seen(), 'urn:li:corpuser:alice', '... to GMS with its user');
is_deeply(gms_saw(), ['/entities/urn%3Ali%3Acorpuser%3Abob'],
          '... the path as sent');

$res = get('/entities/x', 'not-a-token-of-anyone');
is($res->{status}, 401, 'an unknown token is refused');
is_deeply(gms_saw(), [], '... GMS saw nothing');

# replica=prefer: a token not cached yet is read on the slot's replica
# (once the replica's in-step check has answered, and past the 5 s after
# the subscription started, when everything is read from the master)
my ($replica) = $c->replicas_of($master);
my $ro_calls = sub {
    my $info = $replica->cmd(INFO => 'commandstats');
    my $calls = 0;
    $calls += $1 while $info =~ /^cmdstat_eval(?:sha)?_ro:calls=(\d+)/mg;
    return $calls;
};
my $before = $ro_calls->();
my $tries = 0;
my $read_on_replica = GmsTest::wait_until(sub {
    $tries++;
    get('/entities/y', "never-cached-$tries");
    return $ro_calls->() > $before;
}, 15);
gms_saw();
ok($read_on_replica, "lookups are read on the slot's replica");

# revoked through the cluster: the edge's cache drops it at once
($rc, $out) = tool('revoke', $id);
is($rc, 0, 'gms-token revoke --redis-cluster') or diag($out);
my $refused = GmsTest::wait_until(sub {
    get('/entities/x', $token)->{status} == 401;
}, 3);
ok($refused, 'the revoked token is refused within about a second');
gms_saw();

# the open paths, pinned
is(get('/health')->{status}, 200, '/health is open');
is(get('/health', undef, 'POST')->{status}, 403, '... for GET only');
gms_saw();
# decoded it is /health; proxied as sent, GMS would see /%68ealth
is(get('/%68ealth')->{status}, 200, '/%68ealth is /health');
is_deeply(gms_saw(), ['/health'], '... and GMS sees /health, pinned');
is(get('/config')->{status}, 200, '/config is open');
is_deeply(gms_saw(), ['/config'], '... pinned');

$res = get('/metrics');
is($res->{status}, 200, '/metrics answers the loopback');
like($res->{body}, qr/^gms_redis_cluster_map_refreshes_total \d+/m,
     '... with the cluster counters');

$n->stop;
is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');

done_testing();
