package GmsTest::DNS;

# A tiny authoritative DNS server on UDP 127.0.0.1, for nginx's resolver:
#
#   my $dns = GmsTest::DNS->start(names => { 'redis.test' => '127.0.0.1' });
#   # resolver 127.0.0.1:PORT valid=1s ipv6=off;
#   $dns->set('redis.test' => '127.0.0.2');     # from the next query on
#   $dns->set('redis.test' => undef);           # NXDOMAIN from now on
#   $dns->queries('redis.test');                # A queries received so far
#
# A query for a name in the table gets its IPv4 address (TTL: option ttl,
# default 1 s); AAAA (and any other type) for such a name gets NOERROR with
# no answer; any other name gets NXDOMAIN.  Names are matched without
# regard to case.  The table lives in a file the server reads on every
# query, so set() takes effect at once; each query is appended to a log.

use strict;
use warnings;

use Fcntl qw(:flock);
use GmsTest ();
use IO::Socket::INET;
use POSIX ();

my %TYPE = (1 => 'A', 28 => 'AAAA', 5 => 'CNAME', 15 => 'MX', 16 => 'TXT',
            33 => 'SRV', 255 => 'ANY');


sub start {
    my ($class, %opt) = @_;

    my $self = bless {
        owner => $$,
        dir   => GmsTest::tempdir(),
        names => {},
        ttl   => $opt{ttl} // 1,
    }, $class;
    $self->{table} = "$self->{dir}/names";
    $self->{log} = "$self->{dir}/queries.log";

    $self->{names}{ lc $_ } = $opt{names}{$_} for keys %{ $opt{names} // {} };
    $self->_write_table;
    GmsTest::write_file($self->{log}, '');

    my $sock = IO::Socket::INET->new(
        LocalAddr => '127.0.0.1',
        LocalPort => $opt{port} // 0,
        Proto     => 'udp',
    ) or die "GmsTest::DNS: cannot bind: $!\n";
    $self->{port} = $sock->sockport;

    GmsTest::track($self);

    my $pid = fork // die "GmsTest::DNS: fork: $!\n";
    if ($pid == 0) {
        $SIG{TERM} = 'DEFAULT';
        eval { $self->_serve($sock); 1 } or warn "GmsTest::DNS: $@";
        POSIX::_exit(0);
    }

    $self->{pid} = $pid;
    close $sock;

    return $self;
}

sub port {
    return $_[0]{port};
}

# name => address (undef: remove the name), any number of pairs
sub set {
    my ($self, %names) = @_;
    for my $name (keys %names) {
        if (defined $names{$name}) {
            $self->{names}{ lc $name } = $names{$name};
        } else {
            delete $self->{names}{ lc $name };
        }
    }
    $self->_write_table;
}

# Number of queries received for $name of $type ('A' by default; 'any' for
# all types); all queries when $name is undef.
sub queries {
    my ($self, $name, $type) = @_;
    $type //= 'A';
    my $n = 0;
    for (split /\n/, GmsTest::slurp($self->{log})) {
        my ($t, $q) = split ' ', $_, 2;
        $n++ if (!defined $name || lc $q eq lc $name)
                && ($type eq 'any' || $t eq $type);
    }
    return $n;
}

sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    kill 'TERM', $pid;
    waitpid $pid, 0;
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}


sub _write_table {
    my ($self) = @_;
    my $tmp = "$self->{table}.tmp";
    GmsTest::write_file($tmp, join '',
        map { "$_ $self->{names}{$_}\n" } sort keys %{ $self->{names} });
    rename $tmp, $self->{table} or die "rename $tmp: $!\n";
}

sub _read_table {
    my ($self) = @_;
    my %names;
    for (split /\n/, GmsTest::slurp($self->{table})) {
        my ($name, $addr) = split ' ';
        $names{$name} = $addr;
    }
    return \%names;
}

sub _serve {
    my ($self, $sock) = @_;

    while (1) {
        my $peer = $sock->recv(my $query, 4096);
        next unless defined $peer && length $query >= 12;

        my $answer = eval { $self->_answer($query) } // next;
        $sock->send($answer, 0, $peer);
    }
}

# The response to one query (RFC 1035 4.1), or undef to ignore it.
sub _answer {
    my ($self, $query) = @_;

    my ($id, $flags, $qdcount) = unpack 'n n n', $query;
    return undef if $flags & 0x8000 || $qdcount != 1;

    my ($pos, @labels) = (12);
    while (1) {
        my $len = ord substr $query, $pos, 1;
        $pos++;
        last if $len == 0;
        return undef if $len > 63 || $pos + $len > length $query;
        push @labels, substr $query, $pos, $len;
        $pos += $len;
    }
    return undef if $pos + 4 > length $query;

    my ($qtype, $qclass) = unpack 'n n', substr $query, $pos, 4;
    my $question = substr $query, 12, $pos + 4 - 12;
    my $name = lc join '.', @labels;

    open my $log, '>>', $self->{log} or die "cannot append to log: $!\n";
    flock $log, LOCK_EX;
    print $log(($TYPE{$qtype} // $qtype) . " $name\n");
    close $log;

    my $addr = $self->_read_table->{$name};

    # QR, opcode as asked, AA, RD as asked, RA; NXDOMAIN for unknown names
    my $rflags = 0x8000 | ($flags & 0x7900) | 0x0400 | 0x0080
                 | (defined $addr ? 0 : 3);
    my $answer = '';

    if (defined $addr && $qtype == 1 && $qclass == 1) {
        my @octets = split /\./, $addr;
        $answer = pack('n n n N n C4', 0xc00c, 1, 1, $self->{ttl}, 4, @octets);
    }

    return pack('n n n n n n', $id, $rflags, 1, length $answer ? 1 : 0, 0, 0)
           . $question . $answer;
}

1;
