#!/usr/bin/perl

# gms_token_metrics: the Prometheus text format, its counters checked
# against the requests this test makes, summed across two workers.

use strict;
use warnings;

use FindBin;
use Test::More;
use GmsTest;
use GmsTest::Edge;

# the stand-in search cluster: one task, one cluster in trouble (503),
# nothing else (404)
my $e = GmsTest::Edge->start(
    search  => sub {
        my ($req) = @_;
        return [200, ['Content-Type' => 'application/json'],
                '{"completed":true,"task":{"node":"known","id":1,'
                . '"type":"transport","action":"indices:data/write/reindex",'
                . '"start_time_in_millis":1,"cancellable":true,'
                . '"status":{"total":1},"running_time_in_nanos":5}}']
            if $req->{path} eq '/_tasks/known:1';
        return [503, ['Content-Type' => 'application/json'],
                '{"error":{"type":"cluster_block_exception"},"status":503}']
            if $req->{path} eq '/_tasks/troubled:1';
        return [404, ['Content-Type' => 'application/json'],
                '{"error":{"type":"resource_not_found_exception"},'
                . '"status":404}'];
    },
    workers => 2,
    http    => 'gms_token_cache zone=tokens:1m ttl=60s negative_ttl=60s;',
    server  => 'location = /metrics { gms_token_auth off; gms_token_metrics; }'
               . 'location = /version { gms_token_auth off;'
               . ' return 200 "$gms_module_version"; }',
);
my $n = $e->nginx;

# the version the module was built with: the Makefile's GMS_VERSION, by
# default debian/changelog's latest entry (config's own default too)
sub built_version {
    return $ENV{GMS_VERSION} if $ENV{GMS_VERSION};
    my ($version) = GmsTest::slurp("$FindBin::Bin/../debian/changelog")
        =~ /\A[^(]*\(([^)]+)\)/;
    return $version;
}

# Parses the exposition format: name{labels} => value, and checks that
# every sample belongs to a metric with a TYPE line.
sub metrics {
    my $res = $n->http(GET => '/metrics');
    is($res->{status}, 200, 'metrics answered');
    like($res->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4},
         'Prometheus text format');

    my (%m, %type, %typed);
    for my $line (split /\n/, $res->{body}) {
        if ($line =~ /^# TYPE (\S+) (counter|gauge|histogram)$/) {
            $type{$1} = $2;
            next;
        }
        next if $line =~ /^# HELP /;
        $line =~ /^([a-z_]+)(\{[^}]*\})? (\S+)$/
            or fail("bad sample line: $line"), next;
        my ($name, $labels, $value) = ($1, $2 // '', $3);
        my $family = $name;
        $family =~ s/_(bucket|sum|count)$// unless $type{$name};
        $typed{$family} = $type{$family};
        $m{"$name$labels"} = $value;
    }
    is_deeply([grep { !$typed{$_} } sort keys %typed], [],
              'every sample belongs to a metric with a TYPE line');
    return \%m;
}

$e->token('ok-token', actor => 'urn:li:corpuser:alice');
$e->grant('urn:li:corpuser:alice', 'GET_ES_TASK_STATUS_PRIVILEGE');

my $m0 = metrics();
is($m0->{'gms_token_requests_total{result="ok"}'}, 0, 'starts at zero');

# the build that serves, which a reload does not change
{
    my $version = built_version();
    my $nginx = GmsTest::nginx_version();
    my @build = grep { /^gms_module_build_info\{/ } keys %$m0;
    is_deeply(\@build,
              ["gms_module_build_info{version=\"$version\","
               . "nginx_version=\"$nginx\"}"],
              "gms_module_build_info: version $version, nginx $nginx");
    is($m0->{$build[0] // ''}, 1, 'whose value is 1');
    my $res = $n->http(GET => '/version');
    is($res->{body}, $version, "\$gms_module_version is $version");
}

my @plan = (
    ([GET => '/entities/x', { Authorization => 'Bearer ok-token' }]) x 5,
    ([GET => '/entities/x', {}]) x 3,
    ([GET => '/entities/x', { Authorization => 'Basic abc' }]) x 2,
    ([GET => '/entities/x', { Authorization => 'Bearer nope' }]) x 4,
    ([GET => '/admin/x', { Authorization => 'Bearer ok-token' }]) x 1,
);

# one at a time: the hit and lookup counts are then exact
$n->http(@$_) for @plan;

my $m = metrics();
my %want = (
    'gms_token_requests_total{result="ok"}'        => 5,
    'gms_token_requests_total{result="missing"}'   => 3,
    'gms_token_requests_total{result="malformed"}' => 2,
    'gms_token_requests_total{result="unknown"}'   => 4,
    'gms_token_requests_total{result="forbidden"}' => 1,
    'gms_token_requests_total{result="error"}'     => 0,
    'gms_redis_lookups_total'                      => 2,
    'gms_token_cache_misses_total'                 => 2,
    'gms_token_cache_hits_total{kind="positive"}'  => 5,
    'gms_token_cache_hits_total{kind="negative"}'  => 3,
    'gms_token_cache_entries{kind="positive"}'     => 1,
    'gms_token_cache_entries{kind="negative"}'     => 1,
    'gms_redis_lookup_duration_seconds_count'      => 2,
    'gms_redis_lookup_duration_seconds_bucket{le="+Inf"}' => 2,
);
is($m->{$_}, $want{$_}, $_) for sort keys %want;
ok($m->{'gms_redis_connections'} >= 1, 'a Redis connection is open');

my @buckets = map { $m->{$_} } sort {
    ($a =~ /le="([^"]+)"/)[0] eq '+Inf' ? 1 : ($b =~ /le="([^"]+)"/)[0] eq '+Inf' ? -1
        : ($a =~ /le="([^"]+)"/)[0] <=> ($b =~ /le="([^"]+)"/)[0]
} grep { /_bucket\{/ } keys %$m;
is_deeply(\@buckets, [sort { $a <=> $b } @buckets], 'histogram is cumulative');

# getEsTaskStatus by outcome
{
    my %h = (Authorization => 'Bearer ok-token',
             'Content-Type' => 'application/json');
    my $ask = sub {
        $n->http(POST => '/operations?action=getEsTaskStatus', {%h}, $_[0]);
    };
    $ask->('{"task":"known:1"}') for 1 .. 2;
    $ask->('{"task":"unknown:1"}') for 1 .. 3;
    $ask->('{"task":"troubled:1"}') for 1 .. 4;
    $ask->('{"task":"no colon"}');

    my $before = metrics();
    $e->token('no-es-token', actor => 'urn:li:corpuser:noes');
    $n->http(POST => '/operations?action=getEsTaskStatus',
             { %h, Authorization => 'Bearer no-es-token' },
             '{"task":"known:1"}') for 1 .. 2;

    my $es = metrics();
    is($es->{'gms_token_requests_total{result="forbidden"}'}
       - $before->{'gms_token_requests_total{result="forbidden"}'}, 2,
       'a getEsTaskStatus refusal is counted as forbidden');
    is($es->{'gms_token_requests_total{result="ok"}'}
       - $before->{'gms_token_requests_total{result="ok"}'}, 0,
       'and not as ok');
    is($es->{"gms_es_task_requests_total{outcome=\"$_->[0]\"}"}, $_->[1],
       "getEsTaskStatus outcome $_->[0]")
        for [status => 2], [error => 3], [cluster_error => 4], [refused => 3];
}

$e->redis->stop;
$n->http(GET => '/entities/x', { Authorization => 'Bearer cold' }) for 1 .. 3;
$m = metrics();
is($m->{'gms_token_requests_total{result="error"}'}, 3, 'errors counted');
is($m->{'gms_redis_errors_total{kind="connect"}'}
   + $m->{'gms_redis_errors_total{kind="timeout"}'}
   + $m->{'gms_redis_errors_total{kind="reply"}'}, 3,
   'each failed lookup has an error kind');
is($m->{'gms_redis_connections'}, 0, 'no Redis connection open');

$e->redis->start_again;

# the worker that lost its connection connects again when it next gets a
# request; which worker gets a request is the kernel's choice
ok(GmsTest::wait_until(sub {
       $n->http(GET => '/entities/x', { Authorization => 'Bearer cold' });
       my $res = $n->http(GET => '/metrics');
       return $res->{body} =~ /^gms_redis_reconnects_total ([1-9]\d*)$/m;
   }, 5),
   'reconnects counted');

$n->stop;
is_deeply([$n->bad_log_lines], [], 'no alerts') or diag explain [$n->bad_log_lines];

done_testing();
