#!/usr/bin/perl

# gms-token sync --gms --privileges: users' platform privileges mirrored
# from DataHub into <prefix>actor:<urn>, against a real redis-server and a
# stand-in GMS (GmsTest::GraphQL: listAccessTokens, listPolicies, the
# relationships of corpGroup, entity (a role) and corpUser,
# getGrantedPrivileges).
# From policies: each actor kind (allUsers, users, allGroups, groups,
# roles, roles of a group), inactive and METADATA policies ignored, users
# named by a policy without a token, paging; groups and roles read by
# their members (INCOMING), users asked only for allGroups, several under
# aliases in one request; 5,000 users over 10 groups and 3 roles in a
# handful of requests, each set as DataHub's PolicyEngine has it (computed
# here from the memberships, user by user); from getGrantedPrivileges, a
# hundred users a request; each set replaced in one MULTI/DEL/SADD/EXEC
# only when it changed, the set of a user no longer known deleted, each
# change published on <prefix>invalidate; and every failure (a GraphQL
# error, a 401, a dead GMS, an incomplete listing, a GMS ignoring start,
# bad policies, DataHub 0.13 refusing to answer about another user)
# changing no set.

use strict;
use warnings;

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::GraphQL;
use GmsTest::HTTP;
use GmsTest::Messages qw($GRAPHQL_UNAUTHORIZED $GRAPHQL_OTHER_ACTOR
                         $GRAPHQL_UNKNOWN);
use GmsTest::Tool qw(run_tool gms_account gms_args normalized);

GmsTest::Tool::need_tool();
GmsTest::need_redis();

my $redis = GmsTest::Redis->start;
my @at = ('--redis', '127.0.0.1:' . $redis->port);
my $dir = GmsTest::tempdir();

my $SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwcml2aWxlZ2VzIn0.c2VjcmV0LTQy';
my $token_file = gms_account($SECRET, $dir);

my $future = int(time * 1000) + 30 * 86_400_000;
my ($alice, $bob, $carol, $dave, $erin, $gone) =
    map { "urn:li:corpuser:$_" } qw(alice bob carol dave erin gone);
my ($eng, $ops) = map { "urn:li:corpGroup:$_" } qw(eng ops);
my $admin = 'urn:li:dataHubRole:Admin';

my $watches = 0;

sub sync_from {
    my ($gms, @args) = @_;
    return sync_run(gms_args($gms->url, $token_file), @args, @at);
}

# sync: {rc, out, err, users}, the line of counts of the users' status
# that sync --gms ends with (t/51-inactive-users.t's) taken out of out
sub sync_run {
    my $res = run_tool(undef, 'sync', @_);
    $res->{users} = $1 if $res->{out} =~ s/^(checked=[^\n]*\n)//m;
    return $res;
}

sub listed {
    my ($name, $actor) = @_;
    return GmsTest::Tool::listed($name, actor => $actor, expires => $future,
                                 created => 1_700_000_000_000);
}

sub tokens_line {
    my ($n, %c) = @_;
    return "tokens=$n added=" . ($c{added} // 0) . ' updated=0 unchanged='
           . ($c{unchanged} // 0) . " expired=0 pruned=0 kept=0\n";
}

sub sets {
    my %s;
    for my $key (@{ $redis->cmd(KEYS => 'gms:actor:*') }) {
        $s{ $key =~ s/^gms:actor://r } =
            join ' ', sort @{ $redis->cmd(SMEMBERS => $key) };
    }
    return \%s;
}

# A redis-cli of its own: SUBSCRIBE (or MONITOR) until stopped; returns
# [pid, file].  Starts once the server sees it.
sub watch {
    my ($what) = @_;
    my $file = "$dir/watch" . ++$watches;
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDOUT, '>', $file or POSIX::_exit(127);
        open STDERR, '>', '/dev/null';
        exec GmsTest::redis_bin('cli'), '-p', $redis->port,
             $what eq 'monitor' ? 'MONITOR'
                                : ('--csv', 'SUBSCRIBE', 'gms:invalidate')
            or POSIX::_exit(127);
    }
    for (1 .. 200) {
        last if $what eq 'monitor' ? -s $file
                : $redis->cmd(PUBSUB => 'NUMSUB', 'gms:invalidate')->[1];
        sleep 0.025;
    }
    return [$pid, $file];
}

# Every line it saw, once $want of them matched $re (or five seconds
# passed).
sub seen {
    my ($w, $want, $re) = @_;
    my @lines;
    for (1 .. 200) {
        @lines = split /\n/, GmsTest::slurp($w->[1]);
        last if grep({ /$re/ } @lines) >= $want;
        sleep 0.025;
    }
    kill 'TERM', $w->[0];
    waitpid $w->[0], 0;
    return \@lines;
}

# The root fields a request asks, aliases dropped, in the query's order.
sub root_fields {
    my ($req) = @_;
    (my $q = $req->{json}{query} // '') =~ s/^[^{]*\{//;
    my @t = $q =~ /([{}()]|\$?\w+|[^\s\w{}()\$])/g;
    my ($braces, $parens, @fields) = (0, 0);
    for my $i (0 .. $#t) {
        my $t = $t[$i];
        if    ($t eq '{') { $braces++ }
        elsif ($t eq '}') { $braces-- }
        elsif ($t eq '(') { $parens++ }
        elsif ($t eq ')') { $parens-- }
        elsif ($braces == 0 && $parens == 0 && $t =~ /^\w+\z/
               && ($t[$i + 1] // '') ne ':') {
            push @fields, $t;
        }
    }
    return @fields;
}

# The requests of the tokens' listing and of the privileges mirror (not
# those about the users' status).
sub mirror_requests {
    my ($gms) = @_;
    return grep {
        ($_->{json}{query} // '')
            =~ /\b(?:listAccessTokens|listPolicies|relationships)\(/
    } @{ $gms->requests };
}

# Each relationships question these requests held: [field, urn, input],
# the variables resolved.
sub asked_relationships {
    my @out;
    for my $req (@_) {
        my $v = $req->{json}{variables} // {};
        my $q = $req->{json}{query} // '';
        while ($q =~ /\b(\w+)\(urn:\s*\$(\w+)\)\s*\{\s*
                      relationships\(input:\s*\$(\w+)\)/gx) {
            push @out, [$1, $v->{$2}, $v->{$3}];
        }
    }
    return @out;
}

sub uniq {
    my %seen;
    return grep { !$seen{$_}++ } @_;
}

sub count_by {
    my %n;
    $n{$_}++ for @_;
    return %n;
}

# what was published, but the token ids that sync publishes too
sub published {
    my ($w, $want) = @_;
    my $id = qr{[A-Za-z0-9+/]{43}=};
    return [ sort grep { !/^$id\z/ }
             map { /^"message","gms:invalidate","(.*)"\z/ ? $1 : () }
             @{ seen($w, $want, qr/^"message","[^"]*","(?!$id")/) } ];
}


# --- the stand-in answers getGrantedPrivileges as the fixtures say ----------

{
    my $gms = GmsTest::GraphQL->start;
    my $want = GmsTest::GraphQL->fixture('getGrantedPrivileges.json');
    my $privileges = GmsTest::json_decode($want)
                         ->{data}{getGrantedPrivileges}{privileges};
    $gms->granted({ $alice => $privileges }, only_self => $alice);

    for my $case (['getGrantedPrivileges', $want],
                  ['graphql-error-getGrantedPrivileges-other-actor',
                   GmsTest::GraphQL->fixture(
                       'graphql-error-getGrantedPrivileges-other-actor.json')])
    {
        my ($name, $answer) = @$case;
        my $r = GmsTest::HTTP::request($gms->port, 'POST', '/api/graphql',
            [['Content-Type', 'application/json']],
            GmsTest::GraphQL->fixture("$name.request.json"));
        is("$r->{status} $r->{body}\n", "200 $answer",
           "stand-in: $name.request.json answered as $name.json");
    }
    $gms->stop;
}


# --- privileges from policies -----------------------------------------------

my @tokens = (listed('a', $alice), listed('b', $bob), listed('c', $carol),
              listed('d', $dave), listed('a2', $alice));

my @policies = (
    { urn => 'urn:li:dataHubPolicy:all-users',
      privileges => ['VIEW_ANALYTICS'], actors => { allUsers => 1 } },
    { urn => 'urn:li:dataHubPolicy:alice',
      privileges => ['MANAGE_POLICIES', 'VIEW_ANALYTICS'],
      actors => { users => [$alice] } },
    { urn => 'urn:li:dataHubPolicy:eng',
      privileges => ['MANAGE_INGESTION'], actors => { groups => [$eng] } },
    { urn => 'urn:li:dataHubPolicy:admins',
      privileges => ['MANAGE_SECRETS'], actors => { roles => [$admin] } },
    { urn => 'urn:li:dataHubPolicy:all-groups',
      privileges => ['MANAGE_GLOSSARIES'], actors => { allGroups => 1 } },
    { urn => 'urn:li:dataHubPolicy:inactive', state => 'INACTIVE',
      privileges => ['MANAGE_USERS_AND_GROUPS'],
      actors => { allUsers => 1, users => ['urn:li:corpuser:frank'] } },
    { urn => 'urn:li:dataHubPolicy:metadata', type => 'METADATA',
      privileges => ['EDIT_ENTITY'],
      actors => { allUsers => 1, users => ['urn:li:corpuser:frank'] } },
    { urn => 'urn:li:dataHubPolicy:owners',
      privileges => ['MANAGE_DOMAINS'], actors => { resourceOwners => 1 } },
    { urn => 'urn:li:dataHubPolicy:erin',
      privileges => ['GET_ES_TASK_STATUS_PRIVILEGE'],
      actors => { users => [$erin] } },
);

my %memberships = (
    $bob   => { IsMemberOfGroup => [$eng] },
    $carol => { IsMemberOfNativeGroup => [$ops] },
    $ops   => { IsMemberOfRole => [$admin] },
    $dave  => { IsMemberOfRole => [$admin] },
    $erin  => undef,
);

my %want = (
    $alice => 'MANAGE_POLICIES VIEW_ANALYTICS',
    $bob   => 'MANAGE_GLOSSARIES MANAGE_INGESTION VIEW_ANALYTICS',
    $carol => 'MANAGE_GLOSSARIES MANAGE_SECRETS VIEW_ANALYTICS',
    $dave  => 'MANAGE_SECRETS VIEW_ANALYTICS',
    $erin  => 'GET_ES_TASK_STATUS_PRIVILEGE VIEW_ANALYTICS',
);

my $gms = GmsTest::GraphQL->start(token => $SECRET, tokens => \@tokens,
                                  policies => \@policies,
                                  memberships => \%memberships);

{
    $redis->cmd(SADD => "gms:actor:$gone", 'MANAGE_POLICIES');
    $redis->cmd(SADD => "gms:actor:$dave", 'MANAGE_SECRETS', 'VIEW_ANALYTICS');
    $redis->cmd(SADD => "gms:actor:$alice", 'MANAGE_POLICIES', 'OLD');

    my $sub = watch('subscribe');
    my $res = sync_from($gms);
    is_deeply([@$res{qw(rc out err)}],
              [0, tokens_line(5, added => 5)
                  . "users=5 changed=4 removed=1 skipped=0\n", ''],
              'sync: the tokens line, then users=5 (4 holders, erin named '
              . 'by a policy) changed=4 (dave was right) removed=1')
        or diag(explain($res));

    is_deeply(sets(), \%want,
              'allUsers, users, groups, native groups, allGroups, roles, '
              . "a group's roles; inactive, METADATA and resourceOwners "
              . 'policies grant nothing; a user GMS does not have (erin) '
              . 'has no groups');
    is_deeply(published($sub, 5), [sort $alice, $bob, $carol, $erin, $gone],
              'each changed or removed user published on gms:invalidate');

    my @asked = map { join ' ', root_fields($_) } mirror_requests($gms);
    is_deeply(\@asked, ['listAccessTokens', 'listPolicies', 'corpGroup entity',
                        'corpGroup', 'corpUser corpUser corpUser'],
              'asked: the tokens once (the mirror takes the holders from '
              . 'the sync), the policies, the group and the role they name '
              . 'in one request, the group holding the role, then for '
              . 'allGroups the users found in no group, in one request')
        or diag(explain(\@asked));
    my $groups = [qw(IsMemberOfGroup IsMemberOfNativeGroup)];
    is_deeply([ asked_relationships(@{ $gms->requests }) ],
              [ [corpGroup => $eng, { types => $groups, direction => 'INCOMING',
                                      start => 0, count => 100 }],
                [entity => $admin, { types => ['IsMemberOfRole'],
                                     direction => 'INCOMING', start => 0,
                                     count => 100 }],
                [corpGroup => $ops, { types => $groups, direction => 'INCOMING',
                                      start => 0, count => 100 }],
                map { [corpUser => $_, { types => $groups,
                                         direction => 'OUTGOING', start => 0,
                                         count => 100 }] }
                    $alice, $dave, $erin ],
              'relationships: the members of eng, Admin (a user and ops) and '
              . 'ops; the groups of alice, dave and erin (bob and carol are '
              . 'in one): users in no group are asked, no others')
        or diag(explain([ asked_relationships(@{ $gms->requests }) ]));

    my $state = $redis->dump_all;
    $sub = watch('subscribe');
    $gms->clear_requests;
    $res = sync_from($gms);
    is($res->{out}, tokens_line(5, unchanged => 5)
                    . "users=5 changed=0 removed=0 skipped=0\n",
       'again: nothing changed');
    $redis->unchanged($state, 'again: Redis as it was');

    # paged: each page of listAccessTokens asked once, by the sync only
    $gms->clear_requests;
    $res = sync_from($gms, '--page-size', '2');
    is($res->{out}, tokens_line(5, unchanged => 5)
                    . "users=5 changed=0 removed=0 skipped=0\n",
       '--page-size 2: the same');
    is_deeply([ map { $_->{json}{variables}{input} }
                grep { $_->{json}{query} =~ /\{\s*listAccessTokens\b/ }
                @{ $gms->requests } ],
              [ map { { start => $_, count => 2, filters => [] } } 0, 2, 4 ],
              '--page-size 2: three pages of listAccessTokens, one request '
              . 'each');
    $redis->unchanged($state, '--page-size 2: Redis as it was');
    $redis->cmd(PUBLISH => 'gms:invalidate', 'end');
    is_deeply(published($sub, 1), ['end'], 'again: nothing published');
}

{
    # bob leaves eng: only his set is replaced, in one transaction
    $gms->memberships({ %memberships, $bob => {} });
    my $mon = watch('monitor');
    my $res = sync_from($gms);
    is($res->{out}, tokens_line(5, unchanged => 5)
                    . "users=5 changed=1 removed=0 skipped=0\n",
       'bob leaves eng: one set changed');
    is_deeply(sets(), { %want, $bob => 'VIEW_ANALYTICS' },
              'bob: no MANAGE_INGESTION, and no group for allGroups');
    $redis->cmd(PING => 'end');
    my @lines = map { /^[\d.]+ \[[^\]]*\] (.*)/ ? $1 : () }
                @{ seen($mon, 1, qr/"PING" "end"/) };
    my ($at) = grep { $lines[$_] eq qq{"DEL" "gms:actor:$bob"} } 0 .. $#lines;
    is_deeply([ defined $at ? @lines[$at - 1 .. $at + 2] : () ],
              ['"MULTI"', qq{"DEL" "gms:actor:$bob"},
               qq{"SADD" "gms:actor:$bob" "VIEW_ANALYTICS"}, '"EXEC"'],
              "bob's set replaced by MULTI, DEL, SADD, EXEC")
        or diag(explain(\@lines));
    is_deeply([ grep { /^"(?:DEL|UNLINK|SADD|SREM)" "gms:actor:/ } @lines ],
              [ @lines[$at, $at + 1] ], 'no other set written');

    # a user whose privileges all go: the set goes
    $gms->tokens([ grep { $_->{actorUrn} ne $dave } @tokens ]);
    $gms->memberships({ %memberships, $bob => {}, $dave => {} });
    $res = sync_from($gms, '--prune');
    like($res->{out}, qr/\nusers=4 changed=0 removed=1 skipped=0\n\z/,
         "dave's token revoked: his set removed");
    is($redis->cmd(EXISTS => "gms:actor:$dave"), 0, 'dave: no set');
    $gms->tokens(\@tokens);
    $gms->memberships(\%memberships);
    is(sync_from($gms)->{rc}, 0, 'all back');
}

# --- paging: more than a page of policies, of relationships -----------------

{
    my @many = (@policies, map {
        { urn => "urn:li:dataHubPolicy:m$_", type => 'METADATA',
          privileges => ['EDIT_ENTITY'], actors => { allUsers => 1 } }
    } 1 .. 150);
    push @many, { urn => 'urn:li:dataHubPolicy:last',
                  privileges => ['MANAGE_TESTS'], actors => { groups => [$ops] } };
    # ops: 250 members without a token, then carol (native, listed last)
    my %more = map { (sprintf('urn:li:corpuser:m%03d', $_)
                      => { IsMemberOfGroup => [$ops] }) } 1 .. 250;
    $gms->policies(\@many);
    $gms->memberships({ %memberships, %more });
    $gms->clear_requests;

    my $res = sync_from($gms);
    like($res->{out}, qr/\nusers=5 changed=1 removed=0 skipped=0\n\z/,
         '160 policies, 251 members of ops: one set changed');
    is(sets()->{$carol},
       'MANAGE_GLOSSARIES MANAGE_SECRETS MANAGE_TESTS VIEW_ANALYTICS',
       'carol: the policy on page 2, through the group, on its third page');
    my @pages = map { [ @{ $_->{json}{variables}{input} }{qw(start count)} ] }
                grep { $_->{json}{query} =~ /listPolicies/ } @{ $gms->requests };
    is_deeply(\@pages, [[0, 100], [100, 100]], 'listPolicies: two pages');
    my @ops = map {
        my @starts = map { $_->[2]{start} } grep { $_->[1] eq $ops }
                     asked_relationships($_);
        @starts ? [@starts] : ();
    } @{ $gms->requests };
    is_deeply(\@ops, [[0], [100, 200]],
              "ops' members: the first page, then the other two together");
    is(scalar(grep { $_->[0] eq 'corpUser' }
              asked_relationships(@{ $gms->requests })), 3,
       '... and the users in no group asked all the same (alice, dave, erin)');
    $gms->policies(\@policies);
    $gms->memberships(\%memberships);
    is(sync_from($gms)->{rc}, 0, 'all back');
}

# --- 5,000 users over 10 groups and 3 roles ----------------------------------

# Every user holds a token; the policies name one user twice over, two
# groups, the three roles, all users and all groups.  The sets expected
# are DataHub's PolicyEngine's, computed user by user from the
# memberships: the user's groups (IsMemberOfGroup, IsMemberOfNativeGroup)
# and roles (its own IsMemberOfRole and each of its groups').  GMS answers
# each request after 45 ms, as in the issue.
{
    my $n = 5000;
    my @users = map { sprintf 'urn:li:corpuser:u%04d', $_ } 0 .. $n - 1;
    my @g = map { "urn:li:corpGroup:g$_" } 0 .. 9;
    my ($ra, $re, $rr) =
        map { "urn:li:dataHubRole:$_" } qw(Admin Editor Reader);
    my $notoken = 'urn:li:corpuser:no-token';

    my %m;
    for my $i (0 .. $n - 1) {
        my $u = $users[$i];
        if ($i < 4000) {            # one group, corp or native
            push @{ $m{$u}{ $i % 2 ? 'IsMemberOfNativeGroup'
                                   : 'IsMemberOfGroup' } }, $g[$i % 10];
        } elsif ($i < 4500) {       # two groups
            push @{ $m{$u}{IsMemberOfGroup} }, $g[$i % 10];
            push @{ $m{$u}{IsMemberOfNativeGroup} }, $g[($i + 1) % 10];
        }                           # and 500 in none
    }
    push @{ $m{ $users[2] }{IsMemberOfNativeGroup} }, $g[2];   # twice in g2
    push @{ $m{ $users[$_] }{IsMemberOfRole} }, $ra for 0 .. 4;
    push @{ $m{ $users[$_] }{IsMemberOfRole} }, $re for 4500 .. 4549;
    push @{ $m{ $users[$_] }{IsMemberOfRole} }, $rr for 4990 .. 4999;
    $m{ $g[9] }{IsMemberOfRole} = [$ra];
    $m{ $g[7] }{IsMemberOfRole} = [$re];
    $m{ $g[8] }{IsMemberOfRole} = [$re, $rr];
    $m{ $g[0] }{IsMemberOfRole} = [$rr];
    $m{$notoken} = { IsMemberOfGroup => [$g[2]], IsMemberOfRole => [$ra] };

    my @big = (
        { urn => 'urn:li:dataHubPolicy:users',
          privileges => ['MANAGE_POLICIES'],
          actors => { users => [$users[4999], $users[1]] } },
        { urn => 'urn:li:dataHubPolicy:groups',
          privileges => ['MANAGE_INGESTION'],
          actors => { groups => [@g[2, 5]] } },
        { urn => 'urn:li:dataHubPolicy:admin', privileges => ['MANAGE_SECRETS'],
          actors => { roles => [$ra] } },
        { urn => 'urn:li:dataHubPolicy:editors',
          privileges => ['MANAGE_DOMAINS'], actors => { roles => [$re, $rr] } },
        { urn => 'urn:li:dataHubPolicy:all', privileges => ['VIEW_ANALYTICS'],
          actors => { allUsers => 1 } },
        { urn => 'urn:li:dataHubPolicy:any-group',
          privileges => ['MANAGE_GLOSSARIES'], actors => { allGroups => 1 } },
        { urn => 'urn:li:dataHubPolicy:off', state => 'INACTIVE',
          privileges => ['MANAGE_TESTS'], actors => { groups => [$g[3]] } },
    );

    # PolicyEngine, user by user
    my %want;
    for my $u (@users) {
        my $mine = $m{$u} // {};
        my %groups = map { $_ => 1 } @{ $mine->{IsMemberOfGroup} // [] },
                                     @{ $mine->{IsMemberOfNativeGroup} // [] };
        my %roles = map { $_ => 1 } @{ $mine->{IsMemberOfRole} // [] },
            map { @{ ($m{$_} // {})->{IsMemberOfRole} // [] } } keys %groups;
        my %p;
        for my $pol (@big) {
            next if ($pol->{state} // '') eq 'INACTIVE';
            my $a = $pol->{actors};
            $p{$_} = 1 for grep {
                $a->{allUsers}
                || grep({ $_ eq $u } @{ $a->{users} // [] })
                || ($a->{allGroups} && %groups)
                || grep({ $groups{$_} } @{ $a->{groups} // [] })
                || grep({ $roles{$_} } @{ $a->{roles} // [] })
            } @{ $pol->{privileges} };
        }
        $want{$u} = join ' ', sort keys %p if %p;
    }

    my $big_redis = GmsTest::Redis->start;
    my $big_gms = GmsTest::GraphQL->start(
        token => $SECRET, policies => \@big, memberships => \%m,
        tokens => [ map { listed("t$_", $users[$_]) } 0 .. $n - 1 ]);
    $big_gms->delay(0.045);

    my $sync = sub {
        my $t0 = time;
        my $res = sync_run(gms_args($big_gms->url, $token_file),
                           '--page-size', '1000', '--redis',
                           '127.0.0.1:' . $big_redis->port);
        return ($res, time - $t0);
    };
    my $dump = sub {
        my %s = @{ $big_redis->cmd(EVAL => q{
            local r = {}
            for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
                r[#r + 1] = string.sub(k, 11)
                r[#r + 1] = table.concat(redis.call('SORT', k, 'ALPHA'), ' ')
            end
            return r }, 0, 'gms:actor:*') };
        return \%s;
    };

    my ($res, $took) = $sync->();
    is_deeply([@$res{qw(rc out err)}],
              [0, "tokens=$n added=$n updated=0 unchanged=0 expired=0 "
                  . "pruned=0 kept=0\nusers=$n changed=$n removed=0 "
                  . "skipped=0\n", ''],
              "$n users: every set written")
        or diag(explain($res));
    my $got = $dump->();
    is(scalar(grep { ($got->{$_} // '') ne ($want{$_} // '') } @users), 0,
       "$n users: each set is the one PolicyEngine gives, user by user");
    is_deeply($got, \%want, '... and no other set (the member without a '
              . 'token has none)');

    # groups read: those named and those holding a named role; users asked:
    # those in none of them
    my %read = map { $_ => 1 } @g[2, 5, 9, 7, 8, 0];
    my $alone = grep {
        my $mine = $m{$_} // {};
        !grep { $read{$_} } @{ $mine->{IsMemberOfGroup} // [] },
                            @{ $mine->{IsMemberOfNativeGroup} // [] };
    } @users;
    my @mirror = grep { !/^listAccessTokens\z/ }
                 map { join ' ', sort(uniq(root_fields($_))) }
                 mirror_requests($big_gms);
    my %by = count_by(@mirror);
    is_deeply(\%by,
              { listPolicies => 1, 'corpGroup entity' => 1, corpGroup => 2,
                corpUser => int(($alone + 99) / 100) },
              "$n users: listPolicies, 3 requests for the members of 2 "
              . 'groups, 3 roles and the 4 groups holding those roles (a '
              . 'first page each, then the rest together), '
              . int(($alone + 99) / 100) . " for the $alone users in none "
              . 'of those groups (allGroups), 100 a request')
        or diag(explain(\%by));
    is(scalar(grep { $_->[0] eq 'corpUser' }
                asked_relationships(@{ $big_gms->requests })),
       $alone, "... each of those $alone users asked once");
    note(sprintf '%d users, 45 ms a request: %d requests in %.1f s (%d of '
         . 'them for the privileges); user by user, the privileges took '
         . '%d (listPolicies, a corpUser a user, a corpGroup a group)', $n,
         scalar @{ $big_gms->requests }, $took, scalar @mirror, 1 + $n + 10);

    $big_gms->clear_requests;
    $big_gms->delay(0);
    ($res, $took) = $sync->();
    like($res->{out}, qr/\nusers=$n changed=0 removed=0 skipped=0\n\z/,
         "$n users again: nothing changed");
    note(sprintf 'again, GMS answering at once: %.1f s', $took);

    $big_gms->stop;
    $big_redis->stop;
}

# --- a set larger than the edge accepts is not written -----------------------

{
    # erin: VIEW_ANALYTICS, GET_ES_TASK_STATUS_PRIVILEGE and these
    my @many = map { sprintf 'PRIVILEGE_%03d', $_ } 1 .. 255;
    my $with = sub {
        $gms->policies([ @policies,
            { urn => 'urn:li:dataHubPolicy:many', privileges => [@_],
              actors => { users => [$erin] } },
            { urn => 'urn:li:dataHubPolicy:bob',
              privileges => ['MANAGE_TESTS'], actors => { users => [$bob] } }
        ]);
    };
    my $erin_before = sets()->{$erin};
    $with->(@many);

    my $res = sync_from($gms);
    is_deeply([@$res{qw(rc out)}],
              [0, tokens_line(5, unchanged => 5)
                  . "users=5 changed=1 removed=0 skipped=1\n"],
              '257 privileges for erin: her set skipped, counted')
        or diag(explain($res));
    is($res->{err}, 'gms-token: sync: ' . $gms->url . ": $erin has 257 "
                    . 'privileges, more than the edge accepts (256): the set '
                    . "left as it was\n",
       '... one line on stderr names the user');
    is(sets()->{$erin}, $erin_before, '... her set as it was');
    is(sets()->{$bob},
       'MANAGE_GLOSSARIES MANAGE_INGESTION MANAGE_TESTS VIEW_ANALYTICS',
       "... bob's set written all the same");

    $with->(@many[1 .. $#many]);
    $res = sync_from($gms);
    is_deeply([@$res{qw(rc out err)}],
              [0, tokens_line(5, unchanged => 5)
                  . "users=5 changed=1 removed=0 skipped=0\n", ''],
              '256: written');
    is(scalar(split / /, sets()->{$erin}), 256, '... all of them');

    $gms->policies(\@policies);
    is(sync_from($gms)->{rc}, 0, 'all back');
}

# --- failures: no set changes -----------------------------------------------

{
    # were any of these to go through, sets would change
    $redis->cmd(SADD => "gms:actor:$gone", 'MANAGE_POLICIES');
    $redis->cmd(SADD => "gms:actor:$bob", 'EXTRA');
    my $before = $redis->dump_all;

    my @cases = (
        [ 'listPolicies: a GraphQL error',
          [field => 'listPolicies', graphql_error => 1], [],
          qr/\Q$GRAPHQL_UNAUTHORIZED\E/ ],
        [ 'listPolicies: 401', [field => 'listPolicies', status => 401], [],
          qr/HTTP 401/ ],
        [ 'listPolicies: incomplete',
          [field => 'listPolicies', total => 400], [],
          qr/listPolicies lists 9 policies of a total of 400/ ],
        [ 'corpUser: HTTP 500', [field => 'corpUser', status => 500], [],
          qr/HTTP 500/ ],
        [ 'corpGroup: a GraphQL error',
          [field => 'corpGroup', graphql_error => $GRAPHQL_UNKNOWN],
          [], qr/\Q$GRAPHQL_UNKNOWN\E/ ],
        [ 'corpGroup: incomplete', [field => 'corpGroup', total => 400], [],
          qr/corpGroup \Q$eng\E: no relationships at 100 of a total of 400: /
          . qr/the list is incomplete/ ],
        [ 'entity (a role): HTTP 500', [field => 'entity', status => 500], [],
          qr/HTTP 500/ ],
        [ 'listAccessTokens: incomplete for the mirror',
          [field => 'listAccessTokens', total => 7], [],
          qr/listAccessTokens lists 5 tokens of a total of 7/ ],
        [ 'graphql mode, DataHub 0.13: only oneself',
          [], ['--privileges', 'graphql'],
          qr/\Q$GRAPHQL_OTHER_ACTOR\E/ ],
    );

    $gms->granted({}, only_self => 'urn:li:corpuser:admin');

    for my $c (@cases) {
        my ($title, $how, $args, $re) = @$c;
        $gms->misbehave(@$how);
        my $res = sync_from($gms, @$args);
        subtest "refused: $title" => sub {
            is($res->{rc}, 4, 'exit status 4');
            like($res->{err}, qr/^gms-token: sync: [^\n]*$re[^\n]*\n\z/,
                 'one line on stderr');
            like($res->{out}, qr/^tokens=5 [^\n]*\n\z/,
                 'the tokens line only');
            $redis->unchanged($before, 'Redis unchanged');
        };
    }
    $gms->misbehave;

    $gms->policies([ @policies, { urn => 'urn:li:dataHubPolicy:bad',
                                  privileges => ['NOT A NAME'],
                                  actors => { allUsers => 1 } } ]);
    my $res = sync_from($gms);
    like($res->{err}, qr/^gms-token: sync: \Q${\ $gms->url }\E: listPolicies at 0: policies\[9\]: privileges\[0\] is not a privilege name\n\z/,
         'a bad privilege name in a policy: refused, named');
    $redis->unchanged($before, 'a bad policy: Redis unchanged');
    $gms->policies(\@policies);

    $res = sync_run(gms_args(GmsTest::GraphQL->dead_url, $token_file), @at);
    is_deeply([$res->{rc}, $res->{out}], [4, ''], 'GMS dead: exit 4');
    like($res->{err}, qr/^gms-token: sync: [^\n]*connect[^\n]*\n\z/i,
         'GMS dead: one line');
    $redis->unchanged($before, 'GMS dead: Redis unchanged');

    $res = sync_from($gms, '--privileges', 'off');
    is($res->{out}, tokens_line(5, unchanged => 5),
       '--privileges off: only the tokens line');
    $redis->unchanged($before, '--privileges off: no set touched');

    $res = sync_from($gms, '--privileges', 'some');
    is_deeply([@$res{qw(rc out)}], [2, ''], '--privileges some: usage');
    like($res->{err}, qr/none of policies, graphql and off/, '... named');
    $res = run_tool(undef, 'sync', '--privileges', 'policies', @at);
    is($res->{rc}, 2, '--privileges without --gms: usage');
    like($res->{err}, qr/need --gms/, '... said');
}

# --- privileges from getGrantedPrivileges -----------------------------------

{
    $gms->granted({ $alice => ['MANAGE_POLICIES', 'VIEW_ANALYTICS',
                               'VIEW_ANALYTICS'],
                    $bob   => ['EDIT_ENTITY'],
                    $erin  => [] });
    $gms->clear_requests;
    my $res = sync_from($gms, '--privileges', 'graphql');
    is_deeply([@$res{qw(rc out err)}],
              [0, tokens_line(5, unchanged => 5)
                  . "users=5 changed=4 removed=1 skipped=0\n", ''],
              'graphql: the sets GMS gives, gone removed')
        or diag(explain($res));
    is_deeply(sets(), { $alice => 'MANAGE_POLICIES VIEW_ANALYTICS',
                        $bob => 'EDIT_ENTITY' },
              'graphql: each once; none for who has none');
    my @granted = grep { $_->{json}{query} =~ /getGrantedPrivileges/ }
                  @{ $gms->requests };
    is(scalar @granted, 1, 'graphql: one request for the five users');
    my $vars = $granted[0]{json}{variables};
    is_deeply([ map { $vars->{"i$_"}{actorUrn} } 0 .. 4 ],
              [sort $alice, $bob, $carol, $dave, $erin],
              'graphql: asked for each user, one alias each');

    # the fixture's field (datahub-web-react's query), once a user under
    # an alias, its variable renamed
    my $fixture = GmsTest::json_decode(GmsTest::GraphQL->fixture(
        'getGrantedPrivileges.request.json'))->{query};
    my ($field) =
        normalized($fixture) =~ /^query \w+\(\$input: [^)]*\) \{ (.*) \}\z/;
    is(normalized($granted[0]{json}{query}),
       'query getGrantedPrivileges('
       . join(', ', map { "\$i$_: GetGrantedPrivilegesInput!" } 0 .. 4)
       . ') { ' . join(' ', map { "g$_: " . ($field =~ s/\$input\b/\$i$_/r) }
                              0 .. 4) . ' }',
       "graphql: the fixture's field (datahub-web-react's query) under an "
       . 'alias a user');

    $gms->misbehave(field => 'getGrantedPrivileges', status => 401);
    my $before = $redis->dump_all;
    $res = sync_from($gms, '--privileges', 'graphql');
    is($res->{rc}, 4, 'graphql, 401: exit 4');
    $redis->unchanged($before, 'graphql, 401: Redis unchanged');
    $gms->misbehave;
}

done_testing();
