package GmsTest;

# Test harness for the gms nginx module, in the spirit of nginx-tests: each
# test gets temporary directories and free ports, starts the processes it
# needs (GmsTest::Nginx, GmsTest::Redis, GmsTest::Stub) and checks the error
# log itself.  Every process started here is stopped when its object goes
# away or, at the latest, when the test process ends.
#
# Strings handed to and returned by the harness are bytes.  Set
# TEST_GMS_LEAVE=1 to keep the temporary directories for a post-mortem.

use strict;
use warnings;

use Cwd qw(abs_path);
use Fcntl qw(O_CREAT O_RDONLY :flock);
use File::Basename qw(dirname);
use File::Spec ();
use File::Temp ();
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(WNOHANG);
use Scalar::Util qw(weaken);
use Time::HiRes qw(sleep time);

my $REPO = abs_path(dirname(__FILE__) . '/../..');


# Ports, locked across test processes as nginx-tests locks them, so that
# prove -j runs files side by side: a lock file per port in a directory
# every test shares (flock, held until this process and the stubs it
# forked end; the servers it execs do not inherit it), taken only once a
# probe could listen there.  Ports come from below the kernel's ephemeral
# range: a server told a port binds it a little later, and no outgoing
# connection (nginx to Redis, a test to nginx) is given one from there
# meanwhile.  Stubs that listen at once take an ephemeral port instead.
my $PORT_LOCKS = File::Spec->tmpdir . '/gms-test-ports';
my $PORTS_LOW = 10000;
my %ports_given;

sub _ports_high {
    my $range = slurp('/proc/sys/net/ipv4/ip_local_port_range');
    my ($low) = $range =~ /^\s*(\d+)/;
    return ($low && $low > $PORTS_LOW + 1000 ? $low : 32768) - 1;
}

sub _port_locked {
    my ($port) = @_;

    # for every user's runs: the directory world-writable and sticky, a
    # lock file opened read-only (flock needs no write access)
    mkdir $PORT_LOCKS and chmod 01777, $PORT_LOCKS;
    my $path = "$PORT_LOCKS/$port";
    sysopen my $fh, $path, O_RDONLY | O_CREAT, 0666 or return undef;
    chmod 0666, $path if -O $path;
    return flock($fh, LOCK_EX | LOCK_NB) ? $fh : undef;
}

sub free_port {
    my $high = _ports_high();

    for (1 .. 1000) {
        my $port = $PORTS_LOW + int rand($high - $PORTS_LOW + 1);
        next if $ports_given{$port};

        my $lock = _port_locked($port) or next;
        my $probe = IO::Socket::INET->new(
            LocalAddr => '127.0.0.1',
            LocalPort => $port,
            Proto     => 'tcp',
            ReuseAddr => 1,
            Listen    => 1,
        ) or next;
        close $probe;

        $ports_given{$port} = $lock;
        return $port;
    }
    die "free_port: no free port found\n";
}


sub module_path {
    return $ENV{GMS_MODULE} // "$REPO/build/nginx/objs/ngx_http_gms_module.so";
}

sub nginx_bin {
    return $ENV{NGINX_BIN} // '/usr/sbin/nginx';
}

# The version of the nginx under test, "1.22.1" ('' if it cannot tell).
my $nginx_version;

sub nginx_version {
    return $nginx_version //= do {
        my $out = scratch_dir() . '/nginx-v.out';
        unlink $out;
        run([nginx_bin(), '-v'], $out);
        slurp($out) =~ m{nginx/(\d+\.\d+\.\d+)} ? $1 : '';
    };
}

# Whether the nginx under test is release $release ("1.23.0") or later,
# for the behaviours that changed between releases.
sub nginx_at_least {
    my ($release) = @_;

    my @have = split /\./, nginx_version();
    my @want = split /\./, $release;

    for my $i (0 .. $#want) {
        my $cmp = ($have[$i] // 0) <=> $want[$i];
        return $cmp > 0 if $cmp;
    }

    return 1;
}

sub need_nginx {
    my $bin = nginx_bin();
    skip_all("nginx not found: $bin") unless -x $bin;
}

sub need_module {
    need_nginx();
    my $path = module_path();
    skip_all("module not built: $path") unless -f $path;
}

# The Redis server, Sentinel and client the tests run: redis-server,
# redis-sentinel and redis-cli from PATH, or what REDIS_SERVER,
# REDIS_SENTINEL and REDIS_CLI name (Valkey's are valkey-server,
# valkey-sentinel and valkey-cli: make test-matrix sets them).
my %REDIS_BIN = (
    server   => [ REDIS_SERVER   => 'redis-server' ],
    sentinel => [ REDIS_SENTINEL => 'redis-sentinel' ],
    cli      => [ REDIS_CLI      => 'redis-cli' ],
);

sub redis_bin {
    my ($which) = @_;
    my ($var, $default) = @{ $REDIS_BIN{$which}
                             // die "redis_bin: no '$which'\n" };
    return $ENV{$var} || $default;
}

sub need_redis {
    my $bin = redis_bin('server');
    skip_all("$bin not found") unless in_path($bin);
}

sub skip_all {
    my ($reason) = @_;
    require Test::More;
    Test::More::plan(skip_all => $reason);
}

sub in_path {
    my ($name) = @_;
    return -x $name if $name =~ m{/};
    return scalar grep { -x "$_/$name" } split /:/, $ENV{PATH} // '';
}


my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;

sub json_encode {
    return $JSON->encode($_[0]);
}

sub json_decode {
    return $JSON->decode($_[0]);
}


# Deliberately not Digest::SHA: the module's id formula is checked against an
# implementation that shares no code with Perl or with the module's own use
# of libcrypto's API.
sub sha256_b64 {
    my ($bytes) = @_;

    utf8::downgrade($bytes, 1) or die "sha256_b64: wide characters\n";

    # a file of this process's own: stand-ins forked after the test made
    # its scratch directory share it, and hash at the same time as it
    my $in = scratch_dir() . "/sha256.$$.in";
    write_file($in, $bytes);

    open my $fh, '-|', 'bash', '-o', 'pipefail', '-c',
        'openssl dgst -sha256 -binary "$1" | base64 -w0', 'sha256_b64', $in
        or die "sha256_b64: cannot run openssl: $!\n";
    my $b64 = do { local $/; <$fh> };
    close $fh or die "sha256_b64: openssl | base64 failed ($?)\n";

    return $b64;
}


sub wait_until {
    my ($cond, $timeout) = @_;

    my $deadline = time + ($timeout // 5);

    while (1) {
        my $value = $cond->();
        return $value if $value;
        return 0 if time >= $deadline;
        sleep 0.05;
    }
}


# Runs "nginx -t" on a complete configuration; %%TESTDIR%% and %%MODULE%%
# are replaced by a fresh temporary directory and module_path().
#
# "nginx -t" opens the pid file and the logs and creates the temporary
# directories: what a configuration does not name is the build's default,
# which need not exist (nginx.org's source built with a plain configure
# has logs/nginx.pid, logs/error.log, logs/access.log and
# client_body_temp under /usr/local/nginx).  They go to the test's
# directory: the prefix (-p) with a logs/ for the relative defaults, the
# error log (-e) and, unless the configuration has its own (a shipped
# one, tested as shipped), the pid file (-g) for the absolute ones.
sub nginx_t {
    my ($conf_text) = @_;

    my $dir = tempdir();
    my $conf = substitute($conf_text, TESTDIR => $dir,
                          MODULE => module_path());
    write_file("$dir/nginx.conf", $conf);
    mkdir "$dir/logs" or die "$dir/logs: $!\n";

    my @pid = $conf =~ /^\s*pid\s/m ? () : ('-g', "pid $dir/nginx.pid;");
    my @wrapper = split ' ', ($ENV{GMS_NGINX_WRAPPER} // '');
    my $rc = run([@wrapper, nginx_bin(), '-t', '-p', "$dir/",
                  '-c', "$dir/nginx.conf", '-e', "$dir/error.log", @pid],
                 "$dir/nginx-t.out");

    return ($rc, slurp("$dir/nginx-t.out"));
}


# Files, directories and processes, for the tests and the GmsTest::*
# classes alike.

# A fresh temporary directory, removed at the end unless TEST_GMS_LEAVE.
sub tempdir {
    return File::Temp::tempdir('gms-test-XXXXXXXX', TMPDIR => 1,
                               CLEANUP => !$ENV{TEST_GMS_LEAVE});
}

my $scratch;

# One temporary directory for the whole test process, made on first use.
sub scratch_dir {
    return $scratch //= tempdir();
}

# Writes $bytes to $path, replacing what was there.
sub write_file {
    my ($path, $bytes) = @_;
    open my $fh, '>:raw', $path or die "cannot write $path: $!\n";
    print $fh $bytes;
    close $fh or die "cannot write $path: $!\n";
}

# The bytes of $path ('' if it cannot be read).
sub slurp {
    my ($path) = @_;
    open my $fh, '<:raw', $path or return '';
    local $/;
    return scalar(<$fh>) // '';
}

# A recorded search-cluster or GMS answer from t/fixtures/search-cluster/,
# byte for byte; a missing one ends the test.
sub fixture {
    my ($name) = @_;
    my $path = dirname(abs_path(__FILE__))
             . "/../fixtures/search-cluster/$name";
    open my $fh, '<:raw', $path or die "$path: $!\n";
    local $/;
    return scalar <$fh>;
}

# Replaces %%NAME%% placeholders; an unknown name is an error rather than
# a silently broken configuration.
sub substitute {
    my ($text, %vars) = @_;
    $text =~ s{%%(\w+)%%}{
        exists $vars{$1} ? $vars{$1} : die "no value for %%$1%% in config\n"
    }ge;
    return $text;
}

# Starts a command with its output going to a file, away from the TAP
# stream on the test's stdout.
sub spawn {
    my ($cmd, $output) = @_;

    my $pid = fork // die "fork: $!\n";
    return $pid if $pid;

    open STDIN, '<', '/dev/null';
    open STDOUT, '>>', $output or POSIX::_exit(127);
    open STDERR, '>&', \*STDOUT;
    exec { $cmd->[0] } @$cmd or print STDERR "cannot exec $cmd->[0]: $!\n";
    POSIX::_exit(127);
}

# Runs a command to completion; returns its exit code (128 + signal if it
# was killed).
sub run {
    my ($cmd, $output) = @_;
    my $pid = spawn($cmd, $output);
    waitpid $pid, 0;
    return $? & 127 ? 128 + ($? & 127) : $? >> 8;
}

# Whether a process has exited.  Our own children are reaped here; others
# (a daemonized nginx master) are watched through /proc, where a zombie
# counts as gone since nobody may reap it in a container.
sub process_gone {
    my ($pid, $is_child) = @_;

    return waitpid($pid, WNOHANG) != 0 if $is_child;

    open my $fh, '<', "/proc/$pid/stat" or return 1;
    my $stat = <$fh> // return 1;
    my ($state) = $stat =~ /.*\) (\S)/s;
    return $state eq 'Z';
}

# Waits up to $timeout seconds for process_gone().
sub wait_gone {
    my ($pid, $is_child, $timeout) = @_;
    return wait_until(sub { process_gone($pid, $is_child) }, $timeout);
}


# Objects owning processes, weakly held so that DESTROY still runs when a
# test drops one; END stops whatever is left.
my @live;

# Registers an object owning processes (one with stop and an owner pid).
sub track {
    my ($obj) = @_;
    push @live, $obj;
    weaken $live[-1];
}

# For DESTROY and END: never lets a failure escape, never clobbers the exit
# status Test::Builder has set, and never acts in a forked child (a stub
# worker) on processes that belong to the test process.
sub stop_quietly {
    my ($obj) = @_;
    local ($?, $!, $@);
    return unless $obj->{owner} == $$;
    eval { $obj->stop; 1 } or warn ref($obj) . " stop: $@";
}

END {
    stop_quietly($_) for grep { defined } @live;
}


use GmsTest::HTTP;
use GmsTest::Redis;
use GmsTest::Stub;
use GmsTest::Nginx;

1;
