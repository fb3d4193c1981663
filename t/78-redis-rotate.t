#!/usr/bin/perl

# Redis credentials that rotate (docs/operations.md, "Redis credentials
# that rotate"): the edge authenticates as a Redis ACL user whose password
# changes every second, as a provider's short-lived token does; a
# rotator writes each new password into password_file= by a rename (as
# kubelet swaps a Secret) after adding it to the user, and removes the
# one before it a second later (the overlap).  With max_age=2s every
# connection is made anew every two seconds or so, each with the file as
# it is then.  Under wrk's load for 30 s, gms-token follow beside it as
# the same user: no answer but 200 for a valid token, the recycling in
# the log and the metrics, every follow cycle ok.  The same through
# Sentinel (both passwords rotating) and a cluster, for 10 s each.  Then
# a rotation that removes the old password at once: the next
# connection's AUTH is refused, the file read again, AUTH sent again:
# 200, no 503.  Last, gms-token follow across a rotation: it reconnects
# with the file as it is then.

use strict;
use warnings;

use Test::More;
use POSIX ();
use GmsTest;
use GmsTest::Nginx;
use GmsTest::Redis;
use GmsTest::Sentinel;
use GmsTest::Cluster;
use GmsTest::HTTP;
use Time::HiRes qw(sleep time);
use GmsTest::GraphQL;
use GmsTest::Tool ();

GmsTest::need_redis();
GmsTest::skip_all('wrk is not installed') unless GmsTest::in_path('wrk');

my $TOKEN = 'rotating-credentials-token';
my $ID = GmsTest::sha256_b64($TOKEN);
my $dir = GmsTest::scratch_dir();
my $GMS_SECRET = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyb3RhdGUifQ.'
                 . 'c2VjcmV0LWdtcy1yb3RhdGUtc2lnbmF0dXJlLTc4';
delete $ENV{GMS_REDIS_PASSWORD};

sub write_atomically {
    my ($path, $text) = @_;
    GmsTest::write_file("$path.new", $text);
    rename "$path.new", $path or die "rename $path: $!\n";
}

# The edge's ACL user on each server, with its first password; the
# harness itself is the default user (admin-pw).
sub edge_user {
    my ($servers, $user, $pw) = @_;
    for my $r (@$servers) {
        my $reply = $r->cmd(ACL => 'SETUSER', $user, 'reset', 'on', ">$pw",
                            '~*', '&*', '+@all');
        die "ACL SETUSER: $reply\n" unless "$reply" eq 'OK';
    }
}

# Every second: password k added to $user on every server, written to
# $file, and password k - 1 - $overlap removed (overlap 0: at once).
sub rotator {
    my (%o) = @_;
    my $pid = fork // die "fork: $!\n";
    return $pid if $pid;

    # the parent's connections are the parent's
    delete $_->{sock} for @{ $o{servers} };
    my $k = 0;
    while (1) {
        sleep 1;
        $k++;
        $_->cmd(ACL => 'SETUSER', $o{user}, ">$o{prefix}$k")
            for @{ $o{servers} };
        write_atomically($o{file}, "$o{prefix}$k\n");
        my $old = $k - 1 - $o{overlap};
        next if $old < 0;
        $_->cmd(ACL => 'SETUSER', $o{user}, "<$o{prefix}$old")
            for @{ $o{servers} };
    }
}

sub stop_rotator {
    my ($pid) = @_;
    kill 'KILL', $pid;
    waitpid $pid, 0;
}

sub wrk {
    my ($n, $seconds) = @_;
    my $out = "$dir/wrk.out";
    unlink $out;
    GmsTest::run(['wrk', '-t1', '-c4', "-d${seconds}s", '-H',
                  "Authorization: Bearer $TOKEN",
                  'http://127.0.0.1:' . $n->port . '/ok'], $out);
    my $text = GmsTest::slurp($out);
    my ($requests) = $text =~ /(\d+) requests in/;
    my ($bad) = $text =~ /Non-2xx or 3xx responses: (\d+)/;
    my ($errors) = $text =~ /Socket errors: (.*)/;
    return ($requests // 0, $bad // 0, $errors, $text);
}

sub metric {
    my ($n, $name) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    return $text =~ /^\Q$name\E (\S+)$/m ? $1 : 0;
}

sub edge {
    my ($redis_conf, %opt) = @_;
    my $n = GmsTest::Nginx->new(log_level => $opt{log_level} // 'info',
                                workers => $opt{workers} // 2);
    GmsTest::write_file($n->dir . '/ok', "ok\n");
    $n->start(<<"CONF");
    $redis_conf
    gms_token_redis_timeout 500ms;
    gms_token_salt "";
    @{[ $opt{extra} // '' ]}

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        location / { root %%TESTDIR%%; }
        location = /metrics { gms_token_auth off; gms_token_metrics; }
    }
CONF
    return $n;
}

sub status {
    my ($n) = @_;
    my $res = GmsTest::HTTP::request($n->port, GET => '/ok',
        { Authorization => "Bearer $TOKEN" });
    return $res->{status} // 0;
}

# wrk against the edge while the rotator runs: every answer a 200
sub under_rotation {
    my ($what, $n, $seconds, %rot) = @_;

    ok(GmsTest::wait_until(sub { status($n) == 200 }, 10),
       "$what: the token answered before the rotation");

    my $pid = rotator(%rot);
    my ($requests, $bad, $errors, $text) = wrk($n, $seconds);
    stop_rotator($pid);

    cmp_ok($requests, '>', 100, "$what: wrk made requests for ${seconds}s")
        or diag $text;
    note "$what: $requests requests";
    is($bad, 0, "$what: no 401 and no 503 while the password rotated "
                . 'every second') or diag $text;

    my $log = $n->error_log;
    my @recycled = $log =~ /recycled at max_age/g;
    cmp_ok(scalar @recycled, '>=', $seconds / 2,
           "$what: connections recycled at max_age, as the log says");
    cmp_ok(metric($n, 'gms_redis_connections_recycled_total'), '>=',
           $seconds / 2, "$what: and as the metrics say");
    cmp_ok(metric($n, 'gms_redis_password_file_reads_total'), '>=', 2,
           "$what: the changed file read again");
    unlike($log, qr/$rot{prefix}\d/, "$what: no password in the log");
    # a recycle is no failure: the master is where it was
    unlike($log, qr/master's connection failed/,
           "$what: no recycle taken for the master's failure");
    is_deeply([ $n->bad_log_lines ], [], "$what: no alert, no crash");
    $n->stop;
}

# standalone, 30 s

{
    my $r = GmsTest::Redis->start(password => 'admin-pw');
    $r->cmd(HSET => "gms:token:$ID", actor => 'urn:li:corpuser:alice');
    edge_user([$r], 'edge', 'pw-0');
    my $file = "$dir/redis-password";
    write_atomically($file, "pw-0\n");

    my $n = edge('gms_token_redis ' . $r->address . " user=edge "
                 . "password_file=$file max_age=2s;");

    # gms-token follow beside the edge, as the same user, from the same
    # file, DataHub listing the token
    my ($f, $gms);
    if (-x GmsTest::Tool::bin()) {
        $gms = GmsTest::GraphQL->start(token => $GMS_SECRET);
        $gms->tokens([ GmsTest::Tool::listed($TOKEN) ]);
        $f = GmsTest::Tool::start_follow(
            GmsTest::Tool::gms_args($gms->url,
                GmsTest::Tool::gms_account($GMS_SECRET, $dir)),
            '--interval', '1s', '--privileges', 'off',
            '--redis', $r->address, '--user', 'edge',
            '--password-file', $file);
        GmsTest::wait_until(sub { GmsTest::Tool::ok_lines($f) }, 15);
    }
    my $cycles = $f ? GmsTest::Tool::ok_lines($f) : 0;

    under_rotation('standalone', $n, 30, servers => [$r], user => 'edge',
                   prefix => 'pw-', file => $file, overlap => 1);

    SKIP: {
        skip 'gms-token not built', 2 unless $f;
        cmp_ok(scalar GmsTest::Tool::ok_lines($f), '>=', $cycles + 10,
               'follow ran its cycles through the rotation');
        is_deeply([ grep { /failed/ } GmsTest::Tool::out_lines($f) ], [],
                  '... none failed');
        GmsTest::Tool::stop_follow($f, 'TERM');
    }

    # the AUTH-retry path: the old password removed as the file changes

    # at debug: no password in any line
    $n = edge('gms_token_redis ' . $r->address . " user=edge "
              . "password_file=$file;", log_level => 'debug');
    edge_user([$r], 'edge', 'at-once-0');
    write_atomically($file, "at-once-0\n");
    ok(GmsTest::wait_until(sub { status($n) == 200 }, 10),
       'a new edge: the token answered');

    my ($k, @statuses) = (0);
    for my $try (1 .. 5) {
        # within one second: a new connection reads the file, the
        # password rotates and the connection is dropped, the next one
        # authenticates with what the worker read in that same second
        sleep 0.01 while time - int(time) > 0.2;
        $r->cmd(CLIENT => 'KILL', 'USER', 'edge');
        sleep 0.1;
        push @statuses, status($n), status($n);
        $k++;
        $r->cmd(ACL => 'SETUSER', 'edge', ">at-once-$k", "<at-once-"
                . ($k - 1));
        write_atomically($file, "at-once-$k\n");
        $r->cmd(CLIENT => 'KILL', 'USER', 'edge');
        sleep 0.1;
        push @statuses, status($n), status($n);
        last if metric($n, 'gms_redis_auth_retries_total') >= 1;
    }

    is_deeply([ grep { $_ != 200 } @statuses ], [],
              'a password removed as the file changed: 200, never 503');
    cmp_ok(metric($n, 'gms_redis_auth_retries_total'), '>=', 1,
           'AUTH refused, the file read again, AUTH sent again');
    like($n->error_log,
         qr/AUTH refused \(WRONGPASS[^)]*\); "\Q$file\E" read again, AUTH/,
         'the retry logged, without the password');
    unlike($n->error_log, qr/at-once-\d/, 'no password in the log, at debug');

    $n->stop;

    # a file that breaks the rule (caught mid-write: two lines; emptied):
    # logged, the password read before stays (one worker: it has read the
    # file as it is now)

    $n = edge('gms_token_redis ' . $r->address . " user=edge "
              . "password_file=$file;", log_level => 'debug', workers => 1);
    ok(GmsTest::wait_until(sub { status($n) == 200 }, 10),
       'one worker: the token answered');

    for my $bad ([ "at-once-$k\nat-once-", 'holds more than one line' ],
                 [ '', 'holds no password' ])
    {
        write_atomically($file, $bad->[0]);
        sleep 1.1;
        $r->cmd(CLIENT => 'KILL', 'USER', 'edge');
        sleep 0.1;
        my @st = map { status($n) } 1 .. 3;
        is_deeply([ grep { $_ != 200 } @st ], [],
                  "a password file that $bad->[1]: the one before serves")
            or diag "@st\n" . $n->error_log;
        like($n->error_log, qr/"\Q$file\E" \Q$bad->[1]\E.*read before stays/,
             "... and the worker says why");
    }
    unlike($n->error_log, qr/at-once-\d/, 'still no password in the log');
    $n->stop;
    $r->stop;
}

# through Sentinel, 10 s: the master's password and the Sentinels' rotate

SKIP: {
    skip 'redis-sentinel is not installed', 8
        unless GmsTest::in_path(GmsTest::redis_bin('sentinel'));

    my $m = GmsTest::Redis->start(password => 'admin-pw');
    my $s = GmsTest::Sentinel->start(master => $m, name => 'gms',
                                     sentinel_password => 'admin-pw');
    $m->cmd(HSET => "gms:token:$ID", actor => 'urn:li:corpuser:alice');
    edge_user([$m], 'edge', 'spw-0');

    # the Sentinels' password is their default user's (AUTH password), a
    # second one beside the harness's
    my @sentinels = @{ $s->{clients} };
    $_->cmd(ACL => 'SETUSER', 'default', '>spw-0') for @sentinels;
    my $file = "$dir/sentinel-redis-password";
    my $sfile = "$dir/sentinel-password";
    write_atomically($file, "spw-0\n");
    write_atomically($sfile, "spw-0\n");

    my $n = edge('gms_token_redis_sentinel ' . join(' ', $s->addresses)
                 . " master=gms user=edge password_file=$file "
                 . "sentinel_password_file=$sfile max_age=2s;",
                 extra => 'gms_token_cache zone=rotate:1m ttl=1s;');

    # the Sentinels' password: the default user's, as sentinel_password=
    my $spid = rotator(servers => \@sentinels, user => 'default',
                       prefix => 'spw-', file => $sfile, overlap => 1);
    under_rotation('sentinel', $n, 10, servers => [$m], user => 'edge',
                   prefix => 'spw-', file => $file, overlap => 1);
    stop_rotator($spid);
    $s->stop;
    $m->stop;
}

# a cluster, 10 s: every node's ACL user rotates

{
    my $c = GmsTest::Cluster->start(masters => 3, replicas => 0,
                                    password => 'admin-pw');
    $c->cmd(HSET => "{gms}:token:$ID", actor => 'urn:li:corpuser:alice');
    my @nodes = $c->nodes;
    edge_user(\@nodes, 'edge', 'cpw-0');
    my $file = "$dir/cluster-password";
    write_atomically($file, "cpw-0\n");

    my $n = edge('gms_token_redis_cluster ' . join(' ', $c->addresses)
                 . " user=edge password_file=$file max_age=2s;");
    under_rotation('cluster', $n, 10, servers => \@nodes, user => 'edge',
                   prefix => 'cpw-', file => $file, overlap => 1);
    $c->stop;
}

# gms-token follow: each connection it opens reads --password-file; a
# provider that drops its connection after a rotation (the old password
# gone at once) is followed by a connection with the new one

SKIP: {
    skip 'gms-token not built', 4 unless -x GmsTest::Tool::bin();

    my $r = GmsTest::Redis->start(password => 'admin-pw');
    edge_user([$r], 'tool', 'tpw-0');
    my $file = "$dir/tool-password";
    write_atomically($file, "tpw-0\n");

    my $gms = GmsTest::GraphQL->start(token => $GMS_SECRET);
    my $token_file = GmsTest::Tool::gms_account($GMS_SECRET, $dir);
    my $cached = sub {
        $r->cmd(EXISTS => GmsTest::Tool::key_of($_[0]));
    };

    $gms->tokens([ GmsTest::Tool::listed('before') ]);
    my $f = GmsTest::Tool::start_follow(
        GmsTest::Tool::gms_args($gms->url, $token_file),
        '--interval', '1s', '--privileges', 'off',
        '--redis', $r->address, '--user', 'tool', '--password-file', $file);

    ok(GmsTest::wait_until(sub { $cached->('before') }, 15),
       'follow: a token cached, as the ACL user, password from the file');

    $r->cmd(ACL => 'SETUSER', 'tool', '>tpw-1', '<tpw-0');
    write_atomically($file, "tpw-1\n");
    $r->cmd(CLIENT => 'KILL', 'USER', 'tool');
    $gms->tokens([ map { GmsTest::Tool::listed($_) } 'before', 'after' ]);

    ok(GmsTest::wait_until(sub { $cached->('after') }, 20),
       'follow: after the rotation and a dropped connection, the next '
       . 'token cached: the new password read from the file');
    ok(!GmsTest::process_gone($f->{pid}, 1), 'follow still running');
    my $out = GmsTest::slurp($f->{out}) . GmsTest::slurp($f->{err});
    unlike($out, qr/tpw-\d/, 'follow: no password in its output');
    GmsTest::Tool::stop_follow($f, 'TERM');
    $r->stop;
}

done_testing();
