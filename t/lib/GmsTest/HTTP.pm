package GmsTest::HTTP;

# HTTP/1.1 on raw sockets.  The client sends the request target and headers
# exactly as given (no URI normalisation, no header canonicalisation, any
# duplicates), so tests see what nginx does with the bytes a client really
# sent; scripted() plays many hostile clients at once (bytes sent slowly,
# half closes, clients gone).  The message parsers are shared with
# GmsTest::Stub.
#
# A response is a hashref: status (undef if no complete response arrived,
# with error saying why), headers (lowercase name => value, repeated headers
# joined by ", "), body, raw (every byte received).

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use Socket qw(SHUT_WR);
use Time::HiRes qw(time);


# request($port, $method, $target, $headers, $body, timeout => 10)
# $headers is a hashref or an arrayref of [name, value] pairs.
sub request {
    my ($port, $method, $target, $headers, $body, %opt) = @_;
    return parallel($port, [[$method, $target, $headers, $body]], %opt)->[0];
}

# Sends bytes as they are, returns whatever arrives until the server closes
# the connection or the timeout (default 5 s) expires.
sub raw {
    my ($port, $bytes, %opt) = @_;
    my $conn = { out => $bytes };
    _exchange($port, [$conn], $opt{timeout} // 5);
    return $conn->{in};
}

# Sends all requests ([$method, $target, $headers, $body] each) on
# connections open at the same time; responses come back in request order.
sub parallel {
    my ($port, $requests, %opt) = @_;

    my @conns = map { { out => build_request(@$_), method => $_->[0] } }
                @$requests;

    _exchange($port, \@conns, $opt{timeout} // 10, sub {
        my ($conn, $eof) = @_;
        return parse_response($conn->{in}, $conn->{method}, $eof);
    });

    return [ map {
        $_->{response} // {
            status  => undef,
            headers => {},
            body    => undef,
            raw     => $_->{in},
            error   => $_->{error} // 'incomplete response',
        }
    } @conns ];
}

sub build_request {
    my ($method, $target, $headers, $body) = @_;

    my @headers = ref $headers eq 'ARRAY'
                  ? @$headers
                  : map { [$_, $headers->{$_}] } sort keys %{ $headers // {} };
    my %given = map { lc $_->[0] => 1 } @headers;

    unshift @headers, ['Host', 'localhost'] unless $given{host};
    push @headers, ['Connection', 'close'] unless $given{connection};
    push @headers, ['Content-Length', length $body]
        if defined $body
           && !$given{'content-length'} && !$given{'transfer-encoding'};

    return join '', "$method $target HTTP/1.1\r\n",
                    map({ "$_->[0]: $_->[1]\r\n" } @headers),
                    "\r\n", $body // '';
}


# Drives all connections with non-blocking I/O until each one is closed by
# the server, $complete returns a response for it, or the deadline passes.
# Each $conn is a hashref with the bytes to send in {out}; the bytes
# received end up in {in}, a problem in {error}.
sub _exchange {
    my ($port, $conns, $timeout, $complete) = @_;

    local $SIG{PIPE} = 'IGNORE';

    my $readers = IO::Select->new;
    my $writers = IO::Select->new;
    my %conn_of;

    for my $conn (@$conns) {
        $conn->{in} = '';
        my $sock = IO::Socket::INET->new(
            PeerAddr => '127.0.0.1',
            PeerPort => $port,
            Proto    => 'tcp',
        );
        unless ($sock) {
            $conn->{error} = "connect: $!";
            next;
        }
        $sock->blocking(0);
        $conn_of{fileno $sock} = $conn;
        $readers->add($sock);
        $writers->add($sock) if length $conn->{out};
    }

    my $finish = sub {
        my ($sock) = @_;
        $readers->remove($sock);
        $writers->remove($sock);
        close $sock;
    };

    my $deadline = time + $timeout;

    while ($readers->count) {
        my $left = $deadline - time;
        if ($left <= 0) {
            for my $sock ($readers->handles) {
                $conn_of{fileno $sock}{error} //= 'timeout';
                $finish->($sock);
            }
            last;
        }

        my ($readable, $writable) =
            IO::Select->select($readers, $writers, undef, $left);

        for my $sock (@{ $writable // [] }) {
            my $conn = $conn_of{fileno $sock};
            my $n = syswrite $sock, $conn->{out};
            if (!defined $n) {
                next if $!{EAGAIN};
                # the server may have answered early and closed: keep reading
                $conn->{error} = "write: $!";
                $writers->remove($sock);
                next;
            }
            substr($conn->{out}, 0, $n, '');
            $writers->remove($sock) unless length $conn->{out};
        }

        for my $sock (@{ $readable // [] }) {
            my $conn = $conn_of{fileno $sock};
            my $n = sysread $sock, $conn->{in}, 65536, length $conn->{in};
            next if !defined $n && $!{EAGAIN};
            $conn->{error} = "read: $!" unless defined $n;
            my $eof = !$n;

            if ($complete) {
                $conn->{response} = eval { $complete->($conn, $eof) };
                if ($@) {
                    $conn->{error} = "bad response: $@";
                    $eof = 1;
                }
            }

            $finish->($sock) if $eof || $conn->{response};
        }
    }
}


# Scripted clients on raw connections, up to $opt{parallel} (default 32)
# open at a time: hostile input, by the thousand.  Each case is a hashref
# saying
#
#   port      where to connect (127.0.0.1)
#   segs      what to send and when: [[seconds to wait before, bytes], ...]
#   method    of the request, for parsing the answer (default GET)
#   after     once the last byte is sent: 'read' until the server closes
#             (default), 'shutdown' the writing side and read, or 'close'
#   timeout   seconds after which the connection is given up (default 10)
#
# and any other keys of the caller's.  Each case gets {in} (every byte
# received), {res} (parse_response()'s response of them, if any arrived)
# and, for what went wrong, {timed_out}, {connect_error}, {read_error},
# {write_error} or {parse_error}; describe_scripted() puts these in words.
sub scripted {
    my ($cases, %opt) = @_;

    my $parallel = $opt{parallel} // 32;

    local $SIG{PIPE} = 'IGNORE';

    my @queue = @$cases;
    my @active;

    while (@queue || @active) {
        while (@queue && @active < $parallel) {
            my $c = shift @queue;
            _scripted_open($c);
            push @active, $c unless $c->{done};
        }

        my $now = time;
        my $wake = $now + 0.05;
        my $readers = IO::Select->new;
        my $writers = IO::Select->new;

        for my $c (@active) {
            while (@{ $c->{segs_left} } && $c->{due} <= $now) {
                $c->{out} .= shift(@{ $c->{segs_left} })->[1];
                $c->{due} = $now + $c->{segs_left}[0][0]
                    if @{ $c->{segs_left} };
            }
            $wake = $c->{due} if @{ $c->{segs_left} } && $c->{due} < $wake;
            $wake = $c->{deadline} if $c->{deadline} < $wake;

            $readers->add($c->{sock});
            $writers->add($c->{sock}) if length $c->{out};
        }

        my ($readable, $writable) = IO::Select->select(
            $readers, $writers, undef, $wake > $now ? $wake - $now : 0);

        my %by_fd = map { fileno($_->{sock}) => $_ } @active;

        for my $sock (@{ $writable // [] }) {
            my $c = $by_fd{ fileno $sock } or next;
            my $n = syswrite $sock, $c->{out};
            if (!defined $n) {
                next if $!{EAGAIN};
                # the server answered early and closed: keep what it said
                $c->{write_error} = "$!";
                $c->{out} = '';
                $c->{segs_left} = [];
                next;
            }
            substr($c->{out}, 0, $n, '');
        }

        for my $c (@active) {
            next if $c->{done} || length $c->{out} || @{ $c->{segs_left} }
                    || $c->{write_error} || $c->{finished_sending}++;
            if ($c->{after} eq 'shutdown') {
                shutdown $c->{sock}, SHUT_WR;
            } elsif ($c->{after} eq 'close') {
                _scripted_close($c);
            }
        }

        for my $sock (@{ $readable // [] }) {
            my $c = $by_fd{ fileno $sock } or next;
            next if $c->{done};
            my $n = sysread $sock, $c->{in}, 65536, length $c->{in};
            next if !defined $n && $!{EAGAIN};
            $c->{read_error} = "$!" unless defined $n;
            _scripted_close($c) unless $n;
        }

        $now = time;
        for my $c (@active) {
            next if $c->{done} || $c->{deadline} > $now;
            $c->{timed_out} = 1;
            _scripted_close($c);
        }

        @active = grep { !$_->{done} } @active;
    }

    for my $c (@$cases) {
        next unless length $c->{in};
        $c->{res} = eval {
            parse_response($c->{in}, $c->{method} // 'GET', 1)
        };
        $c->{parse_error} = $@ if $@;
    }
}

sub _scripted_open {
    my ($c) = @_;

    $c->{in} = '';
    $c->{out} = '';
    $c->{after} //= 'read';
    $c->{segs_left} = [ @{ $c->{segs} } ];
    $c->{due} = time + $c->{segs_left}[0][0];
    $c->{deadline} = time + ($c->{timeout} // 10);

    $c->{sock} = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                       PeerPort => $c->{port},
                                       Proto => 'tcp');
    unless ($c->{sock}) {
        $c->{connect_error} = "$!";
        $c->{done} = 1;
        return;
    }
    $c->{sock}->blocking(0);
}

sub _scripted_close {
    my ($c) = @_;
    close $c->{sock};
    $c->{done} = 1;
}

# What a scripted case got, for a diagnostic: the status and the start of
# the body, and what went wrong.
sub describe_scripted {
    my ($c) = @_;
    my $res = $c->{res};
    my $text = $res ? "status $res->{status}, body "
                      . substr($res->{body} // '', 0, 300)
                    : 'no response';
    $text .= "; $_ $c->{$_}"
        for grep { $c->{$_} } qw(timed_out read_error write_error
                                 connect_error parse_error);
    return $text;
}


# Parses a complete response from $buf; undef while more bytes are needed
# ($eof says none will come).  Interim 1xx responses are skipped.
sub parse_response {
    my ($buf, $method, $eof) = @_;

    my $pos = 0;

    while (1) {
        my $end = index $buf, "\r\n\r\n", $pos;
        return undef if $end < 0;

        my ($status_line, @lines) = split /\r\n/, substr($buf, $pos, $end - $pos);
        my ($status) = $status_line =~ m{^HTTP/\d\.\d (\d{3})}
            or die "bad status line '$status_line'\n";
        $pos = $end + 4;
        next if $status =~ /^1/;

        my %headers;
        for my $line (@lines) {
            my ($name, $value) = $line =~ /^([^:]+):[ \t]*(.*?)[ \t]*$/
                or die "bad header line '$line'\n";
            $name = lc $name;
            $headers{$name} = exists $headers{$name}
                              ? "$headers{$name}, $value" : $value;
        }

        my $body;
        if ($method eq 'HEAD' || $status == 204 || $status == 304) {
            $body = '';

        } elsif (($headers{'transfer-encoding'} // '') =~ /chunked/i) {
            ($body) = parse_chunked($buf, $pos) or return undef;

        } elsif (defined $headers{'content-length'}) {
            my $length = $headers{'content-length'};
            return undef if length($buf) - $pos < $length;
            $body = substr $buf, $pos, $length;

        } else {
            return undef unless $eof;
            $body = substr $buf, $pos;
        }

        return { status => 0 + $status, headers => \%headers, body => $body,
                 raw => $buf };
    }
}

# Parses one request from the start of $$buf and removes it from there;
# undef while more bytes are needed.
sub parse_request {
    my ($buf) = @_;

    my $end = index $$buf, "\r\n\r\n";
    return undef if $end < 0;

    my ($request_line, @lines) = split /\r\n/, substr($$buf, 0, $end);
    my ($method, $uri, $version) = $request_line =~ m{^(\S+) (\S+) HTTP/(\d\.\d)$}
        or die "bad request line '$request_line'\n";

    my @headers = map {
        /^([^:\s]+):[ \t]*(.*?)[ \t]*$/ or die "bad header line '$_'\n";
        [$1, $2]
    } @lines;
    my %header = map { lc $_->[0] => $_->[1] } @headers;

    my $body = '';
    my $next = $end + 4;

    if (($header{'transfer-encoding'} // '') =~ /chunked/i) {
        ($body, $next) = parse_chunked($$buf, $next) or return undef;

    } elsif (defined(my $length = $header{'content-length'})) {
        $length =~ /^\d+$/ or die "bad Content-Length '$length'\n";
        return undef if length($$buf) < $next + $length;
        $body = substr $$buf, $next, $length;
        $next += $length;
    }

    substr($$buf, 0, $next, '');

    my ($path, $query) = split /\?/, $uri, 2;

    return {
        method  => $method,
        uri     => $uri,
        version => $version,
        path    => $path,
        query   => $query // '',
        headers => \@headers,
        header  => \%header,
        body    => $body,
    };
}

# Decodes a chunked body starting at $pos; returns the body and the position
# after the trailer section, or nothing while more bytes are needed.
sub parse_chunked {
    my ($buf, $pos) = @_;

    my $body = '';

    while (1) {
        my $eol = index $buf, "\r\n", $pos;
        return if $eol < 0;

        my ($size) = substr($buf, $pos, $eol - $pos) =~ /^([0-9a-fA-F]+)/
            or die "bad chunk size line\n";
        $size = hex $size;
        $pos = $eol + 2;

        last if $size == 0;

        return if length($buf) < $pos + $size + 2;
        $body .= substr $buf, $pos, $size;
        $pos += $size + 2;
    }

    # trailer fields, up to an empty line
    while (1) {
        my $eol = index $buf, "\r\n", $pos;
        return if $eol < 0;
        my $empty = $eol == $pos;
        $pos = $eol + 2;
        return ($body, $pos) if $empty;
    }
}

1;
