#!/usr/bin/perl

# The decision log as shipped (conf-examples/gms-edge.conf's log_format
# gms_decision, the same in the container's template): one JSON line for
# each request the edge refused, could not check or answered itself, none
# for what it let through; every field as the request made it, and not a
# byte of any token the clients sent, though one rides in a query string.

use strict;
use warnings;

use FindBin;
use JSON::PP;
use Test::More;

use GmsTest;
use GmsTest::Edge;
use GmsTest::JWT;

my $top = "$FindBin::Bin/..";

# the shipped log_format, word for word, from both configurations
my @formats = map {
    my $conf = GmsTest::slurp("$top/conf-examples/$_");
    $conf =~ /^(\s*log_format gms_decision .*?;)\s*$/ms
        or BAIL_OUT("$_: no log_format gms_decision");
    $1;
} qw(gms-edge.conf gms-edge.conf.template);
is($formats[0], $formats[1], 'the package and the container ship one format');

# tokens no log line could hold by chance
my %token = map { $_ => "tok-$_-" . join '', map { ('a' .. 'z')[rand 26] }
                                            1 .. 32 }
            qw(alice bob unknown query);

my $e = GmsTest::Edge->start(
    search => sub {
        my ($req) = @_;
        return [200, ['Content-Type' => 'application/json'],
                '{"completed":true,"task":{"node":"n1","id":1,'
                . '"type":"transport","action":"indices:data/write/reindex",'
                . '"start_time_in_millis":1,"cancellable":true,'
                . '"status":{"total":1},"running_time_in_nanos":5}}'];
    },
    http => $formats[0] . "\n    access_log decisions.log "
            . "gms_decision if=\$gms_decision;\n"
            . "    gms_datahub_version 1.3.0;",
);
my $n = $e->nginx;

$e->token($token{alice}, actor => 'urn:li:corpuser:alice',
         type => 'PERSONAL');
$e->grant('urn:li:corpuser:alice', 'GET_ES_TASK_STATUS_PRIVILEGE');
$e->token($token{bob}, actor => 'urn:li:corpuser:bob');

my @asked = (
    [ 'accepted: not logged', 200, GET => '/entities', $token{alice} ],
    [ 'an unknown token', 401, GET => '/entities?start=0', $token{unknown},
      { decision => 'refused', reason => 'unknown', user => '',
        credential => 'BEARER', path => '/entities' } ],
    [ 'no credential', 401, GET => '/entities', undef,
      { decision => 'refused', reason => 'missing', user => '',
        credential => '', token_id => '' } ],
    [ 'a privilege missing', 403, GET => '/admin/tokens', $token{bob},
      { decision => 'refused', reason => 'forbidden',
        user => 'urn:li:corpuser:bob', path => '/admin/tokens' } ],
    [ 'a token in the query string: the path without it', 401,
      GET => "/entities?token=$token{query}", $token{unknown},
      { decision => 'refused', path => '/entities' } ],
    [ 'getEsTaskStatus answered', 200,
      POST => '/operations?action=getEsTaskStatus', $token{alice},
      { decision => 'answered', reason => 'status',
        user => 'urn:li:corpuser:alice', credential => 'PERSONAL',
        path => '/operations', method => 'POST' },
      '{"task":"n1:1"}' ],
    [ 'getEsTaskStatus refused: a task not node:number', 400,
      POST => '/operations?action=getEsTaskStatus', $token{alice},
      { decision => 'answered', reason => 'refused' }, '{"task":"nocolon"}' ],
);

for my $a (@asked) {
    my ($name, $status, $method, $path, $tok, undef, $body) = @$a;
    my %h = (defined $tok ? (Authorization => "Bearer $tok") : (),
             defined $body ? ('Content-Type' => 'application/json') : ());
    is($n->http($method => $path, \%h, $body)->{status}, $status,
       "$name: $status");
}

# Redis gone, nothing cached: 503
$e->redis->stop;
is($e->get('/entities', $token{bob})->{status}, 503, 'Redis gone: 503');
push @asked, [ 'Redis gone', 503, GET => '/entities', $token{bob},
               { decision => 'unavailable', reason => 'error' } ];

my $log = '';
ok(GmsTest::wait_until(sub {
    $log = GmsTest::slurp($n->dir . '/decisions.log') // '';
    (() = $log =~ /\n/g) >= 7 }, 5), 'the lines written');

my @lines = map { my $l = eval { decode_json($_) }; ok($l, "JSON: $_"); $l }
            split /\n/, $log;
my @want = grep { $_->[5] } @asked;
is(scalar @lines, scalar @want,
   'one line for each request refused, unchecked or answered: none for '
   . 'the one let through');

for my $i (0 .. $#want) {
    my ($name, $status, $method, undef, $tok, $fields) = @{ $want[$i] };
    my $l = $lines[$i] // {};
    is($l->{status}, "$status", "$name: status");
    is($l->{method}, $fields->{method} // $method, "$name: method");
    for my $k (sort keys %$fields) {
        next if $k eq 'method';
        is($l->{$k}, $fields->{$k}, "$name: $k");
    }
    like($l->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/,
         "$name: an ISO 8601 time");
    is($l->{client}, '127.0.0.1', "$name: the client");
    like($l->{request_id}, qr/^[0-9a-f]{32}$/, "$name: the request id");
    is($l->{datahub}, '1.3.0', "$name: the DataHub release");
    like($l->{token_id}, defined $tok ? qr{^[A-Za-z0-9+/_-]{43}=?$} : qr/^$/,
         "$name: the token's id, never the token");
    is($l->{upstream_status}, '', "$name: nothing went to GMS");
}

for my $who (sort keys %token) {
    unlike($log, qr/\Q$token{$who}\E/, "no byte of $who\'s token");
}

# a signed token Redis does not have: GMS decides, and says so
{
    my $key = 'WnEdIeTG/VVCLQqGwC/BAkqyY0k+H8NEAtWGejrBI94=';
    my $dir = GmsTest::tempdir();
    GmsTest::write_file("$dir/key", "$key\n");
    my $signed = GmsTest::JWT::personal($key, 'carol');

    my $p = GmsTest::Edge->start(
        http => $formats[0] . "\n    access_log decisions.log "
                . "gms_decision if=\$gms_decision;\n"
                . "    gms_token_signing_key_file $dir/key;\n"
                . '    gms_token_cache zone=tokens:1m;');
    is($p->get('/entities', $signed)->{status}, 200,
       'a signed token unknown to Redis: to GMS, which accepts it');

    my $line;
    ok(GmsTest::wait_until(sub {
        $line = GmsTest::slurp($p->nginx->dir . '/decisions.log') // '';
        $line =~ /\n/ }, 5), 'its line written');
    my $l = eval { decode_json((split /\n/, $line)[0]) } // {};
    is($l->{decision}, 'passed', 'passed: decision');
    is($l->{reason}, 'passed', 'passed: reason');
    # its type is GMS's to learn: the edge knows its scheme
    is($l->{credential}, 'BEARER', 'passed: a bearer token');
    is($l->{upstream_status}, '200', 'passed: GMS\'s answer');
    unlike($line, qr/\Q$signed\E/, 'no byte of the signed token');
    my $signature = (split /\./, $signed)[2];
    unlike($line, qr/\Q$signature\E/, 'not even its signature');
}

done_testing();
