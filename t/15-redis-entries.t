#!/usr/bin/perl

# What Redis says is checked before it is used: an entry whose actor or
# privileges break the rules gms-token writes by (src/lib/gms_token.c:
# gms_token_actor_valid, gms_token_privilege_valid) is a 503, never forwarded to GMS,
# never cached, and logged once a minute per token id rather than once per
# request, however many ids are bad at once.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;

my $e = GmsTest::Edge->start(
    http => 'gms_token_cache zone=tokens:1m ttl=60s negative_ttl=60s;');
my $n = $e->nginx;

my $ES = '/operations?action=getEsTaskStatus';

# A token whose entry holds this actor and these privileges.
sub entry {
    my ($token, $actor, @privileges) = @_;
    $e->token($token, actor => $actor);
    $e->redis->cmd(DEL => "gms:actor:$actor");
    $e->grant($actor, @privileges) if @privileges;
}

my @bad = (
    ['actor with CR LF and a header',
     "urn:li:corpuser:eve\r\nX-Injected: 1"],
    ['actor with a second X-DataHub-Actor',
     "urn:li:corpuser:eve\r\nX-DataHub-Actor: urn:li:corpuser:datahub"],
    ['actor with a lone LF', "urn:li:corpuser:eve\nX-Injected: 1"],
    ['actor with a NUL', "urn:li:corpuser:eve\0admin"],
    ['actor with DEL', "urn:li:corpuser:eve\x7f"],
    ['actor not a URN', 'datahub'],
    ['actor of an other scheme', 'urn:x:corpuser:eve'],
    ['actor not UTF-8', "urn:li:corpuser:\xff\xfe"],
    ['actor of 513 bytes', 'urn:li:corpuser:' . ('a' x 497)],
    ['privileges joined by a comma', 'urn:li:corpuser:mallory',
     'VIEW_ANALYTICS,GET_ES_TASK_STATUS_PRIVILEGE'],
    ['privilege with CR LF', 'urn:li:corpuser:mallory',
     "VIEW_ANALYTICS\r\nX-Injected: 1"],
    ['privilege of 129 bytes', 'urn:li:corpuser:mallory', 'P' x 129],
    ['257 privileges', 'urn:li:corpuser:mallory',
     map { "PRIVILEGE_$_" } 1 .. 257],
);

for my $i (0 .. $#bad) {
    my ($title, $actor, @privileges) = @{ $bad[$i] };
    my $token = "bad-entry-$i";

    subtest $title => sub {
        entry($token, $actor, @privileges);
        $e->gms->clear_requests;
        my $mark = length $n->error_log;

        for (1 .. 3) {
            my $res = $e->get('/entities/x', $token);
            is($res->{status}, 503, '503');
            is($res->{headers}{'x-gms-actor'} // '', '',
               'no actor in $gms_token_actor');
            is($res->{headers}{'x-injected'}, undef, 'no injected header');
        }

        my $es = $n->http(POST => $ES,
                          { Authorization => "Bearer $token",
                            'Content-Type' => 'application/json' },
                          '{"task":"n:1"}');
        is($es->{status}, 503, 'getEsTaskStatus: 503');

        is_deeply([map { $_->{uri} } @{ $e->gms->requests }], [],
                  'GMS saw nothing');

        my @lines = grep { /\[error\].*gms: redis lookup of token id/ }
                    split /\n/, substr($n->error_log, $mark);
        is(scalar @lines, 1, 'logged once for four requests')
            or diag(explain(\@lines));

        # repaired in Redis: the very next request sees it (not cached)
        entry($token, 'urn:li:corpuser:fixed', 'VIEW_ANALYTICS');
        my $res = $e->get('/entities/x', $token);
        is($res->{status}, 200, 'the repaired entry: 200 at once');
        is(GmsTest::json_decode($res->{body})->{header}{'x-datahub-actor'},
           'urn:li:corpuser:fixed', 'with its actor');
        $e->gms->clear_requests;
    };
}

subtest 'two bad entries in turn: one line each' => sub {
    entry('bad-one', 'not-a-urn-1');
    entry('bad-two', 'not-a-urn-2');
    my $mark = length $n->error_log;

    for (1 .. 5) {
        for my $token ('bad-one', 'bad-two') {
            is($e->get('/entities/x', $token)->{status}, 503, "$token: 503");
        }
    }

    my @lines = grep { /\[error\].*gms: redis lookup of token id/ }
                split /\n/, substr($n->error_log, $mark);
    is(scalar @lines, 2, 'logged once per id for ten requests')
        or diag(explain(\@lines));
    my %ids = map { /token id "([^"]+)"/ ? ($1 => 1) : () } @lines;
    is(scalar keys %ids, 2, 'one for each id');
};

subtest 'the limits themselves are accepted' => sub {
    my $actor = 'urn:li:corpuser:' . ('a' x 496);          # 512 bytes
    entry('at-limits', $actor, 'P' x 128,
          map { "PRIVILEGE_$_" } 1 .. 255);
    my $res = $e->get('/entities/x', 'at-limits');
    is($res->{status}, 200, '512-byte actor, 256 privileges, one of 128');
    is(GmsTest::json_decode($res->{body})->{header}{'x-datahub-actor'},
       $actor, 'the actor forwarded');

    entry('utf8-actor', "urn:li:corpuser:j\xc3\xb6rg");
    is($e->get('/entities/x', 'utf8-actor')->{status}, 200,
       'a UTF-8 actor');
    $e->gms->clear_requests;
};

$n->stop;
is_deeply([$n->bad_log_lines], [], 'no alerts or crashes');

done_testing();
