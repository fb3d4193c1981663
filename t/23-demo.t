#!/usr/bin/perl

# make demo (tools/demo.sh) as a new user meets it: it comes up and its
# printed token works; the printed revocation in the stand-in GMS reaches
# the edge through gms-token follow, which logs its cycles; and with a
# port already taken it stops at once, saying which, before starting
# anything (it used to report "demo is up" with curl lines for the other
# instance and write into its Redis).

use strict;
use warnings;

use Cwd qw(abs_path);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Test::More;

use GmsTest;
use GmsTest::HTTP;

GmsTest::need_module();
GmsTest::need_redis();

my $MODULE = abs_path(GmsTest::module_path());
my $TOOL = $ENV{GMS_TOKEN_BIN} // 'build/gms-token';
plan skip_all => "gms-token not built ($TOOL)" unless -x $TOOL;

my $dir = GmsTest::scratch_dir();

# the demo in the background; its output in files
sub demo {
    my (%ports) = @_;
    my $tag = join '-', values %ports;
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        $ENV{"DEMO_$_"} = $ports{$_} for keys %ports;
        # make test-asan: the demo's nginx preloads libasan as the tests' do
        $ENV{DEMO_NGINX_WRAPPER} = $ENV{GMS_NGINX_WRAPPER}
            if $ENV{GMS_NGINX_WRAPPER};
        setpgrp(0, 0);
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$dir/demo-$tag.out";
        open STDERR, '>', "$dir/demo-$tag.err";
        exec 'sh', 'tools/demo.sh', $MODULE or POSIX::_exit(127);
    }
    return ($pid, "$dir/demo-$tag.out", "$dir/demo-$tag.err");
}

sub slurp {
    open my $fh, '<', $_[0] or return '';
    local $/;
    return scalar <$fh>;
}

my %ports = map { $_ => GmsTest::free_port() }
            qw(PORT REDIS_PORT GMS_PORT SEARCH_PORT GRAPHQL_PORT);

subtest 'a port in use: refused at once' => sub {
    my $taken = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1',
                                      LocalPort => 0, ReuseAddr => 1)
        or die "listen: $!\n";
    my ($pid, $out, $err) = demo(%ports, REDIS_PORT => $taken->sockport);

    my $exited = GmsTest::wait_until(sub { waitpid($pid, WNOHANG) == $pid },
                                     15);
    ok($exited, 'the demo exits');
    isnt($? >> 8, 0, 'with a failure');
    like(slurp($err), qr/port ${\ $taken->sockport } is in use/,
         'naming the port');
    unlike(slurp($out), qr/demo is up/, 'never saying it is up');
    kill 'TERM', -$pid unless $exited;
};

subtest 'the demo comes up and its token works' => sub {
    my ($pid, $out, $err) = demo(%ports);

    my $up = GmsTest::wait_until(sub { slurp($out) =~ /demo is up/ }, 60);
    ok($up, 'demo is up') or diag(slurp($err));

    SKIP: {
        skip 'not up', 12 unless $up;

        my $printed = slurp($out);
        my ($token, $session) =
            $printed =~ /Bearer (ey[\w-]+\.[\w-]+\.[\w-]+)'/g;
        ok($token && $session, 'a personal and a session token printed');
        my ($basic) =
            $printed =~ /Authorization: (Basic __datahub_system:\w+)'/;
        ok($basic, 'the system client printed');

        my $res = GmsTest::HTTP::request($ports{PORT},
            GET => '/entities/urn%3Ali%3Acorpuser%3Adatahub',
            { Authorization => "Bearer $token" });
        is($res->{status}, 200, 'the printed token: 200');

        $res = GmsTest::HTTP::request($ports{PORT},
            POST => '/operations?action=getEsTaskStatus',
            { Authorization => "Bearer $token",
              'Content-Type' => 'application/json' },
            '{"task":"oTUltX4IQMOUUVeiohTt8A:124"}');
        like($res->{body}, qr/\\"taskId\\":\\"oTUltX4IQMOUUVeiohTt8A:124\\"/,
             'getEsTaskStatus answered');

        $res = GmsTest::HTTP::request($ports{PORT},
            GET => '/entities/urn%3Ali%3Acorpuser%3Adatahub',
            { Authorization => "Bearer $session" });
        is($res->{status}, 200, 'the printed session token: 200');

        $res = GmsTest::HTTP::request($ports{PORT},
            GET => '/entities/urn%3Ali%3Acorpuser%3Aalice',
            { Authorization => $basic,
              'X-DataHub-Actor' => 'urn:li:corpuser:alice' });
        like($res->{body}, qr/"actor":"urn:li:corpuser:alice"/,
             'the printed system client, acting for alice');

        $res = GmsTest::HTTP::request($ports{PORT},
            GET => '/entities/urn%3Ali%3Acorpuser%3Adatahub',
            { Authorization => 'Bearer ' . ($token =~ s/[^.]+$/forged/r) });
        is($res->{status}, 401, 'a forged token: 401');

        # the printed revocation, as printed: a POST to the stand-in GMS
        my ($auth, $query, $port) = $printed =~
            m{^\s*curl\s-s\s-H\s'Authorization:\s(Bearer\s[^']+)'
              \s+-H\s'Content-Type:\sapplication/json'
              \s+-d\s'(\{"query":"mutation[^']+)'
              \s+'http://127\.0\.0\.1:(\d+)/api/graphql'$}mx;
        ok($query, 'a revocation in the stand-in GMS printed')
            or diag($printed);
        is($port, $ports{GRAPHQL_PORT}, 'on DEMO_GRAPHQL_PORT');
        $res = GmsTest::HTTP::request($port // $ports{GRAPHQL_PORT},
            POST => '/api/graphql',
            { Authorization => $auth // '',
              'Content-Type' => 'application/json' },
            $query // '');
        is($res->{body}, '{"data":{"revokeAccessToken":true},'
                         . '"extensions":{}}', 'the stand-in revokes it');

        ok(GmsTest::wait_until(sub {
               GmsTest::HTTP::request($ports{PORT},
                   GET => '/entities/urn%3Ali%3Acorpuser%3Adatahub',
                   { Authorization => "Bearer $token" })->{status} == 401
           }, 10), 'the edge refuses the revoked token: 401')
            or diag(slurp($err));

        my ($log) = $printed =~ m{^\s*# .*?(/\S+/follow\.log)$}m;
        # the cycle publishes before it writes its line: wait for the line
        my $cycles = qr/^gms-token\ follow:\ \S+\ ok\ tokens=1\ .*\n
                        (?:.*\n)*
                        gms-token\ follow:\ \S+\ ok\ tokens=0\ .*
                        \bpruned=1\b/mx;
        GmsTest::wait_until(sub { slurp($log // '') =~ $cycles }, 5);
        like(slurp($log // ''), $cycles,
             'follow.log: the cycles, the last one pruning it');
    }

    kill 'INT', $pid;
    ok(GmsTest::wait_until(sub { waitpid($pid, WNOHANG) == $pid }, 15),
       'Ctrl-C stops it');
    like(slurp($out), qr/demo stopped/, 'and it cleans up');
    kill 'KILL', -$pid;
};

done_testing();
