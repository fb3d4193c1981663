package GmsTest::Redis;

# A throwaway redis-server on a free port, without persistence, and a
# minimal RESP2 client to seed and inspect it:
#
#   my $r = GmsTest::Redis->start(password => 'secret');
#   $r->cmd(SET => 'token:abc', '{"user":"u1"}');
#
# Options: password, persist (the data survives a kill and start_again),
# bind (the address to listen on and to talk to: '127.0.0.1' by default,
# '::1', '127.0.0.2'), port (the plain port: the same port as another
# server's on another address), tls (a GmsTest::Certs: a TLS port as well, ->tls_port,
# with the CA's server certificate), tls_auth_clients ('no' by default,
# 'yes' or 'optional': client certificates signed by the CA), plain (0: no
# plain port, ->port is 0 and cmd() goes through redis-cli --tls), replicaof
# ([host, port]: a replica, waited for until its link to the master is up),
# unixsocket (1: a unix socket as well, ->unixsocket is its path),
# cluster (a hash: a cluster node, cluster-enabled, its bus on a free port
# of its own; node_timeout in ms, 2000 by default; GmsTest::Cluster makes
# the cluster of them).
#
# GMS_TEST_NOSCRIPT in the environment makes every server one that refuses
# scripts to its clients, the edge and gms-token (and to cmd()): 'acl' (or
# 1), the default user denied @scripting (ACL SETUSER default -@scripting);
# 'renamed', EVAL, EVALSHA, their _RO forms and SCRIPT renamed away
# (rename-command).  t/79-redis-noscript.t runs lookup and follow tests so.
#
# cmd() returns simple and bulk strings as scalars, integers as numbers, nil
# as undef, arrays as arrayrefs (recursively) and error replies as
# GmsTest::Redis::Error objects.

use strict;
use warnings;

use POSIX ();

use GmsTest ();
use Test::More ();
use IO::Select;
use IO::Socket::IP;

my $REPLY_TIMEOUT = 10;


sub start {
    my ($class, %opt) = @_;

    my $plain = $opt{plain} // 1;
    die "GmsTest::Redis: plain => 0 needs tls\n" unless $plain || $opt{tls};

    my $self = bless {
        owner    => $$,
        opt      => \%opt,
        dir      => GmsTest::tempdir(),
        host     => $opt{bind} // '127.0.0.1',
        port     => $plain ? $opt{port} // GmsTest::free_port() : 0,
        tls_port => $opt{tls} ? GmsTest::free_port() : 0,
    }, $class;

    GmsTest::track($self);
    $self->_launch;

    return $self;
}

sub port {
    return $_[0]{port};
}

# A client for a server this object does not run (a Sentinel, a server
# started elsewhere): cmd() only, stop() does nothing.
sub client {
    my ($class, %opt) = @_;
    return bless {
        owner => $$,
        opt   => { password => $opt{password} },
        dir   => GmsTest::tempdir(),
        host  => $opt{host} // '127.0.0.1',
        port  => $opt{port},
    }, $class;
}

sub tls_port {
    return $_[0]{tls_port};
}

sub unixsocket {
    my ($self) = @_;
    return $self->{opt}{unixsocket} ? "$self->{dir}/redis.sock" : undef;
}

sub host {
    return $_[0]{host};
}

# "host:port" as the module's directives take it: [::1]:port for IPv6,
# the TLS port with tls => 1
sub address {
    my ($self, %opt) = @_;
    my $host = $self->{host} =~ /:/ ? "[$self->{host}]" : $self->{host};
    return "$host:" . ($opt{tls} ? $self->{tls_port} : $self->{port});
}

sub pid {
    return $_[0]{pid};
}

sub cmd {
    my ($self, @args) = @_;

    return $self->cli(@args) unless $self->{port};

    my $reused = defined $self->{sock};

    my $reply;
    return $reply if eval { $reply = $self->_roundtrip(\@args); 1 };

    # the server may have closed a kept connection since the last command
    # (restart, QUIT, client timeout): one retry on a fresh connection
    die $@ unless $reused && $@ =~ /^redis: connection lost/;
    return $self->_roundtrip(\@args);
}

# The whole dataset in one string, expiry times included, read by one
# script so that comparing 10,000 keys costs one round trip.
my $DUMP = <<'LUA';
local out, seen, cursor = {}, {}, '0'
repeat
  local r = redis.call('SCAN', cursor, 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    if not seen[k] then
      seen[k] = true
      local t = redis.call('TYPE', k)['ok']
      local v = {}
      if t == 'hash' then
        local h = redis.call('HGETALL', k)
        for i = 1, #h, 2 do v[#v + 1] = h[i] .. '=' .. h[i + 1] end
      elseif t == 'set' then
        v = redis.call('SMEMBERS', k)
      elseif t == 'string' then
        v = {redis.call('GET', k)}
      end
      table.sort(v)
      out[#out + 1] = k .. ' ' .. t .. ' [' .. table.concat(v, ',') .. '] '
                      .. redis.call('PEXPIRETIME', k)
    end
  end
until cursor == '0'
table.sort(out)
return table.concat(out, '\n')
LUA

sub dump_all {
    my ($self) = @_;
    return $self->cmd(EVAL => $DUMP, 0);
}

# A test that the dataset is what dump_all() gave before, naming the
# first key that differs when it is not.
sub unchanged {
    my ($self, $before, $title) = @_;
    # failures point at the test's line, through the test's own wrapper
    local $Test::Builder::Level = $Test::Builder::Level + 2;
    my $after = $self->dump_all;
    return Test::More::pass($title) if $after eq $before;
    my @b = split /\n/, $before;
    my @a = split /\n/, $after;
    my $last = $#a > $#b ? $#a : $#b;
    my ($i) = grep { ($b[$_] // '') ne ($a[$_] // '') } 0 .. $last;
    Test::More::fail($title);
    Test::More::diag("first difference:\n  before: " . ($b[$i] // '(none)')
                     . "\n  after:  " . ($a[$i] // '(none)'));
}

# Runs redis-cli against this server, over TLS (with the client
# certificate) when it has no plain port or when the first argument is
# '--tls'; returns its output without the last newline.  For commands whose
# reply is one line (PING, SET, GET of a plain value, INFO as text).
sub cli {
    my ($self, @args) = @_;

    my $tls = !$self->{port};
    $tls = shift @args if @args && $args[0] eq '--tls';

    my @cmd = (GmsTest::redis_bin('cli'), '-h', $self->{host});
    if ($tls) {
        my $c = $self->{opt}{tls} or die "GmsTest::Redis: no TLS port\n";
        push @cmd, '-p', $self->{tls_port}, '--tls', '--cacert', $c->{ca},
                   '--cert', $c->{client_cert}, '--key', $c->{client_key};
    } else {
        push @cmd, '-p', $self->{port};
    }
    # not on the command line
    local $ENV{REDISCLI_AUTH} = $self->{opt}{password}
        if defined $self->{opt}{password};

    my $out = "$self->{dir}/cli.out";
    unlink $out;
    my $rc = GmsTest::run([@cmd, @args], $out);
    my $text = GmsTest::slurp($out);
    die "redis-cli failed ($rc): $text" if $rc;
    $text =~ s/\n\z//;
    return $text;
}

# SIGKILL: no goodbye to replicas or clients
sub kill {
    my ($self) = @_;

    delete $self->{sock};
    my $pid = delete $self->{pid} or return;

    CORE::kill 'KILL', $pid;
    waitpid $pid, 0;
}

# SIGSTOP / SIGCONT: the server holds its connections but answers nothing
sub pause {
    my ($self) = @_;
    CORE::kill 'STOP', $self->{pid} if $self->{pid};
}

sub resume {
    my ($self) = @_;
    CORE::kill 'CONT', $self->{pid} if $self->{pid};
}

sub stop {
    my ($self) = @_;

    delete $self->{sock};
    my $pid = delete $self->{pid} or return;

    CORE::kill 'CONT', $pid;
    CORE::kill 'TERM', $pid;
    return if GmsTest::wait_gone($pid, 1, 5);
    CORE::kill 'KILL', $pid;
    waitpid $pid, 0;
}

# Blocks the server for $seconds (DEBUG SLEEP) from a child process on a
# connection of its own, so that the test goes on meanwhile; returns the
# child's pid for waitpid.
sub sleep_in_background {
    my ($self, $seconds) = @_;

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        delete $self->{sock};
        eval { $self->cmd(DEBUG => 'SLEEP', $seconds) };
        POSIX::_exit(0);
    }

    return $pid;
}

# Same port and options; the data is gone unless started with persist.
sub start_again {
    my ($self) = @_;
    $self->stop;
    $self->_launch;
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}


sub _launch {
    my ($self) = @_;

    my $dir = $self->{dir};
    my %opt = %{ $self->{opt} };
    my @cmd = (GmsTest::redis_bin('server'), '--port', $self->{port},
               '--bind', $self->{host},
               '--save', '', '--daemonize', 'no',
               # persist => 1: the data survives a kill and start_again
               '--appendonly', $self->{opt}{persist} ? ('yes',
                   '--appendfsync', 'always') : 'no',
               '--dir', $dir, '--logfile', "$dir/redis.log",
               '--enable-debug-command', 'local',
               # t/79 unloads Valkey 9.1's Lua engine module
               '--enable-module-command', 'local',
               # a replica gets its first sync at once, not after 5 s
               '--repl-diskless-sync-delay', 0);
    push @cmd, '--requirepass', $opt{password}, '--masterauth', $opt{password}
        if defined $opt{password};
    push @cmd, '--unixsocket', $self->unixsocket, '--unixsocketperm', 777
        if $opt{unixsocket};

    my $noscript = $ENV{GMS_TEST_NOSCRIPT} // '';
    push @cmd, map { ('--rename-command', $_, '') }
                   qw(EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT)
        if $noscript eq 'renamed';

    if (my $c = $opt{tls}) {
        push @cmd, '--tls-port', $self->{tls_port},
                   '--tls-cert-file', $c->{server_cert},
                   '--tls-key-file', $c->{server_key},
                   '--tls-ca-cert-file', $c->{ca},
                   '--tls-auth-clients', $opt{tls_auth_clients} // 'no';
    }

    # replicas are announced to Sentinels as the tests reach them
    push @cmd, '--replicaof', @{ $opt{replicaof} },
               '--replica-announce-ip', $self->{host}
        if $opt{replicaof};

    if (my $cl = $opt{cluster}) {
        $self->{bus_port} //= GmsTest::free_port();
        push @cmd, '--cluster-enabled', 'yes',
                   '--cluster-config-file', "$dir/nodes.conf",
                   '--cluster-node-timeout', $cl->{node_timeout} // 2000,
                   '--cluster-port', $self->{bus_port},
                   '--cluster-announce-ip', $self->{host};
        # the bus is mutual TLS: a node shows the client certificate
        push @cmd, '--tls-cluster', 'yes', '--tls-replication', 'yes',
                   '--tls-client-cert-file', $opt{tls}{client_cert},
                   '--tls-client-key-file', $opt{tls}{client_key}
            if $opt{tls};
    }

    $self->{pid} = GmsTest::spawn(\@cmd, "$dir/redis.out");

    my $exited;
    my $up = GmsTest::wait_until(sub {
        $exited = GmsTest::process_gone($self->{pid}, 1) and return 1;
        my $pong = eval { $self->cmd('PING') };
        return defined $pong && $pong eq 'PONG';
    }, 5);

    # a replica is ready once it has the master's data
    $up &&= GmsTest::wait_until(sub {
        $exited = GmsTest::process_gone($self->{pid}, 1) and return 1;
        return (eval { $self->cmd(INFO => 'replication') } // '')
               =~ /^master_link_status:up/m;
    }, 10) if $opt{replicaof};

    $self->cmd(ACL => 'SETUSER', 'default', '-@scripting')
        if $up && !$exited && ($noscript eq '1' || $noscript eq 'acl');

    return if $up && !$exited;

    delete $self->{pid} if $exited;
    $self->stop;
    die "redis-server did not start on port $self->{port}:\n"
        . GmsTest::slurp("$dir/redis.out") . GmsTest::slurp("$dir/redis.log");
}

# One command on the kept connection, connecting first if needed; any
# failure leaves no connection behind.
sub _roundtrip {
    my ($self, $args) = @_;

    my $reply;
    my $ok = eval {
        $self->_connect unless $self->{sock};
        $reply = $self->_call(@$args);
        1;
    };
    return $reply if $ok;

    delete $self->{sock};
    die $@;
}

sub _connect {
    my ($self) = @_;

    # objects made by hand (GmsTest::Subscriber) have no host
    $self->{sock} = IO::Socket::IP->new(
        PeerHost => $self->{host} // '127.0.0.1',
        PeerPort => $self->{port},
        Proto    => 'tcp',
        Timeout  => 5,
    ) or die "redis: cannot connect to port $self->{port}: $!\n";
    $self->{in} = '';

    return unless defined $self->{opt}{password};

    my $reply = $self->_call('AUTH', $self->{opt}{password});
    die "redis: AUTH failed: $reply\n" if ref $reply;
}

sub _call {
    my ($self, @args) = @_;

    local $SIG{PIPE} = 'IGNORE';

    my $out = '*' . @args . "\r\n"
              . join '', map { '$' . length($_) . "\r\n$_\r\n" } @args;

    while (length $out) {
        my $n = syswrite $self->{sock}, $out;
        die "redis: connection lost ($!)\n" unless defined $n;
        substr($out, 0, $n, '');
    }

    return $self->_read_reply;
}

sub _read_reply {
    my ($self) = @_;

    my $line = $self->_read_bytes(undef);
    my ($type, $rest) = (substr($line, 0, 1), substr($line, 1));

    return $rest if $type eq '+';
    return GmsTest::Redis::Error->new($rest) if $type eq '-';
    return 0 + $rest if $type eq ':';

    if ($type eq '$') {
        return undef if $rest < 0;
        return substr $self->_read_bytes($rest + 2), 0, $rest;
    }

    if ($type eq '*') {
        return undef if $rest < 0;
        return [ map { $self->_read_reply } 1 .. $rest ];
    }

    die "redis: bad reply line '$line'\n";
}

# Reads $length bytes, or a line without its CRLF if $length is undef.
sub _read_bytes {
    my ($self, $length) = @_;

    while (1) {
        if (defined $length) {
            return substr($self->{in}, 0, $length, '')
                if length $self->{in} >= $length;
        } else {
            my $eol = index $self->{in}, "\r\n";
            if ($eol >= 0) {
                my $line = substr($self->{in}, 0, $eol + 2, '');
                return substr $line, 0, $eol;
            }
        }

        IO::Select->new($self->{sock})->can_read($REPLY_TIMEOUT)
            or die "redis: no reply within $REPLY_TIMEOUT s\n";
        my $n = sysread $self->{sock}, $self->{in}, 65536, length $self->{in};
        die 'redis: connection lost (' . (defined $n ? 'closed' : $!) . ")\n"
            unless $n;
    }
}


package GmsTest::Redis::Error;

# An error reply (-ERR ..., -NOAUTH ..., -WRONGTYPE ...); stringifies to its
# message so that like($reply, qr/WRONGTYPE/) reads naturally.

use overload '""' => sub { $_[0]{message} }, fallback => 1;

sub new {
    my ($class, $message) = @_;
    return bless { message => $message }, $class;
}

sub message {
    return $_[0]{message};
}

sub is_error {
    return 1;
}

1;
