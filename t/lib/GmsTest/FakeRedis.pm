package GmsTest::FakeRedis;

# A Redis that misbehaves on purpose: a TCP server speaking just enough
# RESP to get a client past its setup, and then saying what no real Redis
# would.  Each connection is served by a process of its own, with scripted
# behaviour:
#
#   my $f = GmsTest::FakeRedis->start(
#       greeting => "+HELLO\r\n",          # sent on connect, unasked
#       extra    => "+EXTRA\r\n",          # sent after every reply
#       on       => {                      # replies by command name
#           EVALSHA => "*2147483647\r\n",
#           PING    => sub { my ($c, @cmd) = @_; return "+PONG\r\n" },
#       },
#   );
#   $f->port; $f->connections; $f->commands;
#
# or the whole conversation of each connection:
#
#   GmsTest::FakeRedis->start(script => sub {
#       my ($c) = @_;                  # a GmsTest::FakeRedis::Conn
#       while (my $cmd = $c->read_command) {
#           $c->send($c->default_reply($cmd));
#       }
#   });
#
# Commands without an entry in `on` get what a real Redis would answer:
# +OK to AUTH, SELECT, CLIENT, READONLY; +PONG to PING (["pong", ""] once
# subscribed, as RESP2 answers on a subscribed connection); the real SHA1 to
# SCRIPT LOAD; subscribe confirmations to SUBSCRIBE; a master's ROLE; nil
# to EVAL, EVALSHA and EVALSHA_RO (no such token) and to HGET; an empty
# array to SMEMBERS; -ERR to anything else.  A reply given as a sub gets the
# connection and the command's words and returns the bytes to send (undef:
# the default reply).  Options: bind ('127.0.0.1'; '::1' for IPv6), port.
#
# The constants HUGE_ARRAY ("*2147483647\r\n"), HUGE_BULK
# ("$2147483648\r\n") and GARBAGE are the usual hostile replies.

use strict;
use warnings;

use Digest::SHA qw(sha1_hex);
use Fcntl qw(:flock);
use GmsTest ();
use IO::Socket::IP;
use POSIX ();

use constant HUGE_ARRAY => "*2147483647\r\n";
use constant HUGE_BULK  => "\$2147483648\r\n";
use constant GARBAGE    => "\x00\xff\x16\x03\x01garbage\r\n";


sub start {
    my ($class, %opt) = @_;

    my $self = bless {
        owner => $$,
        opt   => \%opt,
        dir   => GmsTest::tempdir(),
    }, $class;
    $self->{log} = "$self->{dir}/fake-redis.log";
    GmsTest::write_file($self->{log}, '');

    my $listen = IO::Socket::IP->new(
        LocalHost => $opt{bind} // '127.0.0.1',
        LocalPort => $opt{port} // 0,
        Listen    => 64,
        ReuseAddr => 1,
        Proto     => 'tcp',
    ) or die "GmsTest::FakeRedis: cannot listen: $@\n";
    $self->{port} = $listen->sockport;

    GmsTest::track($self);

    my $pid = fork // die "GmsTest::FakeRedis: fork: $!\n";
    if ($pid == 0) {
        # a group of its own: stop() ends the connection processes too
        POSIX::setpgid(0, 0);
        $SIG{TERM} = 'DEFAULT';
        eval { $self->_accept_loop($listen); 1 } or warn "FakeRedis: $@";
        POSIX::_exit(0);
    }

    # the child may not have made its group yet when stop() signals it
    POSIX::setpgid($pid, $pid);
    $self->{pid} = $pid;
    close $listen;

    return $self;
}

sub port {
    return $_[0]{port};
}

# "host:port" as gms_token_redis takes it
sub address {
    my ($self) = @_;
    my $host = $self->{opt}{bind} // '127.0.0.1';
    return ($host =~ /:/ ? "[$host]" : $host) . ":$self->{port}";
}

# Connections accepted so far.
sub connections {
    my ($self) = @_;
    return scalar grep { /^connect / } $self->_log_lines;
}

# Commands received so far, each as "NAME arg1 arg2" (arguments cut to 40
# bytes), in the order they were read (connections interleaved).
sub commands {
    my ($self) = @_;
    return map { /^cmd \d+ (.*)$/ ? $1 : () } $self->_log_lines;
}

sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    kill 'TERM', -$pid;
    waitpid $pid, 0;
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}


sub _log_lines {
    my ($self) = @_;
    return split /\n/, GmsTest::slurp($self->{log});
}

sub _log {
    my ($self, $line) = @_;
    open my $fh, '>>', $self->{log} or return;
    flock $fh, LOCK_EX;
    print $fh "$line\n";
    close $fh;
}

sub _accept_loop {
    my ($self, $listen) = @_;

    $SIG{CHLD} = 'IGNORE';
    my $n = 0;

    while (1) {
        my $sock = $listen->accept or next;
        $n++;
        $self->_log("connect $n");

        my $pid = fork;
        if (defined $pid && $pid == 0) {
            close $listen;
            $SIG{PIPE} = 'IGNORE';
            my $c = GmsTest::FakeRedis::Conn->new($self, $sock, $n);
            eval { $self->_converse($c); 1 }
                or $@ =~ /^fake redis: peer gone/ or warn "FakeRedis: $@";
            POSIX::_exit(0);
        }
        close $sock;
    }
}

sub _converse {
    my ($self, $c) = @_;

    my $opt = $self->{opt};

    return $opt->{script}->($c) if $opt->{script};

    $c->send($opt->{greeting}) if defined $opt->{greeting};

    while (my $cmd = $c->read_command) {
        my $reply = $opt->{on}{ uc($cmd->[0] // '') };
        $reply = $reply->($c, @$cmd) if ref $reply eq 'CODE';
        $reply //= $c->default_reply($cmd);
        $c->send($reply . ($opt->{extra} // ''));
    }
}


package GmsTest::FakeRedis::Conn;

# One connection, seen from the fake server: blocking reads of whole
# commands, writes of raw bytes.

use Digest::SHA qw(sha1_hex);
use IO::Select;

sub new {
    my ($class, $server, $sock, $n) = @_;
    return bless { server => $server, sock => $sock, n => $n, in => '' },
                 $class;
}

# Which connection this is (1 for the first accepted).
sub number {
    return $_[0]{n};
}

sub send {
    my ($self, $bytes) = @_;
    while (length $bytes) {
        my $n = syswrite $self->{sock}, $bytes;
        die "fake redis: peer gone\n" unless $n;
        substr($bytes, 0, $n, '');
    }
}

sub close {
    my ($self) = @_;
    CORE::close $self->{sock};
}

# The next command as an arrayref of its words (RESP array of bulk strings
# or an inline command); undef when the peer closed the connection.
sub read_command {
    my ($self) = @_;

    while (1) {
        my $cmd = $self->_parse;
        if ($cmd) {
            $self->{server}->_log("cmd $self->{n} "
                . join ' ', map { my $w = substr $_, 0, 40; $w =~ s/\s/_/g; $w }
                            @$cmd);
            return $cmd;
        }
        my $n = sysread $self->{sock}, $self->{in}, 65536, length $self->{in};
        return undef unless $n;
    }
}

# Waits up to $timeout seconds for the peer to close; true if it did.
sub wait_closed {
    my ($self, $timeout) = @_;
    while (IO::Select->new($self->{sock})->can_read($timeout)) {
        my $n = sysread $self->{sock}, $self->{in}, 65536, length $self->{in};
        return 1 unless $n;
    }
    return 0;
}

sub default_reply {
    my ($self, $cmd) = @_;

    my ($name, @args) = @$cmd;
    $name = uc($name // '');

    return "+OK\r\n" if $name =~ /^(?:AUTH|SELECT|CLIENT|READONLY|QUIT)$/;
    return "*2\r\n\$4\r\npong\r\n\$0\r\n\r\n"
        if $name eq 'PING' && $self->{subscribed};
    return "+PONG\r\n" if $name eq 'PING';

    if ($name eq 'SCRIPT' && uc($args[0] // '') eq 'LOAD') {
        return "\$40\r\n" . sha1_hex($args[1] // '') . "\r\n";
    }

    if ($name eq 'SUBSCRIBE') {
        $self->{subscribed} = 1;
        my ($out, $i) = ('', 0);
        for my $ch (@args) {
            $i++;
            $out .= "*3\r\n\$9\r\nsubscribe\r\n\$" . length($ch) . "\r\n$ch\r\n"
                    . ":$i\r\n";
        }
        return $out;
    }

    return "*3\r\n\$6\r\nmaster\r\n:0\r\n*0\r\n" if $name eq 'ROLE';
    return "\$-1\r\n" if $name =~ /^(?:EVAL|EVALSHA|EVALSHA_RO|HGET)$/;
    return "*0\r\n" if $name eq 'SMEMBERS';

    return "-ERR unknown command '$name'\r\n";
}

sub _parse {
    my ($self) = @_;

    my $in = \$self->{in};
    return undef unless length $$in;

    if (substr($$in, 0, 1) ne '*') {
        my $eol = index $$in, "\n";
        return undef if $eol < 0;
        my $line = substr($$in, 0, $eol + 1, '');
        $line =~ s/\r?\n\z//;
        return [ split ' ', $line ];
    }

    my $pos = 0;
    my $line = sub {
        my $eol = index $$in, "\r\n", $pos;
        return undef if $eol < 0;
        my $l = substr $$in, $pos, $eol - $pos;
        $pos = $eol + 2;
        return $l;
    };

    my $head = $line->() // return undef;
    my ($count) = $head =~ /^\*(-?\d+)$/ or die "fake redis: bad header\n";
    my @words;
    for (1 .. $count) {
        my $h = $line->() // return undef;
        my ($len) = $h =~ /^\$(\d+)$/ or die "fake redis: bad bulk\n";
        return undef if length($$in) < $pos + $len + 2;
        push @words, substr $$in, $pos, $len;
        $pos += $len + 2;
    }

    substr($$in, 0, $pos, '');
    return \@words;
}

1;
