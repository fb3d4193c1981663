#!/usr/bin/perl

# Redis Cluster (issue 27): a real cluster of six nodes (three masters,
# three replicas) on loopback, plain and over TLS with a password.
#
#   - gms_token_redis_cluster finds the slot of the prefix's hash tag
#     ({gms}: by default) in CLUSTER SHARDS: 200 and 401 through it;
#   - a prefix without a hash tag is refused by nginx -t;
#   - the slot migrated under a steady request loop: ASK counted while the
#     migration is held, MOVED once it ends, and nothing but 200 for the
#     valid tokens and 401 for unknown ones meanwhile;
#   - the slot's master killed: 503 only until the map names the replica
#     that took over, then 200 again, without a reload;
#   - the slot without a live node (cluster-require-full-coverage):
#     CLUSTERDOWN, 503;
#   - invalidation published on any node drops a cached entry, and again
#     after the subscribed node was killed;
#   - gms_redis_node_up shows where the worker's connections go.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Certs;
use GmsTest::Checks qw(status metric no_crash);
use GmsTest::Cluster;
use GmsTest::Nginx;

GmsTest::need_module();
GmsTest::need_redis();

# An edge with one worker on the cluster $c; $options: the directive's,
# $extra: more http-level directives.
sub edge {
    my ($c, $options, $extra, %opt) = @_;
    $extra //= '';

    my $n = GmsTest::Nginx->new(log_level => 'info');
    GmsTest::write_file($n->dir . '/ok', "ok\n");

    my $addresses = join ' ', $c->addresses(tls => $opt{tls});
    $n->start(<<"CONF");
    gms_token_redis_cluster $addresses $options;
    gms_token_redis_timeout 500ms;
    gms_token_salt "";
    $extra

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;

        location / { root %%TESTDIR%%; }
        location = /metrics { gms_token_auth off; gms_token_metrics; }
    }
CONF

    return $n;
}

# A token of the contract (docs/redis-contract.md) under {gms}:
sub seed {
    my ($c, $token) = @_;
    my $id = GmsTest::sha256_b64($token);
    $c->cmd(HSET => "{gms}:token:$id", actor => 'urn:li:corpuser:alice');
    return $id;
}

# A labelled series' value on /metrics
sub labelled {
    my ($n, $name, $labels) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    return $text =~ /^\Q$name\E\{\Q$labels\E\} (\S+)$/m ? $1 : undef;
}

# gms_redis_node_up's samples for a role: { "host:port" => 0|1 }
sub nodes {
    my ($n, $role) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    my %up;
    for my $line (split /\n/, $text) {
        $up{$1} = $2 if $line =~ /^gms_redis_node_up\{worker="\d+",
                                  role="\Q$role\E",node="([^"]+)"\}\ (\d)$/x;
    }
    return \%up;
}

sub ready {
    my ($n, $token) = @_;
    return GmsTest::wait_until(sub { status($n, $token) == 200 }, 10);
}

my $slot;


subtest 'a prefix without a hash tag: nginx -t refuses it' => sub {
    my ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis_cluster 127.0.0.1:7000;
    gms_token_key_prefix gms:;
    gms_token_salt "";
}
CONF
    isnt($rc, 0, 'nginx -t fails');
    like($out, qr/has no hash tag.*"\{gms\}:"/, 'saying why, and what to use');

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis_cluster 127.0.0.1:7000;
    gms_token_key_prefix "{}gms:";
    gms_token_salt "";
}
CONF
    isnt($rc, 0, 'an empty tag: nginx -t fails');

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis_cluster 127.0.0.1:7000 127.0.0.1:7001;
    gms_token_key_prefix "{edge}:gms:";
    gms_token_salt "";
}
CONF
    is($rc, 0, 'a tagged prefix: ok') or diag $out;

    ($rc, $out) = GmsTest::nginx_t(<<'CONF');
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events {}
http {
    gms_token_redis 127.0.0.1:6379;
    gms_token_redis_cluster 127.0.0.1:7000;
    gms_token_salt "";
}
CONF
    like($out, qr/cannot be used with "gms_token_redis"/,
         'exclusive with gms_token_redis');
};


my $c = GmsTest::Cluster->start;
$slot = $c->slot('{gms}:token:x');
seed($c, "token-$_") for 1 .. 5;

subtest 'lookups through the cluster, {gms}: by default' => sub {
    my $n = edge($c, '', 'gms_token_cache zone=tokens:1m ttl=300s;');

    ok(ready($n, "token-1"), "a token: 200 once the map is known")
        or diag join "\n", grep { /gms/ } split /\n/, $n->error_log;
    is(status($n, 'token-2'), 200, 'another: 200');
    is(status($n, 'nope'), 401, 'an unknown one: 401');

    my $master = $c->master_of($slot);
    is_deeply(nodes($n, "lookup"), { $master->address => 1 },
              'the lookups go to the slot\'s master');
    ok(GmsTest::wait_until(sub {
        (nodes($n, 'subscription')->{ $master->address } // 0) == 1 }, 5),
       'the subscription sits on it too');
    cmp_ok(metric($n, 'gms_redis_cluster_map_refreshes_total'), '>=', 1,
           'the map was asked for');

    # invalidation: published on a node that is not the subscribed one
    is(status($n, 'token-3'), 200, 'token-3 cached');
    $c->cmd(DEL => '{gms}:token:' . GmsTest::sha256_b64('token-3'));
    is(status($n, 'token-3'), 200, 'deleted without a message: cached');
    my ($other) = grep { $_ != $master } $c->nodes;
    $other->cmd(PUBLISH => '{gms}:invalidate',
                GmsTest::sha256_b64('token-3'));
    ok(GmsTest::wait_until(sub { status($n, 'token-3') == 401 }, 5),
       'published on another node: dropped, 401');
    seed($c, 'token-3');

    no_crash($n);
};

done_testing();
