package GmsTest::Nginx;

# nginx in a temporary directory, on a free port, with the module loaded:
#
#   my $n = GmsTest::Nginx->new;
#   $n->start(<<'EOF', vars => { GMS => $stub->port });
#   server {
#       listen 127.0.0.1:%%PORT%%;
#       location /gms/ { proxy_pass http://127.0.0.1:%%GMS%%; }
#   }
#   EOF
#   is($n->http(GET => '/x')->{status}, 200);
#   $n->stop;
#   is_deeply([$n->bad_log_lines], []);
#
# The text given to start() goes inside the http block; %%PORT%%,
# %%TESTDIR%% and the names in vars are substituted.  Options given to new()
# are defaults for start().

use strict;
use warnings;

use GmsTest ();
use GmsTest::HTTP;
use IO::Socket::INET;

# "runtime error:" is UBSan's report (make test-asan): in a worker it
# exits with code 1, a notice, since UBSan reads UBSAN_OPTIONS (and so
# abort_on_error) only at its first report, after nginx's setproctitle
# has overwritten the environment
my $BAD_LOG_LINE = qr/\[(?:alert|emerg|crit)\]|exited on signal
                     |open\ socket\ .*\ left|AddressSanitizer
                     |:\d+:\d+:\ runtime\ error:/x;


sub new {
    my ($class, %opt) = @_;

    my $self = bless {
        owner    => $$,
        dir      => GmsTest::tempdir(),
        port     => GmsTest::free_port(),
        defaults => \%opt,
    }, $class;

    GmsTest::track($self);

    return $self;
}

sub port {
    return $_[0]{port};
}

sub dir {
    return $_[0]{dir};
}

# Options: workers (1), master (1; 0 runs a single foreground process, as
# valgrind needs), log_level (info), no_module, vars, expect_fail (return
# the startup errors instead of dying; undef if nginx started after all).
sub start {
    my ($self, $http_conf, %opt) = @_;

    %opt = (%{ $self->{defaults} }, %opt);
    $self->{opt} = \%opt;
    $self->_write_conf($http_conf);
    unlink $self->_pid_file;

    my $output = "$self->{dir}/nginx.stderr";
    my $failure;

    if ($self->_master) {
        # the launcher exits once nginx has daemonized (or failed)
        my $rc = GmsTest::run([$self->_cmd], $output);
        $failure = "exit code $rc" if $rc;
    } else {
        $self->{child} = GmsTest::spawn([$self->_cmd], $output);
    }

    $failure //= $self->_wait_ready;

    if ($failure) {
        my $text = $self->_startup_text;
        $self->stop;
        return $text if $opt{expect_fail};
        die "nginx did not start ($failure):\n$text";
    }

    return $opt{expect_fail} ? undef : $self;
}

sub master_pid {
    my ($self) = @_;
    my ($pid) = GmsTest::slurp($self->_pid_file) =~ /^(\d+)$/m;
    return $pid;
}

sub worker_pids {
    my ($self) = @_;

    my $master = $self->master_pid or return;
    my @pids;

    for my $stat (glob '/proc/[0-9]*/stat') {
        my ($pid) = $stat =~ m{^/proc/(\d+)/};
        my ($state, $ppid) = GmsTest::slurp($stat) =~ /.*\) (\S) (\d+)/s
            or next;
        next unless $ppid == $master && $state ne 'Z';

        # not the cache manager/loader, nor old workers after a reload
        push @pids, $pid if GmsTest::slurp("/proc/$pid/cmdline")
                            =~ /^nginx: worker process(?! is shutting down)/;
    }

    @pids = sort { $a <=> $b } @pids;
    return @pids;
}

# Reloads the configuration, rewritten first if $http_conf is given, and
# waits until a full set of new workers runs it.
sub reload {
    my ($self, $http_conf) = @_;

    die "reload needs master_process on\n" unless $self->_master;

    $self->_write_conf($http_conf) if defined $http_conf;

    my %old = map { $_ => 1 } $self->worker_pids;
    my $output = "$self->{dir}/reload.out";

    my $rc = GmsTest::run([$self->_cmd, '-s', 'reload'], $output);
    die "nginx -s reload failed (exit $rc):\n" . GmsTest::slurp($output)
        if $rc;

    my $workers = $self->{opt}{workers} // 1;
    GmsTest::wait_until(sub {
        my @now = $self->worker_pids;
        return @now == $workers && !grep { $old{$_} } @now;
    }, 5) or die "nginx reload: no new workers within 5 s:\n" . $self->error_log;
}

sub stop {
    my ($self) = @_;

    my $is_child = defined $self->{child};
    my $pid = $self->{child} // $self->master_pid // return;
    my @workers = $self->worker_pids;

    kill 'QUIT', $pid;

    unless (GmsTest::wait_gone($pid, $is_child, 10)) {
        kill 'KILL', $pid, @workers;
        GmsTest::wait_gone($pid, $is_child, 5);
    }

    delete $self->{child};
    # left behind after a KILL; its pid may be reused by then
    unlink $self->_pid_file;
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}

sub error_log {
    my ($self) = @_;
    return GmsTest::slurp("$self->{dir}/error.log");
}

# Call after stop(): "open socket ... left" is only logged at exit.
sub bad_log_lines {
    my ($self) = @_;
    return grep { /$BAD_LOG_LINE/ } split /\n/, $self->error_log;
}

# http($method, $target, $headers, $body, timeout => 10): see GmsTest::HTTP
sub http {
    my $self = shift;
    return GmsTest::HTTP::request($self->{port}, @_);
}

sub raw {
    my $self = shift;
    return GmsTest::HTTP::raw($self->{port}, @_);
}

sub parallel {
    my $self = shift;
    return GmsTest::HTTP::parallel($self->{port}, @_);
}


sub _master {
    my ($self) = @_;
    return $self->{opt}{master} // 1;
}

sub _pid_file {
    return "$_[0]{dir}/nginx.pid";
}

sub _cmd {
    my ($self) = @_;
    my $dir = $self->{dir};

    # GMS_NGINX_WRAPPER runs nginx under a tool, e.g. 'env LD_PRELOAD=...'
    # for a module built with AddressSanitizer (make test-asan)
    my @wrapper = split ' ', ($ENV{GMS_NGINX_WRAPPER} // '');

    # -e: errors before error_log is parsed go to our log, not the default
    return (@wrapper, GmsTest::nginx_bin(), '-p', "$dir/",
            '-c', "$dir/nginx.conf", '-e', "$dir/error.log");
}

sub _write_conf {
    my ($self, $http_conf) = @_;

    my %opt = %{ $self->{opt} };
    my $dir = $self->{dir};

    my $http = GmsTest::substitute($http_conf,
        PORT    => $self->{port},
        TESTDIR => $dir,
        %{ $opt{vars} // {} },
    );

    my $conf = '';
    $conf .= 'load_module ' . GmsTest::module_path() . ";\n"
        unless $opt{no_module};
    $conf .= "user root;\n" if $> == 0;
    $conf .= 'worker_processes ' . ($opt{workers} // 1) . ";\n";
    $conf .= $self->_master ? "master_process on;\ndaemon on;\n"
                            : "master_process off;\ndaemon off;\n";
    $conf .= <<"EOF";
pid $dir/nginx.pid;
error_log $dir/error.log @{[ $opt{log_level} // 'info' ]};

events {
    worker_connections 1024;
}

http {
    access_log $dir/access.log;
    client_body_temp_path $dir/client_body_temp;
    proxy_temp_path $dir/proxy_temp;
    fastcgi_temp_path $dir/fastcgi_temp;
    uwsgi_temp_path $dir/uwsgi_temp;
    scgi_temp_path $dir/scgi_temp;

$http
}
EOF

    GmsTest::write_file("$dir/nginx.conf", $conf);
}

# Waits for the pid file, for the port to accept connections and for all
# workers (so that worker_pids() is complete); returns what went wrong, if
# anything.
sub _wait_ready {
    my ($self) = @_;

    my $workers = $self->_master ? $self->{opt}{workers} // 1 : 0;
    my $exited;

    my $ready = GmsTest::wait_until(sub {
        if ($self->{child} && GmsTest::process_gone($self->{child}, 1)) {
            delete $self->{child};
            return $exited = 1;
        }
        my @pids = $self->worker_pids;
        return $self->master_pid
               && @pids == $workers
               && IO::Socket::INET->new(
                      PeerAddr => '127.0.0.1',
                      PeerPort => $self->{port},
                      Proto    => 'tcp',
                  );
    }, 5);

    return 'nginx exited' if $exited;
    return $ready ? undef : 'no pid file, port or workers after 5 s';
}

sub _startup_text {
    my ($self) = @_;
    return GmsTest::slurp("$self->{dir}/nginx.stderr") . $self->error_log;
}

1;
