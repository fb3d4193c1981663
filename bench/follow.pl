#!/usr/bin/perl
#
# make bench-follow (issue 25): gms-token follow against a GMS that takes
# its time, at three sizes of DataHub.
#
#   perl -I t/lib bench/follow.pl
#
# For each size (tokens/users: 1,000/100, 20,000/5,000, 100,000/20,000;
# BENCH_FOLLOW_SIZES="1000/100 ..." to choose), on 127.0.0.1 only and in
# temporary directories:
#
#   - the stand-in GMS (t/lib/GmsTest/GraphQL.pm) answering every GraphQL
#     request after BENCH_FOLLOW_DELAY seconds (0.02: GMS's latency), with
#     the tokens spread over the users, the users in 10 groups (a tenth of
#     each group's members also in a second one, native) and the groups
#     g0..g2 holding the roles r0..r2, one user in 20 in a role directly,
#     and four active platform policies: one naming a user, one a group,
#     one a role, one all users;
#   - an edge (GmsTest::Edge: nginx with the module, 2 workers, a real
#     redis-server) caching for 300 s: gms_token_cache ttl=300s
#     negative_ttl=300s, so that only the follower's invalidation can make
#     it refuse a token it has let through;
#   - build/gms-token follow --interval 1s --privileges-interval 10s
#     (BENCH_FOLLOW_ARGS replaces these two) writing to that Redis.
#
# It reads the follower's lines as they come ('ok tokens=... in Nms', the
# token cycle; 'privileges ok users=... in Nms', the mirror and the
# users' status, when the follower has that thread; a follower without it
# mirrors in the token cycle, whose requests then count them), notes how
# many requests the stand-in had received at each, and sorts the requests
# by what asked them: listAccessTokens and entityExists of tokens are the
# token cycle's, the rest (listPolicies, corpGroup, role, corpUser,
# getGrantedPrivileges, entityExists of users) the privileges thread's.
# Then, BENCH_FOLLOW_REVOKES times (3), a token the edge has let through
# (and cached) is revoked in the stand-in at a random moment of the
# cycle, and the edge asked every 10 ms until it answers 401: the time
# from the revocation to that 401.
#
# Printed per size: GraphQL requests per token cycle and per privileges
# cycle (the median over the cycles after the first, which loads
# everything; by root field below), the token cycle's and the privileges
# cycle's time (the follower's own 'in Nms', median), and the revocation's
# times (median and max).  Exit 1 if a size could not be measured.
#
# Changes to every edge (issue 34), per size and in each mode of the
# follower (BENCH_FOLLOW_MODES, default "poll stream": follow --changes
# poll, then --changes stream against the stand-in's Events API, each
# with BENCH_FOLLOW_ARGS; a follower without --changes: poll only, as it
# is): three edges (nginx, 2 workers each) reading the one Redis the
# follower writes, the same 300 s caches.  BENCH_FOLLOW_CHANGES times (3)
# each, the time from the change made in the stand-in to the expected
# answer at every edge (each asked every 10 ms; the last edge's time
# counts; each change at a random moment of --interval), median and max:
#   revoked old token   revoke() of a listed token: 401
#   new token           createAccessToken (GraphQL, as DataHub's UI): 200
#   revoked new token   that token, revokeAccessToken a second after: 401
#   suspended user      users() SUSPENDED, a token of the user: 401 (then
#                       ACTIVE again, and 200 awaited, not timed)
#   removed privilege   the policy giving user0 MANAGE_POLICIES deleted:
#                       refused ("forbidden", a 401 as GMS's) at a
#                       location requiring it (then restored)
# and GMS requests per minute while nothing changes (every request the
# stand-in received over BENCH_FOLLOW_IDLE seconds, 60: GraphQL and the
# Events API's polls).  The stream mode runs no cycle table (its cycles
# come every --full-interval).

use strict;
use warnings;

use File::Temp ();
use FindBin;
use Digest::SHA qw(sha256);
use List::Util qw(max);
use MIME::Base64 qw(encode_base64);
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

use GmsTest ();
use GmsTest::Edge;
use GmsTest::GraphQL;
use GmsTest::HTTP;
use GmsTest::Tool ();

my @SIZES = map { [ split m{/} ] }
            split ' ', $ENV{BENCH_FOLLOW_SIZES}
                       // '1000/100 20000/5000 100000/20000';
my $DELAY = $ENV{BENCH_FOLLOW_DELAY} // 0.02;
my $REVOKES = $ENV{BENCH_FOLLOW_REVOKES} // 3;
my @ARGS = split ' ', $ENV{BENCH_FOLLOW_ARGS}
                      // '--interval 1s --privileges-interval 10s';
my $CHANGES = $ENV{BENCH_FOLLOW_CHANGES} // 3;
my $IDLE = $ENV{BENCH_FOLLOW_IDLE} // 60;
my @MODES = split ' ', $ENV{BENCH_FOLLOW_MODES} // 'poll stream';
my $EDGES = 3;

# the location the removed privilege is checked at: MANAGE_POLICIES, which
# only the policy a-user gives, to user0 alone
my $PRIVILEGE_LOCATION = <<'CONF';
        location /bench-privilege/ {
            gms_token_require_privilege MANAGE_POLICIES;
            proxy_pass http://gms;
        }
CONF

# how long the first cycle (everything written) and the next ones may take
my $FIRST_WAIT = $ENV{BENCH_FOLLOW_FIRST_WAIT} // 900;
my $CYCLES_WAIT = $ENV{BENCH_FOLLOW_CYCLES_WAIT} // 900;

my $BIN = GmsTest::Tool::bin();
-x $BIN or die "bench-follow: $BIN not built (make tool)\n";
-f GmsTest::module_path()
    or die 'bench-follow: ' . GmsTest::module_path() . " not built (make)\n";
GmsTest::in_path(GmsTest::redis_bin('server'))
    or die "bench-follow: no " . GmsTest::redis_bin('server') . "\n";
delete $ENV{GMS_REDIS_PASSWORD};

# a follower older than the second thread has no --privileges-interval
my $help = `$BIN follow --help 2>&1`;
@ARGS = grep_option(\@ARGS, '--privileges-interval')
    unless $help =~ /--privileges-interval/;
# a follower older than the stream: polling only, without the option
@MODES = ('') unless $help =~ /--changes/;

my $interval = 1;
for my $i (0 .. $#ARGS - 1) {
    $interval = seconds($ARGS[$i + 1]) if $ARGS[$i] eq '--interval';
}

printf "bench-follow: %s, GMS answering after %.0f ms, follow %s, "
       . "modes: %s\n",
       join(', ', map { "$_->[0] tokens/$_->[1] users" } @SIZES),
       $DELAY * 1000, "@ARGS", join(', ', map { $_ || 'poll' } @MODES);

my (@rows, @change_rows, $failed);
for my $size (@SIZES) {
    for my $mode (@MODES) {
        my $row = eval { measure(@$size, $mode) };
        if (!$row) {
            warn "bench-follow: $size->[0]/$size->[1] "
                 . ($mode || 'poll') . ": $@";
            $failed = 1;
            next;
        }
        if ($row->{tokens}) {
            push @rows, $row;
            print_row($row);
        }
        push @change_rows, $row;
        print_changes($row);
    }
}

print "\n";
print_table(@rows) if @rows;
print "\n";
print_change_table(@change_rows) if @change_rows;
print "\nwrote bench/results/follow.svg\n" if follow_chart(@change_rows);
exit($failed ? 1 : 0);


sub measure {
    my ($ntokens, $nusers, $mode) = @_;

    printf "\n--- %d tokens, %d users, %s\n", $ntokens, $nusers,
           $mode ? "--changes $mode" : 'polling';

    my $t0 = time;
    my ($tokens, $raw, $memberships, $policies) = datahub($ntokens, $nusers);

    my @edges = (GmsTest::Edge->start(
        workers => 2, log_level => 'warn', server => $PRIVILEGE_LOCATION,
        http => 'gms_token_cache zone=tokens:64m ttl=300s negative_ttl=300s;'));
    push @edges, GmsTest::Edge->start(
        workers => 2, log_level => 'warn', server => $PRIVILEGE_LOCATION,
        redis => $edges[0]->redis,
        http => 'gms_token_cache zone=tokens:64m ttl=300s negative_ttl=300s;')
        for 2 .. $EDGES;
    my $edge = $edges[0];
    # salt '': the edges', so that createAccessToken's tokens pass there
    # 8 workers: the users' check has 8 requests in flight
    my $gms = GmsTest::GraphQL->start(token => 'follower-token', workers => 8,
                                      tokens => $tokens, policies => $policies,
                                      memberships => $memberships,
                                      delay => $DELAY, salt => '',
                                      events_api => 'on',
                                      # Elasticsearch's page limit, as GMS
                                      max_result_window => 10_000);
    warm($gms);
    printf "stand-in and edges ready in %.1f s\n", time - $t0;

    my $dir = GmsTest::tempdir();
    GmsTest::write_file("$dir/gms-token", "follower-token\n");
    my $follow = GmsTest::Tool::start_follow(
        '--gms', $gms->url, '--gms-token-file', "$dir/gms-token",
        '--redis', '127.0.0.1:' . $edge->redis->port,
        ($mode ? ('--changes', $mode) : ()), @ARGS);

    my $watch = { follow => $follow, gms => $gms, seen => 0, lines => [] };
    my $streaming = ($mode // '') eq 'stream';
    my $ok = eval {
        # the first cycles load everything; then two of each kind at least
        # (the stream's cycles come every --full-interval: not awaited)
        wait_lines($watch, 1, 1, $FIRST_WAIT, 'the first cycles');
        my @n = counts($watch);
        wait_lines($watch, $n[0] + 2, $n[1] + 1, $CYCLES_WAIT,
                   'two more cycles')
            unless $streaming;
        1;
    };
    my $row = !$ok ? undef
              : $streaming ? { size => [$ntokens, $nusers] }
              : cycles($watch, $ntokens, $nusers);
    my $why = $@;

    if ($row && !$streaming) {
        $row->{revocations} = eval {
            revocations($edge, $gms, $watch, $raw, $tokens,
                        $row->{tokens}{ms} / 1000 + $interval)
        } // [];
        $why = $@ unless @{ $row->{revocations} };
        $row = undef unless @{ $row->{revocations} };
    }
    if ($row) {
        $row->{mode} = $mode || 'poll';
        $row->{changes} = eval {
            changes(\@edges, $gms, $watch, $raw, $tokens, $nusers, $policies)
        };
        $why = $@ unless $row->{changes};
        $row->{idle} = $row->{changes} ? idle($gms, $watch) : undef;
        $row = undef unless $row->{changes};
    }

    kill 'TERM', $follow->{pid};
    waitpid $follow->{pid}, 0;
    my @err = GmsTest::Tool::err_lines($follow);
    print "follow's stderr: $_\n" for @err[0 .. ($#err < 4 ? $#err : 4)];

    $gms->stop;
    $_->nginx->stop for @edges;
    $edge->redis->stop;

    die $why unless $row;
    return $row;
}

# Each kind of change made in the stand-in, $CHANGES times: the seconds
# until every edge gives the answer that follows from it.
sub changes {
    my ($edges, $gms, $w, $raw, $tokens, $nusers, $policies) = @_;

    my %took;
    my $user = sub { $tokens->[ $_[0] ]{actorUrn} };
    for my $k (1 .. $CHANGES) {
        # a listed token, not user0's (whose privilege is taken below)
        my $i = int($k * @$raw / ($CHANGES + 2)) + 1;
        $i++ while $i % $nusers == 0 || $i % $nusers == ($k + 1) % $nusers;
        at_every_edge($edges, $w, '/entities/x', $raw->[$i], 200, 30)
            // die "token $i: not let through by the edges\n";
        push @{ $took{revoked_old} }, changed($edges, $w, sub {
            $gms->revoke($tokens->[$i]{id});
        }, '/entities/x', $raw->[$i], 401);

        my ($jwt, $id);
        push @{ $took{new} }, changed($edges, $w, sub {
            ($jwt, $id) = create_token($gms, $user->(1), "bench-new-$k");
        }, '/entities/x', sub { $jwt }, 200);
        sleep 1;
        push @{ $took{revoked_new} }, changed($edges, $w, sub {
            mutate($gms, 'mutation { revokeAccessToken(tokenId: "' . $id
                         . '") }');
        }, '/entities/x', $jwt, 401);

        # a user with a token of its own: token k + 1's
        my $u = $user->($k + 1);
        at_every_edge($edges, $w, '/entities/x', $raw->[$k + 1], 200, 30)
            // die "token " . ($k + 1) . ": not let through by the edges\n";
        push @{ $took{suspended} }, changed($edges, $w, sub {
            $gms->users({ $u => { status => 'SUSPENDED' } });
        }, '/entities/x', $raw->[$k + 1], 401);
        $gms->users({ $u => { status => 'ACTIVE' } });
        at_every_edge($edges, $w, '/entities/x', $raw->[$k + 1], 200,
                      $CYCLES_WAIT)
            // die "$u reactivated: not let through again\n";

        at_every_edge($edges, $w, '/bench-privilege/x', $raw->[0], 200, 30)
            // die "user0: MANAGE_POLICIES not at the edges\n";
        push @{ $took{privilege} }, changed($edges, $w, sub {
            $gms->policies([ grep { $_->{urn} !~ /:a-user\z/ } @$policies ]);
        }, '/bench-privilege/x', $raw->[0], 'forbidden');
        $gms->policies($policies);
        at_every_edge($edges, $w, '/bench-privilege/x', $raw->[0], 200,
                      $CYCLES_WAIT)
            // die "user0: MANAGE_POLICIES not back at the edges\n";
    }
    return \%took;
}

# Makes the change (at a random moment of --interval), then asks every
# edge every 10 ms until each answers $want for the token (a code ref:
# read after the change): the seconds from the change to the last edge's
# answer.
sub changed {
    my ($edges, $w, $change, $path, $token, $want) = @_;
    # at a random moment of the polling cycle, as a change comes
    sleep rand($interval);
    my $t0 = time;
    $change->();
    my $took = at_every_edge($edges, $w, $path, $token, $want, $CYCLES_WAIT)
        // die "$path: not $want at every edge within $CYCLES_WAIT s\n";
    my $s = $took - $t0;
    printf "  %s %s: %s at every edge %.2f s later\n", $path,
           ref $token ? 'new token' : 'token', $want, $s;
    return $s;
}

# The time every edge answered $want (undef: not within $timeout s).
sub at_every_edge {
    my ($edges, $w, $path, $token, $want, $timeout) = @_;
    my %left = map { $_ => $edges->[$_] } 0 .. $#$edges;
    my $deadline = time + $timeout;
    while (time < $deadline) {
        poll($w);
        my $t = ref $token ? $token->() : $token;
        for my $n (keys %left) {
            my $res = $left{$n}->get($path, $t);
            # a status, or the edge's $gms_token_result ("forbidden": a
            # missing privilege is a 401 too, as GMS answers)
            delete $left{$n}
                if $want =~ /^\d+\z/ ? ($res->{status} // 0) == $want
                   : ($res->{headers}{'x-gms-result'} // '') eq $want;
        }
        return time unless %left;
        sleep 0.01;
    }
    return undef;
}

sub mutate {
    my ($gms, $query) = @_;
    my $res = GmsTest::HTTP::request($gms->port, 'POST', '/api/graphql',
        { 'Content-Type' => 'application/json',
          Authorization => 'Bearer follower-token' },
        GmsTest::json_encode({ query => $query }), timeout => 60);
    return eval { GmsTest::json_decode($res->{body}) } // {};
}

sub create_token {
    my ($gms, $actor, $name) = @_;
    my $doc = mutate($gms, 'mutation { createAccessToken(input: {type: '
        . "PERSONAL, actorUrn: \"$actor\", duration: ONE_DAY, name: "
        . "\"$name\"}) { accessToken metadata { id } } }");
    my $made = $doc->{data}{createAccessToken}
        // die "createAccessToken failed\n";
    return ($made->{accessToken}, $made->{metadata}{id});
}

# GMS requests per minute while nothing changes
sub idle {
    my ($gms, $w) = @_;
    $gms->clear_requests;
    my $t0 = time;
    while (time < $t0 + $IDLE) {
        poll($w);
        sleep 0.5;
    }
    my $n = $gms->count;
    my $polls = $gms->polls;
    my $per = 60 / (time - $t0);
    printf "  nothing changing: %.0f GMS requests a minute (%.0f polls of "
           . "the Events API)\n", $n * $per, $polls * $per;
    return { requests => $n * $per, polls => $polls * $per };
}

# DataHub at a size: tokens spread over users, users in groups and roles,
# the four policies.  Tokens are listed as GMS lists them, made a second
# apart until a day ago, expiring in 30 days (each its own createdAt and
# expiresAt, as tokens made one by one have), ids as DataHub hashes them
# (no salt: the edge has none).
sub datahub {
    my ($ntokens, $nusers) = @_;

    my $now = int(time * 1000);
    my @users = map { "urn:li:corpuser:user$_" } 0 .. $nusers - 1;
    my (@tokens, @raw);

    for my $i (0 .. $ntokens - 1) {
        my $raw = "bench-follow-token-$i";
        my $id = encode_base64(sha256($raw), '');
        my $actor = $users[$i % $nusers];
        push @raw, $raw;
        push @tokens, { urn => "urn:li:dataHubAccessToken:$id", id => $id,
                        actorUrn => $actor, ownerUrn => $actor,
                        name => "bench-$i",
                        createdAt => $now - 86_400_000 - ($ntokens - $i) * 1000,
                        expiresAt => $now + 30 * 86_400_000 + $i };
    }

    my %m;
    for my $i (0 .. $#users) {
        my %mine = (IsMemberOfGroup => [ 'urn:li:corpGroup:g' . $i % 10 ]);
        $mine{IsMemberOfNativeGroup} = [ 'urn:li:corpGroup:g' . ($i + 1) % 10 ]
            if $i % 10 == 0;
        $mine{IsMemberOfRole} = [ 'urn:li:dataHubRole:r' . $i % 3 ]
            if $i % 20 == 0;
        $m{ $users[$i] } = \%mine;
    }
    $m{"urn:li:corpGroup:g$_"} = { IsMemberOfRole => ["urn:li:dataHubRole:r$_"] }
        for 0 .. 2;

    my @policies = (
        { urn => 'urn:li:dataHubPolicy:a-user', privileges => ['MANAGE_POLICIES'],
          actors => { users => [ $users[0] ] } },
        { urn => 'urn:li:dataHubPolicy:a-group',
          privileges => ['MANAGE_ACCESS_TOKENS'],
          actors => { groups => ['urn:li:corpGroup:g4'] } },
        { urn => 'urn:li:dataHubPolicy:a-role',
          privileges => ['GET_ES_TASK_STATUS_PRIVILEGE'],
          actors => { roles => ['urn:li:dataHubRole:r1'] } },
        { urn => 'urn:li:dataHubPolicy:all-users',
          privileges => ['GENERATE_PERSONAL_ACCESS_TOKENS'],
          actors => { allUsers => 1 } },
    );

    return (\@tokens, \@raw, \%m, \@policies);
}

# Each worker of the stand-in reads (and sorts) the state once: done
# before the follower's first page, so that it does not time that.
sub warm {
    my ($gms) = @_;
    my $body = GmsTest::json_encode({
        query => '{ listAccessTokens(input: {start: 0, count: 1}) '
                 . '{ total } entityExists(urn: "urn:li:corpuser:user0") '
                 . 'corpGroup(urn: "urn:li:corpGroup:g0") { relationships('
                 . 'input: {types: ["IsMemberOfGroup"], direction: INCOMING, '
                 . 'start: 0, count: 1}) { total } } }' });
    for (1 .. 6) {
        GmsTest::HTTP::parallel($gms->port, [ map {
            [ 'POST', '/api/graphql',
              { 'Content-Type' => 'application/json',
                Authorization => 'Bearer follower-token' }, $body ]
        } 1 .. 16 ], timeout => 120);
    }
    $gms->clear_requests;
}

# The follower's new lines, each with the time it was seen and how many
# requests the stand-in had received by then.
sub poll {
    my ($w) = @_;
    my @lines = GmsTest::Tool::out_lines($w->{follow});
    return if @lines <= $w->{seen};
    my $requests = $w->{gms}->count;
    for my $line (@lines[ $w->{seen} .. $#lines ]) {
        my $kind = $line =~ / privileges ok / ? 'privileges'
                 : $line =~ / ok tokens=/ ? 'tokens' : 'other';
        my ($ms) = $line =~ / in (\d+)ms\b/;
        push @{ $w->{lines} }, { kind => $kind, at => time, ms => $ms,
                                 requests => $requests, text => $line };
        print "  $line\n" if $kind ne 'other' || $line =~ /lease|changes:/;
    }
    $w->{seen} = @lines;
    die "the follower died\n" if waitpid($w->{follow}{pid}, WNOHANG) > 0;
}

sub counts {
    my ($w) = @_;
    return (scalar(grep { $_->{kind} eq 'tokens' } @{ $w->{lines} }),
            scalar(grep { $_->{kind} eq 'privileges' } @{ $w->{lines} }));
}

# Until $tokens token cycles and $privileges mirrors were seen (no mirror
# line wanted from a follower that mirrors within the token cycle).
sub wait_lines {
    my ($w, $tokens, $privileges, $timeout, $what) = @_;
    my $deadline = time + $timeout;
    while (time < $deadline) {
        poll($w);
        my ($t, $p) = counts($w);
        return if $t >= $tokens
                  && ($p >= $privileges || ($t >= $tokens + 1 && !$p
                                            && $help !~ /privileges-interval/));
        my @err = GmsTest::Tool::err_lines($w->{follow});
        die "the follower fails: $err[-1]\n"
            if @err >= 3 && $err[-1] =~ / failed /;
        sleep 0.01;
    }
    die "$what: not within $timeout s\n";
}

# What the stand-in received, cycle by cycle: each request given to the
# thread that asks its root fields, counted between two of that thread's
# lines.
sub cycles {
    my ($w, $ntokens, $nusers) = @_;

    my @kinds = map { kind($_) } @{ $w->{gms}->requests };
    my $threads = (grep { $_->{kind} eq 'privileges' } @{ $w->{lines} })
                  ? 2 : 1;
    my %row = (size => [$ntokens, $nusers], threads => $threads);

    for my $thread ($threads == 2 ? qw(tokens privileges) : 'tokens') {
        my @lines = grep { $_->{kind} eq $thread } @{ $w->{lines} };
        my (@per, @ms, %fields);
        # the first cycle (everything loaded) is not counted
        for my $k (1 .. $#lines) {
            my @in = grep { $threads == 1 || $_->{thread} eq $thread }
                     @kinds[ $lines[$k - 1]{requests} .. $lines[$k]{requests} - 1 ];
            push @per, scalar @in;
            push @ms, $lines[$k]{ms} // ($lines[$k]{at} - $lines[$k - 1]{at}
                                         - ($thread eq 'tokens' ? $interval
                                                                 : 0)) * 1000;
            $fields{$_} += 1 / $#lines for map { @{ $_->{fields} } } @in;
        }
        # the first token cycle reads the listing whole, and so does one
        # every --full-interval: what it costs, apart
        $row{whole} = { ms => $lines[0]{ms}, requests => $lines[0]{requests} }
            if $thread eq 'tokens' && @lines;
        $row{$thread} = { requests => median(@per), ms => median(@ms),
                          cycles => scalar @per,
                          fields => { map { $_ => sprintf '%.0f', $fields{$_} }
                                      keys %fields } };
    }

    return \%row;
}

# the thread a request belongs to, and its root fields
sub kind {
    my ($req) = @_;
    my $json = $req->{json} // {};
    my @fields = GmsTest::GraphQL->root_fields($json->{query} // '');
    my @urns = ((grep { defined && !ref && /^urn:li:/ }
                 values %{ $json->{variables} // {} }),
                ($json->{query} // '') =~ /"(urn:li:[^"]+)"/g);
    my $tokens = (grep { $_ eq 'listAccessTokens' } @fields)
                 || ((grep { $_ eq 'entityExists' } @fields)
                     && !grep { !/^urn:li:dataHubAccessToken:/ } @urns);
    my %once = map { $_ => 1 } @fields;
    return { thread => $tokens ? 'tokens' : 'privileges',
             fields => [ sort keys %once ] };
}

# Tokens the edge lets through, revoked in the stand-in one by one at a
# random moment of the token cycle: the seconds until the edge says 401.
sub revocations {
    my ($edge, $gms, $w, $raw, $tokens, $period) = @_;

    my @took;
    for my $k (1 .. $REVOKES) {
        my $i = int($k * @$raw / ($REVOKES + 1));
        my $answer = sub {
            my $res = $edge->get('/entities/x', $raw->[$i]);
            return $res->{status} // 0;
        };
        GmsTest::wait_until(sub { $answer->() == 200 }, 30)
            or die "token $i: not let through by the edge\n";
        $answer->() == 200 or die "token $i: not let through twice\n";

        sleep rand($period);
        my $t0 = time;
        $gms->revoke($tokens->[$i]{id});
        my $deadline = $t0 + $CYCLES_WAIT;
        my $status;
        while (time < $deadline) {
            poll($w);
            $status = $answer->();
            last if $status == 401;
            sleep 0.01;
        }
        $status == 401 or die "token $i: still $status at the edge\n";
        push @took, time - $t0;
        printf "  revoked token %d: 401 at the edge %.2f s later\n", $i,
               $took[-1];
    }
    return \@took;
}

sub print_row {
    my ($r) = @_;
    for my $thread (qw(tokens privileges)) {
        my $c = $r->{$thread} or next;
        printf "%s: %s requests a cycle (%s), %.2f s a cycle, over %d "
               . "cycles\n",
               $thread eq 'tokens' ? 'token cycle' : 'privileges cycle',
               $c->{requests},
               join(', ', map { "$_ $c->{fields}{$_}" }
                          sort keys %{ $c->{fields} }),
               $c->{ms} / 1000, $c->{cycles};
    }
    printf "whole listing (the first token cycle): %s requests, %.2f s\n",
           $r->{whole}{requests}, $r->{whole}{ms} / 1000 if $r->{whole};
    printf "revocation to the edge's 401: %s s\n",
           join(', ', map { sprintf '%.2f', $_ } @{ $r->{revocations} });
}

sub print_changes {
    my ($r) = @_;
    my $c = $r->{changes} or return;
    printf "%s: %s\n", $r->{mode}, join('; ', map {
        sprintf '%s %.2f s, %.2f s', $_->[1], median(@{ $c->{ $_->[0] } }),
                max(@{ $c->{ $_->[0] } })
    } change_kinds());
    printf "%s: %.0f GMS requests a minute, nothing changing\n", $r->{mode},
           $r->{idle}{requests} if $r->{idle};
}

sub change_kinds {
    return ([revoked_old => 'revoked old token'],
            [revoked_new => 'revoked new token'],
            [suspended => 'suspended user'],
            [privilege => 'removed privilege'],
            [new => 'new token']);
}

sub print_change_table {
    my (@rows) = @_;
    my @head = ('tokens / users', 'follow',
                (map { "$_->[1] (median, max)" } change_kinds()),
                'GMS requests / min, nothing changing');
    print "Changes to every edge ($EDGES edges):\n";
    print '| ', join(' | ', @head), " |\n";
    print '|', join('|', map { '---' } @head), "|\n";
    for my $r (@rows) {
        print '| ', join(' | ',
            commas($r->{size}[0]) . ' / ' . commas($r->{size}[1]),
            "--changes $r->{mode}",
            (map {
                my $v = $r->{changes}{ $_->[0] };
                sprintf '%.2f s, %.2f s', median(@$v), max(@$v)
            } change_kinds()),
            $r->{idle} ? sprintf('%.0f', $r->{idle}{requests}) : '-'),
            " |\n";
    }
}

# bench/results/follow.svg: how long a revoked token still passes, by size
# and mode (median and max of "revoked old token" at every edge), with
# gnuplot; bench/README.md shows it
sub follow_chart {
    my (@rows) = @_;
    my $results = "$FindBin::Bin/results";

    system('command -v gnuplot >/dev/null 2>&1') == 0 or return 0;
    @rows = grep { $_->{changes} && @{ $_->{changes}{revoked_old} // [] } }
            @rows or return 0;

    my %modes = map { $_->{mode} => 1 } @rows;
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my @plots;
    for my $mode (sort keys %modes) {
        open my $dat, '>', "$dir/$mode.dat" or return 0;
        for my $r (grep { $_->{mode} eq $mode } @rows) {
            my $v = $r->{changes}{revoked_old};
            printf $dat "%d %.3f %.3f\n", $r->{size}[0], median(@$v),
                        max(@$v);
        }
        close $dat;
        push @plots, "'$dir/$mode.dat' using 1:2 with linespoints pt 7 "
                     . "title '--changes $mode: median'",
                     "'$dir/$mode.dat' using 1:3 with linespoints dt 2 "
                     . "title '--changes $mode: max'";
    }

    open my $gp, '>', "$dir/chart.gp" or return 0;
    print $gp "set terminal svg size 900,480 noenhanced font 'sans,12'\n"
        . "set output '$results/follow.svg'\n"
        . "set title 'make bench-follow: a revoked token refused at every "
        . "edge ($EDGES edges), follow @ARGS'\n"
        . "set logscale x\n"
        . "set xlabel 'tokens in DataHub'\n"
        . "set ylabel 'seconds from the revocation to the 401'\n"
        . "set yrange [0:*]\n"
        . "set grid\n"
        . "set key top left\n"
        . 'plot ' . join(", \\\n     ", @plots) . "\n";
    close $gp;

    return system("gnuplot '$dir/chart.gp' >/dev/null 2>&1") == 0
        && -s "$results/follow.svg";
}

sub print_table {
    my (@rows) = @_;
    my @head = ('tokens / users', 'requests / token cycle',
                'requests / privileges cycle', 'token cycle',
                'privileges cycle', 'whole listing (requests, time)',
                'revocation to 401 (median, max)');
    print '| ', join(' | ', @head), " |\n";
    print '|', join('|', map { '---' } @head), "|\n";
    for my $r (@rows) {
        my $p = $r->{privileges};
        print '| ', join(' | ',
            commas($r->{size}[0]) . ' / ' . commas($r->{size}[1]),
            $r->{tokens}{requests},
            $p ? $p->{requests} : 'in the token cycle',
            sprintf('%.2f s', $r->{tokens}{ms} / 1000),
            $p ? sprintf('%.2f s', $p->{ms} / 1000) : '-',
            $r->{whole} ? sprintf('%d, %.2f s', $r->{whole}{requests},
                                  $r->{whole}{ms} / 1000) : '-',
            sprintf('%.2f s, %.2f s', median(@{ $r->{revocations} }),
                    max(@{ $r->{revocations} }))), " |\n";
    }
}

sub median {
    my @v = sort { $a <=> $b } @_;
    return 0 unless @v;
    return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}

sub commas {
    my ($n) = @_;
    1 while $n =~ s/^(\d+)(\d{3})/$1,$2/;
    return $n;
}

sub seconds {
    my ($t) = @_;
    my ($n, $unit) = $t =~ /^(\d+)(ms|s|m|h)?\z/ or return 1;
    return $n / 1000 if ($unit // 's') eq 'ms';
    return $n * { s => 1, m => 60, h => 3600 }->{ $unit // 's' };
}

sub grep_option {
    my ($args, $name) = @_;
    my @out;
    for (my $i = 0; $i < @$args; $i++) {
        if ($args->[$i] eq $name) {
            $i++;
            next;
        }
        push @out, $args->[$i];
    }
    return @out;
}
