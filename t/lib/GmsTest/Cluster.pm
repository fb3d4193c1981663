package GmsTest::Cluster;

# A real Redis Cluster on loopback: Debian's redis-server, each node a
# GmsTest::Redis with cluster-enabled, joined by redis-cli --cluster
# create (by default three masters and one replica each):
#
#   my $c = GmsTest::Cluster->start;                 (masters 3, replicas 1)
#   my $c = GmsTest::Cluster->start(tls => GmsTest::Certs->new,
#                                   password => 'secret');
#   $c->addresses;                  ("127.0.0.1:P1", ...) every node's
#   $c->addresses(tls => 1);        their TLS ports
#   $c->slot('{gms}:token:x');      the key's hash slot (CLUSTER KEYSLOT)
#   $c->master_of($slot);           the GmsTest::Redis serving it
#   $c->replicas_of($node);         its replicas (GmsTest::Redis objects)
#   $c->cmd(HSET => $key, ...);     sent to the key's master, MOVED followed
#   $c->migrate($slot, $to);        the slot and its keys moved to $to
#   $c->wait_ok(15);                every live node says cluster_state:ok
#   $c->kill_master_of($slot, 15);  its master SIGKILLed, a replica
#                                   promoted; returns the new master
#
# Options: masters (3), replicas (1 per master), password (requirepass and
# masterauth), tls (a GmsTest::Certs: the cluster bus and replication over
# TLS too), node_timeout (ms, 2000: a dead master is failed over after
# about twice that).
#
# cmd() returns what GmsTest::Redis's does.

use strict;
use warnings;

use GmsTest ();
use GmsTest::Redis;

sub start {
    my ($class, %opt) = @_;

    my $masters = $opt{masters} // 3;
    my $replicas = $opt{replicas} // 1;
    my $count = $masters * (1 + $replicas);

    my $self = bless {
        owner => $$,
        opt   => \%opt,
        dir   => GmsTest::tempdir(),
        nodes => [],
    }, $class;

    for (1 .. $count) {
        push @{ $self->{nodes} }, GmsTest::Redis->start(
            cluster  => { node_timeout => $opt{node_timeout} // 2000 },
            password => $opt{password},
            tls      => $opt{tls},
        );
    }

    my @cli = $self->_cli_base;
    my $tls = $opt{tls} ? 1 : 0;
    my $out = "$self->{dir}/create.out";
    my $rc = GmsTest::run([@cli, '--cluster', 'create',
                           $self->addresses(tls => $tls),
                           '--cluster-replicas', $replicas,
                           '--cluster-yes'], $out);
    die "GmsTest::Cluster: redis-cli --cluster create failed ($rc):\n"
        . GmsTest::slurp($out) if $rc;

    $self->wait_ok(30)
        or die "GmsTest::Cluster: cluster_state not ok within 30 s\n";

    # every replica has its master's link up before a test relies on it
    GmsTest::wait_until(sub {
        for my $n ($self->nodes) {
            my $info = eval { $n->cmd(INFO => 'replication') } // '';
            return 0 if $info =~ /^role:slave/m
                        && $info !~ /^master_link_status:up/m;
        }
        return 1;
    }, 20) or die "GmsTest::Cluster: replicas not in sync within 20 s\n";

    return $self;
}

sub nodes {
    return grep { $_->pid } @{ $_[0]{nodes} };
}

sub all_nodes {
    return @{ $_[0]{nodes} };
}

# "127.0.0.1:port" of every live node (their TLS ports with tls => 1)
sub addresses {
    my ($self, %opt) = @_;
    return map { $_->address(tls => $opt{tls}) } $self->nodes;
}

sub slot {
    my ($self, $key) = @_;
    return ($self->nodes)[0]->cmd(CLUSTER => 'KEYSLOT', $key);
}

# The node serving $slot as the live nodes see it (the first that answers).
sub master_of {
    my ($self, $slot) = @_;

    for my $n ($self->nodes) {
        my $slots = eval { $n->cmd(CLUSTER => 'SLOTS') } or next;
        next unless ref $slots eq 'ARRAY';
        for my $range (@$slots) {
            next unless $range->[0] <= $slot && $slot <= $range->[1];
            return $self->_by_port($range->[2][1]);
        }
    }
    return undef;
}

sub replicas_of {
    my ($self, $master) = @_;

    my $id = $master->cmd(CLUSTER => 'MYID');
    return grep { $self->_replicates($_, $id) }
           grep { $_ != $master } $self->nodes;
}

# A command sent where its key (the second word) lives; a MOVED or ASK
# answer is followed once.
sub cmd {
    my ($self, @args) = @_;

    my $node = defined $args[1] ? $self->master_of($self->slot($args[1]))
                                : ($self->nodes)[0];
    $node //= ($self->nodes)[0];

    my $reply = $node->cmd(@args);
    if (ref $reply && "$reply" =~ /^(MOVED|ASK) \d+ [^:]+:(\d+)/) {
        my ($kind, $port) = ($1, $2);
        my $to = $self->_by_port($port) or return $reply;
        $to->cmd('ASKING') if $kind eq 'ASK';
        $reply = $to->cmd(@args);
    }
    return $reply;
}

# Moves $slot, with its keys, to the master $to (a GmsTest::Redis), as
# redis-cli --cluster reshard does: IMPORTING, MIGRATING, MIGRATE, NODE.
# With hold => 1 it stops after the keys moved and before NODE, leaving
# the slot in migration (->finish_migration($slot, $to) ends it).
sub migrate {
    my ($self, $slot, $to, %opt) = @_;

    my $from = $self->master_of($slot) or die "no master for slot $slot\n";
    return if $from == $to;

    my $to_id = $to->cmd(CLUSTER => 'MYID');
    my $from_id = $from->cmd(CLUSTER => 'MYID');

    _ok($to->cmd(CLUSTER => 'SETSLOT', $slot, 'IMPORTING', $from_id));
    _ok($from->cmd(CLUSTER => 'SETSLOT', $slot, 'MIGRATING', $to_id));

    my @auth = defined $self->{opt}{password}
             ? ('AUTH', $self->{opt}{password}) : ();

    while (1) {
        my $keys = $from->cmd(CLUSTER => 'GETKEYSINSLOT', $slot, 100);
        last unless ref $keys eq 'ARRAY' && @$keys;
        _ok($from->cmd(MIGRATE => $to->host, $self->_port($to), '', 0, 5000,
                       @auth, 'KEYS', @$keys));
        last if $opt{some};
    }

    $self->{migrating}{$slot} = [$from, $to];
    return if $opt{hold};

    $self->finish_migration($slot);
}

sub finish_migration {
    my ($self, $slot) = @_;

    my ($from, $to) = @{ delete $self->{migrating}{$slot} // return };
    my @auth = defined $self->{opt}{password}
             ? ('AUTH', $self->{opt}{password}) : ();

    # the keys still left behind, then the slot's owner everywhere
    while (1) {
        my $keys = $from->cmd(CLUSTER => 'GETKEYSINSLOT', $slot, 100);
        last unless ref $keys eq 'ARRAY' && @$keys;
        _ok($from->cmd(MIGRATE => $to->host, $self->_port($to), '', 0, 5000,
                       @auth, 'KEYS', @$keys));
    }

    my $to_id = $to->cmd(CLUSTER => 'MYID');
    for my $n ($to, $from, grep { $_ != $to && $_ != $from } $self->nodes) {
        my $info = eval { $n->cmd(INFO => 'replication') } // '';
        next if $info =~ /^role:slave/m;
        _ok($n->cmd(CLUSTER => 'SETSLOT', $slot, 'NODE', $to_id));
    }
}

# Every live node says cluster_state:ok and agrees on who serves each slot.
sub wait_ok {
    my ($self, $timeout) = @_;

    return GmsTest::wait_until(sub {
        my %seen;
        for my $n ($self->nodes) {
            my $info = eval { $n->cmd(CLUSTER => 'INFO') } // '';
            return 0 unless $info =~ /^cluster_state:ok/m;
            my $slots = eval { $n->cmd(CLUSTER => 'SLOTS') } or return 0;
            $seen{ join ';', sort map { "$_->[0]-$_->[1]:$_->[2][1]" }
                            @$slots } = 1;
        }
        return keys %seen == 1;
    }, $timeout // 15);
}

# SIGKILL to the master of $slot; returns the replica that took over once
# the cluster is ok again, or undef.
sub kill_master_of {
    my ($self, $slot, $timeout) = @_;

    my $master = $self->master_of($slot) or return undef;
    $master->kill;

    GmsTest::wait_until(sub {
        my $m = $self->master_of($slot);
        return $m && $m != $master && $self->wait_ok(0.5);
    }, $timeout // 20) or return undef;

    return $self->master_of($slot);
}

sub stop {
    my ($self) = @_;
    $_->stop for @{ $self->{nodes} };
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}


sub _cli_base {
    my ($self) = @_;

    my @cli = (GmsTest::redis_bin('cli'));
    if (my $c = $self->{opt}{tls}) {
        push @cli, '--tls', '--cacert', $c->{ca}, '--cert', $c->{client_cert},
                   '--key', $c->{client_key};
    }
    # REDISCLI_AUTH would be read by every redis-cli the test runs
    push @cli, '-a', $self->{opt}{password}, '--no-auth-warning'
        if defined $self->{opt}{password};
    return @cli;
}

# where nodes reach $node: its TLS port when the cluster runs on TLS
sub _port {
    my ($self, $node) = @_;
    return $self->{opt}{tls} ? $node->tls_port : $node->port;
}

sub _by_port {
    my ($self, $port) = @_;
    my ($n) = grep { $_->port == $port || $_->tls_port == $port }
              @{ $self->{nodes} };
    return $n;
}

sub _replicates {
    my ($self, $node, $master_id) = @_;
    my $nodes = eval { $node->cmd(CLUSTER => 'NODES') } // '';
    my ($me) = grep { /\bmyself\b/ } split /\n/, $nodes;
    return $me && (split / /, $me)[3] eq $master_id;
}

sub _ok {
    my ($reply) = @_;
    die "GmsTest::Cluster: $reply\n" if ref $reply;
    return $reply;
}

1;
