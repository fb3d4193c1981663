#!/usr/bin/perl

# gms-token follow on DataHub's change stream (issue 34): the stand-in
# GMS serves the Events API (GET /openapi/v1/events/poll, DataHub 1.3+;
# GmsTest::Events) from the changes its GraphQL makes, and the follower
# applies each event as it comes.  The edge caches for 300 s (ttl and
# negative_ttl, as t/45) and the follower's polling cycles are an hour
# apart (--interval 60s --full-interval 1h --privileges-interval 1h): only
# the stream can bring a change to the edge within the test's wait (10 s,
# no timing asserted).  Each kind of change is checked at the edge: a
# revoked old token, a token revoked a second after it was made, a new
# token (401, then 200 without a token cycle), a user suspended and
# reactivated, a privilege removed.  Then the offset kept in gms:sync
# (stream_offset): a restarted follower resumes from it without a whole
# listing; a lost offset (the field deleted, or retention dropping past it)
# costs exactly one whole listing; a standby takes the stream over and
# applies a revocation made after the holder was killed.  A GMS without
# the Events API (404) or refusing it (403): --changes auto polls with one
# line saying why, and revocations arrive by polling; --changes stream
# fails its cycles with a clear error.  Hostile events (not JSON, an
# unknown aspect, 10 MB, a token URN that is no token id) change nothing
# in Redis, are counted (stream_rejected), and the stream goes on.
# Lines and fields: docs/gms-token.md, docs/redis-contract.md.

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::Events;
use GmsTest::GraphQL;
use GmsTest::HTTP;
use MIME::Base64 qw(decode_base64);
use GmsTest::Tool qw(start_follow stop_follow out_lines
                     gms_account gms_args key_of listed hash_of);

GmsTest::Tool::need_tool();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzdHJlYW0ifQ.'
             . 'c2VjcmV0LWdtcy1zdHJlYW0tc2lnbmF0dXJlLTY4';
my $token_file = gms_account($SECRET);
my $alice = 'urn:li:corpuser:alice';
my $bob = 'urn:li:corpuser:bob';
my $carol = 'urn:li:corpuser:carol';
my $TIME = qr/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/;

my $admin = { urn => 'urn:li:dataHubPolicy:admins',
              privileges => ['MANAGE_ACCESS_TOKENS'],
              actors => { users => [$alice] } };

my $e = GmsTest::Edge->start(
    workers => 2,
    http => 'gms_token_cache zone=tokens:1m ttl=300s negative_ttl=300s;');
my $redis = $e->redis;
my @at = ('--redis', '127.0.0.1:' . $redis->port);

# salt '': the edge's (GmsTest::Edge's default), so that a token made by
# createAccessToken has at the edge the id GMS gives it
my $gms = GmsTest::GraphQL->start(
    token => $SECRET, salt => '', workers => 4, events_api => 'on',
    tokens => [ map { listed($_) } qw(alice-token old-token restart-token
                                      lost-token gap-token standby-token
                                      hostile-token auto-token) ],
    policies => [$admin]);
$gms->tokens([ @{ $gms->tokens }, listed('bob-token', actor => $bob),
               listed('carol-token', actor => $carol) ]);

# the polling cycles an hour apart: only the stream brings a change
my @SLOW = ('--interval', '60s', '--full-interval', '1h',
            '--privileges-interval', '1h');

my @followers;

END {
    local $?;
    kill 'KILL', map { $_->{pid} } @followers;
}

sub follower {
    my ($changes, @more) = @_;
    my $f = start_follow(gms_args($gms->url, $token_file), '--changes',
                         $changes, @at, @more);
    push @followers, $f;
    return $f;
}

# every line on stderr (GmsTest::Tool's err_lines leaves one out)
sub err_lines { return split /\n/, GmsTest::slurp($_[0]{err}) }

sub status {
    my ($path, $token) = @_;
    return $e->get($path, $token)->{status};
}

# the edge's answer: its status, or its $gms_token_result (a missing
# privilege is a 401 too, "forbidden", as GMS answers)
sub answer {
    my ($path, $token) = @_;
    my $res = $e->get($path, $token);
    return $res->{headers}{'x-gms-result'} // $res->{status};
}

# the edge answers $want for the token (a status, or a result: see
# answer()), within the test's wait
sub reaches {
    my ($path, $token, $want) = @_;
    return GmsTest::wait_until(sub {
        $want =~ /^\d+\z/ ? status($path, $token) == $want
                           : answer($path, $token) eq $want }, 10);
}

sub sync { return hash_of($redis, 'gms:sync') }

# the whole token listings GMS was asked for: listAccessTokens from
# start 0 without filters (a page of these few tokens is the whole
# listing; a user's tokens are listed with a filter on actorUrn)
sub listings {
    return scalar grep {
        my $in = ref $_->{json} eq 'HASH'
                 && ref $_->{json}{variables} eq 'HASH'
                 ? $_->{json}{variables}{input} : undef;
        (grep { $_ eq 'listAccessTokens' }
              GmsTest::GraphQL->root_fields($_->{json}{query} // ''))
        && ref $in eq 'HASH' && ($in->{start} // 0) == 0
        && !@{ ref $in->{filters} eq 'ARRAY' ? $in->{filters} : [] };
    } grep { ref $_->{json} eq 'HASH' } @{ $gms->requests };
}

# what a failed test needs: the follower's lines, the listings asked
sub tell_why {
    my ($f, @more) = @_;
    return if (Test::More->builder->summary)[-1];
    diag(join "\n", 'follower:', out_lines($f), err_lines($f), @more);
    diag(join "\n", 'listAccessTokens inputs:', map {
        GmsTest::json_encode($_->{json}{variables})
    } grep {
        (grep { $_ eq 'listAccessTokens' }
              GmsTest::GraphQL->root_fields($_->{json}{query} // ''))
    } grep { ref $_->{json} eq 'HASH' } @{ $gms->requests });
}

# the stream's start line, and the follower on the stream: its first poll
# answered (stream_at) after that line
sub streaming {
    my ($f, $how) = @_;
    return GmsTest::wait_until(sub {
        (grep { /^gms-token follow: $TIME changes: stream \(\Q$how\E\)/ }
              out_lines($f))
        && (sync()->{stream_at} // 0) > 0
        && (sync()->{changes} // '') eq 'stream';
    }, 15);
}

# GraphQL, as DataHub's UI would ask it
sub mutate {
    my ($query) = @_;
    my $res = GmsTest::HTTP::request($gms->port, 'POST', '/api/graphql',
        { 'Content-Type' => 'application/json',
          Authorization => "Bearer $SECRET" },
        GmsTest::json_encode({ query => $query }));
    return eval { GmsTest::json_decode($res->{body}) } // {};
}

sub create_token {
    my ($name) = @_;
    my $doc = mutate('mutation { createAccessToken(input: {type: PERSONAL, '
        . "actorUrn: \"$alice\", duration: ONE_DAY, name: \"$name\"}) "
        . '{ accessToken metadata { id } } }');
    my $made = $doc->{data}{createAccessToken} // {};
    return ($made->{accessToken}, ($made->{metadata} // {})->{id});
}

sub revoke_token {
    my ($id) = @_;
    return mutate('mutation { revokeAccessToken(tokenId: "' . $id . '") }');
}


# --- every kind of change, by the stream only ------------------------------

my $f = follower('stream', @SLOW);
ok(streaming($f, 'from the end'),
   '--changes stream, no offset kept: "changes: stream (from the end)", '
   . 'gms:sync changes=stream');
ok(reaches('/entities/x', 'alice-token', 200)
   && reaches('/admin/x', 'alice-token', 'ok'),
   'the reconciliation cached the tokens and the privileges');
sleep 2;
is(listings(), 1, '... by exactly one whole listing');
is(scalar(grep { / privileges ok users=/ } out_lines($f)), 1,
   '... and one whole run of the privileges and the users');
tell_why($f);
my $s = sync();
like($s->{stream_offset} // '', qr/^[A-Za-z0-9+\/]+=*\z/,
     'gms:sync stream_offset: the offsetId GMS gave');
ok(defined $s->{stream_lag_ms} && defined $s->{stream_events}
   && defined $s->{stream_rejected},
   'gms:sync stream_lag_ms, stream_events, stream_rejected');

# the limits the follower's polls asked for, since the request $from
sub limits {
    my ($from) = @_;
    my @r = @{ $gms->requests };
    return map { m{^/openapi/v1/events/poll\?.*[?&]limit=(\d+)} ? $1 : () }
           map { $_->{uri} // '' } @r[ ($from // 0) .. $#r ];
}

# nothing coming: each poll asks for 1 event, answered as it comes
ok(GmsTest::wait_until(sub { (limits())[-1] == 1 }, 10),
   'the stream quiet: the follower polls with limit=1');
my $mark = @{ $gms->requests };
$gms->inject_event(GmsTest::Events::mcl(type => 'dataset',
                       urn => 'urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)',
                       change => 'UPSERT', aspect_name => 'globalTags',
                       aspect => { tags => [] })->[1], count => 12);
ok(GmsTest::wait_until(sub {
       my @l = limits($mark);
       (grep { $_ >= 4 } @l) && $l[-1] == 1 }, 10),
   '12 events at once: read in polls of 1, then 2, 4 ... then limit=1 again')
    or diag(join ' ', limits($mark));

is(status('/entities/x', 'old-token'), 200, 'an old token passes');
$gms->revoke(GmsTest::Tool::datahub_id('old-token'));
ok(reaches('/entities/x', 'old-token', 401),
   'revoked in DataHub: refused at the edge (the stream\'s DELETE), '
   . 'ttl 300 s notwithstanding');

my ($young, $young_id) = create_token('young');
ok(defined $young && reaches('/entities/x', $young, 200),
   'a token made by createAccessToken: 200 at the edge');
sleep 1;
revoke_token($young_id);
ok(reaches('/entities/x', $young, 401),
   '... revoked a second after it was made: refused');

# a token DataHub does not have yet: refused, and cached as unknown for
# 300 s; then made (its events: key and info UPSERT)
is(status('/entities/x', 'new-token'), 401,
   'a token DataHub does not have: 401, cached as unknown');
my $cycles = () = grep { / ok tokens=/ } out_lines($f);
$gms->tokens([ @{ $gms->tokens },
               listed('new-token', created => int(time * 1000)) ]);
ok(reaches('/entities/x', 'new-token', 200),
   '... made in DataHub: 200 at the edge');
is(scalar(() = grep { / ok tokens=/ } out_lines($f)), $cycles,
   '... with no token cycle');

is(status('/entities/x', 'bob-token'), 200, "bob's token passes");
$gms->users({ $bob => { status => 'SUSPENDED' } });
ok(reaches('/entities/x', 'bob-token', 401),
   'bob suspended in DataHub: his token refused at the edge');
$gms->users({ $bob => { status => 'ACTIVE' } });
ok(reaches('/entities/x', 'bob-token', 200), '... reactivated: back');

$gms->policies([]);
ok(reaches('/admin/x', 'alice-token', 'forbidden'),
   "the policy deleted: alice's privilege gone at the edge");
tell_why($f, "gms:actor:$alice: "
         . join ' ', @{ $redis->cmd(SMEMBERS => "gms:actor:$alice") });
$gms->policies([$admin]);
ok(reaches('/admin/x', 'alice-token', 'ok'), '... and back with it');

# A policy's own change moves nobody into or out of a group or a role:
# the mirror it asks for uses the members the last one read (its line
# says members=kept) and asks GMS no group's or role's members; a
# membership's change has them read again (members=read).
my $eng = { urn => 'urn:li:dataHubPolicy:eng',
            privileges => ['MANAGE_ACCESS_TOKENS'],
            actors => { groups => ['urn:li:corpGroup:eng'] } };

sub mirrors {
    my ($f, $how) = @_;
    return scalar grep { / privileges ok \(mirror\) .* members=$how / }
                       out_lines($f);
}

sub members_asked {
    return scalar grep {
        grep { $_ eq 'corpGroup' || $_ eq 'entity' }
             GmsTest::GraphQL->root_fields($_->{json}{query} // '')
    } grep { ref $_->{json} eq 'HASH' } @{ $gms->requests };
}

$gms->memberships({ $bob => { IsMemberOfGroup => ['urn:li:corpGroup:eng'] } });
$gms->policies([$admin, $eng]);
ok(reaches('/admin/x', 'bob-token', 'ok'),
   "bob put in a group and the group's policy made: his privilege at the "
   . 'edge');
my $kept_before = mirrors($f, 'kept');
$gms->clear_requests;
$gms->policies([$eng]);
ok(reaches('/admin/x', 'alice-token', 'forbidden'),
   "a policy deleted: alice's privilege gone");
ok(GmsTest::wait_until(sub { mirrors($f, 'kept') > $kept_before }, 10),
   '... by a mirror that kept the members it had read (members=kept)');
is(members_asked(), 0, "... asking GMS no group's or role's members");
is(answer('/admin/x', 'bob-token'), 'ok', "... bob's, from the group, kept");
my $read_before = mirrors($f, 'read');
$gms->memberships({});
ok(reaches('/admin/x', 'bob-token', 'forbidden'),
   "bob taken out of the group: his privilege gone");
ok(mirrors($f, 'read') > $read_before,
   '... by a mirror that read the members again (members=read)');
tell_why($f);
$gms->policies([$admin]);
ok(reaches('/admin/x', 'alice-token', 'ok'), 'the policy back for alice');

ok((grep { /^gms-token follow: $TIME stream ok events=\d+ revoked=[1-9]/ }
        out_lines($f))
   && (grep { /^gms-token follow: $TIME stream ok .* lag=\d+ms\z/ }
            out_lines($f)),
   'stream ok lines: events=, revoked=, lag=');
cmp_ok(sync()->{stream_events} // 0, '>=', 8,
       'gms:sync stream_events: the events applied');

# --- a restart resumes from the kept offset --------------------------------

is(stop_follow($f, 'TERM'), 0, 'follower stopped (SIGTERM)');
my $kept = sync()->{stream_offset};
my $before = listings();
my $asked = @{ $gms->requests };
$gms->revoke(GmsTest::Tool::datahub_id('restart-token'));
$f = follower('stream', @SLOW);
ok(streaming($f, 'resumed at the kept offset'),
   'restarted: "changes: stream (resumed at the kept offset)"');
my ($first_poll) = grep { $_->{uri} =~ m{^/openapi/v1/events/poll\?} }
                        @{ $gms->requests }[ $asked .. $#{ $gms->requests } ];
my ($offset_id) = (($first_poll // {})->{uri} // '') =~ /[?&]offsetId=([^&]*)/;
is(GmsTest::Events::unescape($offset_id), $kept,
   '... its first poll asked from gms:sync stream_offset');
ok(reaches('/entities/x', 'restart-token', 401),
   '... a revocation made while it was down: applied');
is(listings(), $before, '... and no whole listing');
tell_why($f);

# --- a lost offset: exactly one whole listing ------------------------------

is(stop_follow($f, 'TERM'), 0, 'stopped again');
$redis->cmd(HDEL => 'gms:sync', 'stream_offset');
$before = listings();
$gms->revoke(GmsTest::Tool::datahub_id('lost-token'));
$f = follower('auto', @SLOW);
ok(streaming($f, 'from the end'),
   'the offset deleted: --changes auto streams, from the end');
ok(reaches('/entities/x', 'lost-token', 401),
   '... a revocation the stream no longer has: applied by the listing');
sleep 2;
is(listings() - $before, 1, '... exactly one whole listing');
tell_why($f);

is(stop_follow($f, 'TERM'), 0, 'stopped again');
$before = listings();
$gms->revoke(GmsTest::Tool::datahub_id('gap-token'));
$gms->inject_event("filler $_", key => "urn:li:corpuser:x$_") for 1 .. 6;
$gms->retention(keep => 2);
$f = follower('stream', @SLOW);
ok(GmsTest::wait_until(sub {
       grep { /^gms-token follow: $TIME stream gap: .*; one whole listing/ }
            err_lines($f) }, 15),
   'retention dropped events past the kept offset: "stream gap: ...; one '
   . 'whole listing"');
ok(reaches('/entities/x', 'gap-token', 401),
   '... the revocation dropped: applied by that listing');
sleep 2;
is(listings() - $before, 1, '... exactly one whole listing');
tell_why($f);
$gms->retention;

# --- hostile events ----------------------------------------------------------

# the follower's kept offset covers every event the stand-in has
sub caught_up {
    return GmsTest::wait_until(sub {
        my $kept = eval { GmsTest::json_decode(decode_base64(
                              sync()->{stream_offset} // '')) } // {};
        my $next = GmsTest::Events::read_log($gms->{state_dir})->{next};
        !grep { ($kept->{"$GmsTest::Events::TOPIC-$_"} // -1) < $next->[$_] }
              0 .. $#$next;
    }, 15);
}

# Redis's data but the follower's own bookkeeping (gms:sync, the lease)
# and the token $but
sub data_but {
    my ($but) = @_;
    my $skip = key_of($but);
    return join "\n", grep { !/^(?:gms:sync|gms:lease|\Q$skip\E) / }
                          split /\n/, $redis->dump_all;
}

my $rejected = sync()->{stream_rejected} // 0;
my $dump = data_but('hostile-token');
my $mcl = sub { GmsTest::Events::mcl(@_)->[1] };
$gms->inject_event('this is not JSON {', key => $alice);
$gms->inject_event($mcl->(type => 'corpuser', urn => $alice,
                          change => 'UPSERT', aspect_name => 'noSuchAspect',
                          aspect => { x => 1 }), key => $alice);
$gms->inject_event($mcl->(type => 'corpuser', urn => $alice,
                          change => 'UPSERT', aspect_name => 'noSuchAspect',
                          aspect => { x => 'x' x (10 * 1024 * 1024) }),
                   key => $alice);
$gms->inject_event($mcl->(type => 'dataHubAccessToken',
                          urn => 'urn:li:dataHubAccessToken:gms:sync *',
                          change => 'DELETE',
                          aspect_name => 'dataHubAccessTokenInfo'),
                   key => $alice);
$gms->inject_event($mcl->(type => 'dataHubAccessToken',
                          urn => 'urn:li:dataHubAccessToken:'
                                 . GmsTest::Tool::datahub_id('evil'),
                          change => 'UPSERT',
                          aspect_name => 'dataHubAccessTokenInfo',
                          aspect => { name => 'no actor', createdAt => 1 }),
                   key => $alice);
ok(caught_up(), 'the follower read past the hostile events (stream_offset)');
is(data_but('hostile-token'), $dump,
   '... they changed nothing in Redis');
$gms->revoke(GmsTest::Tool::datahub_id('hostile-token'));
ok(reaches('/entities/x', 'hostile-token', 401),
   'after them, a revocation still arrives: the stream goes on');
cmp_ok((sync()->{stream_rejected} // 0) - $rejected, '>=', 3,
       'gms:sync stream_rejected: not JSON, no token id, no actorUrn');
ok((grep { /^gms-token follow: $TIME stream ok .* ignored=[1-9]/ }
        out_lines($f))
   && (grep { /^gms-token follow: $TIME stream ok .* rejected=[1-9]/ }
            out_lines($f)),
   '... counted on the stream ok lines (ignored=, rejected=)');
is(status('/entities/x', 'evil'), 401, 'the token without actorUrn: not '
   . 'cached');
is(status('/entities/x', 'alice-token'), 200, "alice's token still passes");

# --- the standby takes the stream over --------------------------------------

# --interval 1s for both: the lease runs two intervals and 2 s
my @FAST = ('--interval', '1s', '--full-interval', '1h',
            '--privileges-interval', '1h');
is(stop_follow($f, 'TERM'), 0, 'the holder stopped');
$f = follower('stream', @FAST);
ok(streaming($f, 'resumed at the kept offset'), '... started again');
my $standby = follower('stream', @FAST);
ok(GmsTest::wait_until(sub {
       grep { / lease held by \S+; standing by\z/ } out_lines($standby) },
       10), 'a second follower stands by');
stop_follow($f, 'KILL');
$gms->revoke(GmsTest::Tool::datahub_id('standby-token'));
ok(reaches('/entities/x', 'standby-token', 401),
   'the holder killed, a revocation made after: the standby took the '
   . 'stream over and applied it');
ok((grep { /changes: stream \(resumed at the kept offset\)/ }
        out_lines($standby)),
   '... resumed at the kept offset');
like(sync()->{holder} // '', qr/:$standby->{pid}:/,
     'gms:sync names the standby');
is(stop_follow($standby, 'TERM'), 0, 'standby stopped');

# --- a GMS without the Events API -------------------------------------------

my $POLLING = qr/^gms-token follow: $TIME changes: polling every \d+s: /;

for my $case ([404 => qr/HTTP 404.*GMS serves no Events API/],
              [403 => qr/HTTP 403.*GET_METADATA_CHANGE_LOG_EVENTS/]) {
    my ($code, $why) = @$case;
    $gms->events_api($code);
    my $polls = $gms->polls;
    $redis->cmd(HDEL => 'gms:sync', 'changes');
    my $auto = follower('auto', @FAST);
    ok(GmsTest::wait_until(sub {
           grep { /$POLLING/ } err_lines($auto) }, 10),
       "--changes auto, the Events API answering $code: polling");
    is(scalar(grep { /$POLLING/ } err_lines($auto)), 1,
       '... one line saying so');
    like((grep { /$POLLING/ } err_lines($auto))[0] // '', $why,
         '... and why');
    ok(GmsTest::wait_until(sub { (sync()->{changes} // '') eq 'poll' }, 10),
       '... gms:sync changes=poll');
    my ($made) = create_token("auto-$code");
    ok(reaches('/entities/x', $made, 200), '... a new token arrives');
    $gms->tokens([ grep { $_->{name} ne "auto-$code" } @{ $gms->tokens } ]);
    ok(reaches('/entities/x', $made, 401),
       '... a revocation arrives, by polling');
    is($gms->polls - $polls, 1,
       '... one try of the stream (the next after --full-interval)');
    is(stop_follow($auto, 'TERM'), 0, '... stopped');
}

$gms->events_api('404');
my $strict = follower('stream', @FAST);
ok(GmsTest::wait_until(sub {
       grep { /404/ && /Events API/ } err_lines($strict) }, 10),
   '--changes stream against a GMS without the Events API: its cycles fail, '
   . 'saying HTTP 404 and the Events API');
is(stop_follow($strict, 'TERM'), 0, '... stopped');
$gms->events_api('on');

done_testing;
