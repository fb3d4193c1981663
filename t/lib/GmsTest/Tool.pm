package GmsTest::Tool;

# gms-token, the tool that fills the cache, as the t/4x tests run it: the
# binary ($ENV{GMS_TOKEN_BIN}, or build/gms-token), runs of it with their
# exit code and output, 'follow' in the background, and the tokens DataHub
# lists:
#
#   use GmsTest::Tool qw(run_tool datahub_id listed);
#   GmsTest::Tool::need_tool();     # skip_all unless built
#
#   my $res = run_tool("secret-token\n", 'id');   # {rc, out, err}
#   my $f = start_follow('--gms', $url, ...);     # {pid, out, err}
#   ok(GmsTest::wait_until(sub { ok_lines($f) }), 'a cycle');
#   $gms->tokens([ listed('a-token', actor => $bob) ]);
#
#   refused_run(run_tool('', 'frobnicate'), 2, 'unknown command',
#               'an unknown command', redis => $redis, before => $dump);
#
#   my $token_file = gms_account($SECRET, $dir);  # the account's token
#   run_tool(undef, 'sync', gms_args($gms->url, $token_file), @redis);
#
# rc is the exit code, or 128 + N for a signal.  Every run's stdin, stdout
# and stderr are files of a temporary directory of this module's; runs()
# lists the finished runs, for tests that look through all of them (a
# secret printed by none).  now_ms() is the test's "now", read once, so
# that listed()'s times and the test's own agree.

use strict;
use warnings;

use Cwd qw(abs_path);
use Digest::SHA qw(sha256);
use Exporter qw(import);
use File::Basename qw(dirname);
use MIME::Base64 qw(encode_base64);
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

use GmsTest ();
use Test::More ();

our @EXPORT_OK = qw(run_tool start_tool finish_tool start_follow stop_follow
                    ok_lines refused_run
                    out_lines err_lines gms_account gms_args datahub_id
                    key_of listed now_ms hash_of normalized);

my $REPO = abs_path(dirname(__FILE__) . '/../../..');

sub bin {
    return $ENV{GMS_TOKEN_BIN} // "$REPO/build/gms-token";
}

# Skips the whole test unless the tool is built; a GMS_REDIS_PASSWORD of
# the caller's shell would reach every run, so it goes.
sub need_tool {
    my $bin = bin();
    GmsTest::skip_all("gms-token not built: $bin (run 'make tool')")
        unless -x $bin;
    delete $ENV{GMS_REDIS_PASSWORD};
}


my $NO_EVENTS_API = sub {
    /^gms-token follow: \S+ changes: polling every \d+s: HTTP 404: /;
};

my $dir;
my $started = 0;
my @runs;

# The tool in the background with $stdin on its standard input (undef:
# /dev/null); {pid, args, out, err}, the last two file names.
sub start_tool {
    my ($stdin, @args) = @_;

    $dir //= GmsTest::tempdir();
    my $base = "$dir/run" . ++$started;
    GmsTest::write_file("$base.in", $stdin) if defined $stdin;

    my $bin = bin();
    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDIN, '<', defined $stdin ? "$base.in" : '/dev/null'
            or POSIX::_exit(127);
        open STDOUT, '>', "$base.out" or POSIX::_exit(127);
        open STDERR, '>', "$base.err" or POSIX::_exit(127);
        exec { $bin } $bin, @args or POSIX::_exit(127);
    }

    return { pid => $pid, args => "@args", out => "$base.out",
             err => "$base.err" };
}

# Waits for a run's end, calling $watch with its pid every 50 ms meanwhile
# if given: {rc, out, err}.
sub finish_tool {
    my ($run, $watch) = @_;

    if ($watch) {
        while (waitpid($run->{pid}, WNOHANG) == 0) {
            $watch->($run->{pid});
            sleep 0.05;
        }
    } else {
        waitpid $run->{pid}, 0;
    }

    my $res = { rc  => $? & 127 ? 128 + ($? & 127) : $? >> 8,
                out => GmsTest::slurp($run->{out}),
                err => GmsTest::slurp($run->{err}) };
    push @runs, [ $run->{args}, $res ];
    return $res;
}

# A run to its end, $stdin (undef: nothing) on its standard input.
sub run_tool {
    my ($stdin, @args) = @_;
    return finish_tool(start_tool($stdin // '', @args));
}

# Every finished run: ["args joined by spaces", {rc, out, err}], in order.
# A run refused, a subtest named $title: exit code $rc (undef: any from 1
# to 127, not a crash), nothing on stdout, one line on stderr,
# "gms-token: ..." with $re in it; with redis and before, that Redis as
# it was (its dump_all before the run); also: a sub given the run, for
# the test's own checks.
sub refused_run {
    my ($res, $rc, $re, $title, %opt) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;

    Test::More::subtest($title => sub {
        if (defined $rc) {
            Test::More::is($res->{rc}, $rc, "exit code $rc");
        } else {
            Test::More::ok($res->{rc} > 0 && $res->{rc} < 128,
                           "exit code non-zero ($res->{rc})");
        }
        Test::More::like($res->{err}, qr/\Agms-token: [^\n]*$re[^\n]*\n\z/,
                         'one line on stderr naming the fault');
        Test::More::is($res->{out}, '', 'nothing on stdout');
        $opt{also}->($res) if $opt{also};
        $opt{redis}->unchanged($opt{before}, 'Redis unchanged')
            if $opt{redis};
    });
}

sub runs {
    return @runs;
}


# A follower in the background: {pid, out, err} (the files).
sub start_follow {
    my (@args) = @_;
    my $run = start_tool(undef, 'follow', @args);
    return { pid => $run->{pid}, out => $run->{out}, err => $run->{err} };
}

# Sends the signal to a follower; its exit status, or undef if it is still
# running after $within seconds (a hang guard, then it is killed).
sub stop_follow {
    my ($f, $signal, $within) = @_;
    kill $signal, $f->{pid};
    if (GmsTest::wait_until(sub { waitpid($f->{pid}, WNOHANG) != 0 },
                            $within // 5))
    {
        return $? & 127 ? 128 + ($? & 127) : $? >> 8;
    }
    kill 'KILL', $f->{pid};
    waitpid $f->{pid}, 0;
    return undef;
}

sub out_lines { return split /\n/, GmsTest::slurp($_[0]{out}) }

# The lines on stderr but the one a follower (--changes auto) writes once
# on a GMS without the Events API, the stand-in's default (GmsTest::GraphQL
# events_api): the polling tests stand for a GMS before 1.3.
sub err_lines {
    return grep { !$NO_EVENTS_API->() } split /\n/, GmsTest::slurp($_[0]{err});
}
sub ok_lines  { return grep { / ok tokens=/ } out_lines($_[0]) }


# The GMS account gms-token asks GMS as: its token $secret (a JWT, as GMS
# mints them) in the file gms.token of $dir (a directory of its own if
# none), with the newline a mounted secret ends in.  Returns the file.
sub gms_account {
    my ($secret, $dir) = @_;
    my $file = ($dir // GmsTest::tempdir()) . '/gms.token';
    GmsTest::write_file($file, "$secret\n");
    return $file;
}

# The options that have gms-token ask the GMS at $url as that account.
sub gms_args {
    my ($url, $token_file) = @_;
    return ('--gms', $url, '--gms-token-file', $token_file);
}


# DataHub's StatefulTokenService.hash(), line for line: the token's bytes,
# then the salt's, SHA-256, java.util.Base64's standard encoder (padded).
sub datahub_id {
    my ($token, $salt) = @_;
    return encode_base64(sha256($token . ($salt // '')), '');
}

# The key of the token named $name (its id without a salt).
sub key_of { return 'gms:token:' . datahub_id($_[0]) }

my $now;

sub now_ms {
    return $now //= int(time * 1000);
}

# A token as listAccessTokens lists it, named $name, its id datahub_id()'s
# of the name.  Options: actor (alice), owner (the actor), created (a day
# ago), expires (in 30 days; undef: never).
sub listed {
    my ($name, %o) = @_;
    my $id = datahub_id($name);
    my $actor = $o{actor} // 'urn:li:corpuser:alice';
    return { urn => "urn:li:dataHubAccessToken:$id", id => $id,
             actorUrn => $actor, ownerUrn => $o{owner} // $actor,
             name => $name, createdAt => $o{created} // now_ms() - 86_400_000,
             expiresAt => exists $o{expires} ? $o{expires}
                                             : now_ms() + 30 * 86_400_000 };
}


# A hash of a GmsTest::Redis as a Perl hash.
sub hash_of {
    my ($redis, $key) = @_;
    return { @{ $redis->cmd(HGETALL => $key) } };
}

# A GraphQL document with every run of white space one space.
sub normalized { (my $q = $_[0]) =~ s/\s+/ /g; return $q }

1;
