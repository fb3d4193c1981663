package GmsTest::Sentinel;

# Redis Sentinels (redis-sentinel, Debian package redis-sentinel) watching a
# GmsTest::Redis master, each on a free port with its own configuration
# file in a temporary directory (a Sentinel rewrites its file as it learns):
#
#   my $m = GmsTest::Redis->start;
#   my $r = GmsTest::Redis->start(replicaof => ['127.0.0.1', $m->port]);
#   my $s = GmsTest::Sentinel->start(master => $m, name => 'gms');
#   $s->addresses;                  ("127.0.0.1:P1", "127.0.0.1:P2", ...)
#   $s->master_addr;                ['127.0.0.1', port]
#   $m->kill;
#   my $port = $s->wait_failover($m->port, 15);    # the replica's port
#
# Options: name ('gms'), count (3), quorum (2), down_after (ms, 1000),
# failover_timeout (ms, 3000), password (the master's and replicas' AUTH,
# default the master's), sentinel_password (requirepass on the Sentinels),
# replicas (how many replicas each Sentinel must know before start()
# returns; default the master's connected_slaves).
#
# start() returns once every Sentinel answers, knows all the others (a
# failover needs a majority that knows each other) and knows the replicas.
#
# A scripted stand-in for one Sentinel (a GmsTest::FakeRedis), naming the
# master on port $port of 127.0.0.1 and, to SENTINEL replicas, the given
# ports as replicas with their link up; move() names another master from
# then on; `on` adds replies to other commands, as GmsTest::FakeRedis takes
# them:
#
#   my $s = GmsTest::Sentinel->fake(master => $port, replicas => [$p2]);
#   GmsTest::Sentinel->fake(master => $port, on => { PING => sub { ... } });
#   $s->addresses; $s->name; $s->commands; $s->move($other_port);

use strict;
use warnings;

use GmsTest ();
use GmsTest::FakeRedis;
use GmsTest::Redis;

sub start {
    my ($class, %opt) = @_;

    _need_sentinel();

    my $master = $opt{master} or die "GmsTest::Sentinel: master required\n";

    my $self = bless {
        owner => $$,
        name  => $opt{name} // 'gms',
        opt   => \%opt,
        dir   => GmsTest::tempdir(),
        pids  => [],
    }, $class;

    my $count = $opt{count} // 3;
    $self->{ports} = [ map { GmsTest::free_port() } 1 .. $count ];

    GmsTest::track($self);

    my $password = $opt{password} // $master->{opt}{password};
    my $name = $self->{name};

    # Sentinels find each other through hello messages every 2 s and the
    # replicas through INFO: told up front, they are ready at once
    my @ids = map { sprintf '%040x', $$ * 1000 + $_ } 0 .. $count - 1;
    my @replicas = _replicas($master);

    for my $i (0 .. $count - 1) {
        my $port = $self->{ports}[$i];
        my $dir = "$self->{dir}/s$i";
        mkdir $dir or die "mkdir $dir: $!\n";

        my $conf = <<"CONF";
port $port
bind 127.0.0.1
daemonize no
dir $dir
logfile $dir/sentinel.log
sentinel myid $ids[$i]
sentinel announce-ip 127.0.0.1
sentinel monitor $name @{[ $master->host ]} @{[ $master->port ]} @{[ $opt{quorum} // 2 ]}
sentinel down-after-milliseconds $name @{[ $opt{down_after} // 1000 ]}
sentinel failover-timeout $name @{[ $opt{failover_timeout} // 3000 ]}
sentinel parallel-syncs $name 1
CONF
        $conf .= "sentinel known-sentinel $name 127.0.0.1 $self->{ports}[$_] "
                 . "$ids[$_]\n" for grep { $_ != $i } 0 .. $count - 1;
        $conf .= "sentinel known-replica $name $_\n" for @replicas;
        $conf .= "sentinel auth-pass $name $password\n" if defined $password;
        $conf .= "requirepass $opt{sentinel_password}\n"
            if defined $opt{sentinel_password};

        GmsTest::write_file("$dir/sentinel.conf", $conf);
        push @{ $self->{pids} },
            GmsTest::spawn([GmsTest::redis_bin('sentinel'), "$dir/sentinel.conf"],
                           "$dir/sentinel.out");

        $self->{clients}[$i] = GmsTest::Redis->client(
            port => $port, password => $opt{sentinel_password});
    }

    my $replicas = $opt{replicas} // @replicas;

    my $exited;
    my $ready = GmsTest::wait_until(sub {
        $exited = grep { GmsTest::process_gone($_, 1) } @{ $self->{pids} }
            and return 1;
        for my $i (0 .. $count - 1) {
            my $m = eval { $self->_master_info($i) } or return 0;
            return 0 unless $m->{'num-other-sentinels'} == $count - 1
                            && $m->{'num-slaves'} >= $replicas;
        }
        return 1;
    }, 20);

    return $self if $ready && !$exited;

    my $logs = join '', map { GmsTest::slurp("$self->{dir}/s$_/sentinel.out")
                              . GmsTest::slurp("$self->{dir}/s$_/sentinel.log") }
                        0 .. $count - 1;
    $self->stop;
    die 'GmsTest::Sentinel: ' . ($exited ? 'a sentinel exited'
                                         : 'sentinels not ready within 20 s')
        . ":\n$logs";
}

sub name {
    return $_[0]{name};
}

sub ports {
    return @{ $_[0]{ports} };
}

sub addresses {
    return map { "127.0.0.1:$_" } @{ $_[0]{ports} };
}

# A command to Sentinel $i (0 by default), e.g. $s->cmd(0, SENTINEL => ...)
sub cmd {
    my ($self, $i, @args) = @_;
    return $self->{clients}[$i // 0]->cmd(@args);
}

# [host, port] of the master as Sentinel $i (default: the first that
# answers) sees it, or undef
sub master_addr {
    my ($self, $i) = @_;

    for my $j (defined $i ? ($i) : (0 .. $#{ $self->{ports} })) {
        my $addr = eval {
            $self->cmd($j, SENTINEL => 'get-master-addr-by-name', $self->{name})
        };
        return $addr if ref $addr eq 'ARRAY';
    }
    return undef;
}

# Waits until every Sentinel that answers names a master on another port
# than $old_port (all agreeing), and returns that port; 0 on timeout.
sub wait_failover {
    my ($self, $old_port, $timeout) = @_;

    return GmsTest::wait_until(sub {
        my %seen;
        for my $i (0 .. $#{ $self->{ports} }) {
            my $addr = $self->master_addr($i) or next;
            $seen{ $addr->[1] } = 1;
        }
        my @ports = keys %seen;
        return @ports == 1 && $ports[0] != $old_port ? $ports[0] : 0;
    }, $timeout // 15);
}

sub log {
    my ($self, $i) = @_;
    return GmsTest::slurp("$self->{dir}/s" . ($i // 0) . '/sentinel.log');
}

sub stop {
    my ($self) = @_;

    my @pids = @{ $self->{pids} };
    $self->{pids} = [];
    delete $_->{sock} for @{ $self->{clients} // [] };

    kill 'TERM', @pids;
    for my $pid (@pids) {
        next if GmsTest::wait_gone($pid, 1, 5);
        kill 'KILL', $pid;
        waitpid $pid, 0;
    }
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}


sub fake {
    my ($class, %opt) = @_;
    return GmsTest::Sentinel::Fake->start(%opt);
}


sub _need_sentinel {
    my $bin = GmsTest::redis_bin('sentinel');
    GmsTest::skip_all("$bin not found") unless GmsTest::in_path($bin);
}

# "host port" of each replica the master has
sub _replicas {
    my ($master) = @_;
    my $info = $master->cmd(INFO => 'replication') // '';
    my @replicas;
    push @replicas, "$1 $2" while $info =~ /^slave\d+:ip=([^,]+),port=(\d+)/mg;
    return @replicas;
}

# SENTINEL MASTER name as a hash
sub _master_info {
    my ($self, $i) = @_;
    my $reply = $self->cmd($i, SENTINEL => 'MASTER', $self->{name});
    die "$reply\n" unless ref $reply eq 'ARRAY';
    return { @$reply };
}



package GmsTest::Sentinel::Fake;

# the master's port is in a file: the fake answers from processes of its
# own, forked before move() is called

sub start {
    my ($class, %opt) = @_;

    my $self = bless { dir => GmsTest::tempdir() }, $class;
    $self->{file} = "$self->{dir}/master-port";
    $self->move($opt{master});

    my $file = $self->{file};
    my @replicas = map {
        [ ip => '127.0.0.1', port => $_, flags => 'slave',
          'master-link-status' => 'ok' ]
    } @{ $opt{replicas} // [] };

    $self->{fake} = GmsTest::FakeRedis->start(on => { SENTINEL => sub {
        my ($c, undef, $what) = @_;
        $what = lc($what // '');
        return _resp([ '127.0.0.1', GmsTest::slurp($file) ])
            if $what eq 'get-master-addr-by-name';
        return _resp(\@replicas) if $what eq 'replicas';
        return undef;
    }, %{ $opt{on} // {} } });

    return $self;
}

sub name {
    return 'gms';
}

sub addresses {
    return $_[0]{fake}->address;
}

# what the fake was asked, as GmsTest::FakeRedis::commands gives it
sub commands {
    return $_[0]{fake}->commands;
}

sub move {
    my ($self, $port) = @_;
    GmsTest::write_file($self->{file}, $port);
}

sub stop {
    my ($self) = @_;
    $self->{fake}->stop if $self->{fake};
}

# strings and arrays of them (nested), as RESP
sub _resp {
    my ($v) = @_;
    return '*' . @$v . "\r\n" . join '', map { _resp($_) } @$v
        if ref $v eq 'ARRAY';
    return '$' . length($v) . "\r\n$v\r\n";
}

1;
