package GmsTest::Stub;

# A prefork HTTP/1.1 server standing in for the services nginx talks to
# (GMS, Elasticsearch).  Each worker runs its own select() loop over all of
# its connections, so idle keep-alive connections from an nginx upstream
# pool and delayed answers never hold up other requests.
#
#   my $s = GmsTest::Stub->start(workers => 4, handler => sub {
#       my ($req) = @_;
#       return [200, ['Content-Type' => 'application/json'], $body, $delay];
#   });
#
# port: the port to listen on (default: one the kernel picks; $s->port).
# $req: method, uri (the raw request target), version, path, query,
# headers ([name, value] pairs as received), header (lowercase name =>
# value, last wins), body.  Content-Length is added to the response unless
# the handler sets it; one with "Connection: close" closes the connection
# once written; $delay (seconds, optional) postpones the answer.
# A handler that dies gets a 500 response.
#
# An answer that waits for something (a long poll): the handler returns a
# code ref instead, which the worker runs again every $WAIT seconds (25
# ms) until it returns the response (the arrayref above; undef: not yet).
# It keeps its own deadline.  Meanwhile the worker's select() loop goes
# on: its other connections are read and answered; the answers behind a
# waiting one on the same connection wait for it (HTTP/1.1's order).
#
# The search cluster's handler, for GmsTest::Edge->start(search => ...) or
# start(handler => ...): GET /_tasks/<task> answered from tasks, and
# anything else with missing:
#
#   search_cluster(tasks => { 'known:1' => [200, $type, $body] },
#                  missing => sub { my ($req, $task) = @_; ... });
#
# An answer is a response as above, a code ref given the request and the
# task (undef: not a _tasks path), or the name of a recorded answer in
# t/fixtures/search-cluster/ (200).  By default known:1 has completed
# ($KNOWN_TASK) and missing is a 404 with '{}'.
#
# Every request is logged, before the handler runs, as a JSON line of
# record($req) so the test process can read them back with requests().
# JSON strings carry bytes: each byte is the code point of the same value.

use strict;
use warnings;

use Fcntl qw(:flock);
use GmsTest ();
use GmsTest::HTTP;
use IO::Select;
use IO::Socket::INET;
use List::Util qw(min);
use POSIX ();
use Time::HiRes qw(time);

# how often a waiting answer (a code ref) is run again, in seconds
my $WAIT = 0.025;

my $JSON_TYPE = ['Content-Type' => 'application/json'];

# a finished reindex, as the search cluster answers GET /_tasks/known:1
our $KNOWN_TASK = '{"completed":true,"task":{"node":"known","id":1,'
                . '"type":"transport","action":"indices:data/write/reindex",'
                . '"start_time_in_millis":1,"cancellable":true,'
                . '"status":{"total":1},"running_time_in_nanos":5}}';

my %REASON = (
    200 => 'OK', 201 => 'Created', 204 => 'No Content',
    301 => 'Moved Permanently', 302 => 'Found', 304 => 'Not Modified',
    400 => 'Bad Request', 401 => 'Unauthorized', 403 => 'Forbidden',
    404 => 'Not Found', 429 => 'Too Many Requests',
    500 => 'Internal Server Error', 502 => 'Bad Gateway',
    503 => 'Service Unavailable', 504 => 'Gateway Timeout',
);


sub start {
    my ($class, %opt) = @_;

    my $handler = $opt{handler} or die "GmsTest::Stub: handler required\n";

    my $self = bless { owner => $$, dir => GmsTest::tempdir(), pids => [] },
                     $class;
    $self->{log} = "$self->{dir}/requests.log";
    GmsTest::write_file($self->{log}, '');

    # binding port 0 right here leaves no window for another process
    my $listen = IO::Socket::INET->new(
        LocalAddr => '127.0.0.1',
        LocalPort => $opt{port} // 0,
        Listen    => 1024,
        ReuseAddr => 1,
        Proto     => 'tcp',
    ) or die "GmsTest::Stub: cannot listen: $!\n";
    $listen->blocking(0);
    $self->{port} = $listen->sockport;

    GmsTest::track($self);

    for (1 .. $opt{workers} // 2) {
        my $pid = fork // die "GmsTest::Stub: fork: $!\n";
        if ($pid == 0) {
            # a seed of its own: workers forked from a parent that drew
            # rand before (File::Temp's names do) would draw the same
            # numbers, and the GraphQL stand-in's tokens made in the same
            # second by two workers would be the same JWT, with one id
            srand();
            _worker($listen, $handler, $self->{log});
        }
        push @{ $self->{pids} }, $pid;
    }

    # $listen is closed here: only the workers keep it, so processes forked
    # later (other stubs) do not inherit it
    return $self;
}

# A stub answering 200 with a JSON description of each request:
# {method, uri, headers: [[name, value]...], header: {lc name: value}, body}.
sub echo {
    my ($class, %opt) = @_;
    return $class->start(%opt, handler => sub {
        my ($req) = @_;
        return [200, ['Content-Type' => 'application/json'],
                GmsTest::json_encode(record($req))];
    });
}

sub search_cluster {
    my (%opt) = @_;

    my $tasks = $opt{tasks} // { 'known:1' => [200, $JSON_TYPE, $KNOWN_TASK] };
    my $missing = $opt{missing} // [404, $JSON_TYPE, '{}'];

    return sub {
        my ($req) = @_;
        my ($task) = $req->{path} =~ m{^/_tasks/([^/]+)\z};
        my $answer = (defined $task ? $tasks->{$task} : undef) // $missing;
        return ref $answer eq 'CODE' ? $answer->($req, $task)
             : ref $answer ? $answer
             : [200, $JSON_TYPE, GmsTest::fixture($answer)];
    };
}

sub record {
    my ($req) = @_;
    return { map { $_ => $req->{$_} } qw(method uri headers header body) };
}

sub port {
    return $_[0]{port};
}

sub requests {
    my ($self) = @_;
    open my $fh, '<', $self->{log} or die "cannot read $self->{log}: $!\n";
    flock $fh, LOCK_SH;
    return [ map { GmsTest::json_decode($_) } <$fh> ];
}

sub clear_requests {
    my ($self) = @_;
    open my $fh, '+<', $self->{log} or die "cannot open $self->{log}: $!\n";
    flock $fh, LOCK_EX;
    truncate $fh, 0;
    close $fh;
}

sub stop {
    my ($self) = @_;
    my @pids = @{ $self->{pids} };
    $self->{pids} = [];
    kill 'TERM', @pids;
    waitpid $_, 0 for @pids;
}

sub DESTROY {
    GmsTest::stop_quietly($_[0]);
}


# Worker process: never returns, and leaves through _exit so that nothing
# inherited from the test process (END blocks, DESTROY of objects owning
# nginx or redis) runs here.
sub _worker {
    my ($listen, $handler, $log) = @_;

    $SIG{PIPE} = 'IGNORE';
    $SIG{TERM} = 'DEFAULT';

    eval { _serve($listen, $handler, $log); 1 } or warn "stub worker: $@";
    POSIX::_exit(0);
}

# Connection state: sock, in (unparsed bytes), out (bytes being written),
# pending (responses not yet due, in order: [due time, bytes], or for one
# that waits [time of its next run, undef, code ref, request]), closing (no
# more requests will be read; drop the connection once all is written).
sub _serve {
    my ($listen, $handler, $log) = @_;

    my %conns;

    my $drop = sub {
        my ($conn) = @_;
        delete $conns{ fileno $conn->{sock} };
        close $conn->{sock};
    };

    while (1) {
        my $now = time;
        my $readers = IO::Select->new($listen);
        my $writers = IO::Select->new;
        my @due;

        for my $conn (values %conns) {
            while (@{ $conn->{pending} } && $conn->{pending}[0][0] <= $now) {
                my $next = $conn->{pending}[0];
                if (!defined $next->[1]) {
                    _rerun($conn, $next, $now);
                    next;
                }
                $conn->{out} .= shift(@{ $conn->{pending} })->[1];
            }
            $readers->add($conn->{sock}) unless $conn->{closing};
            $writers->add($conn->{sock}) if length $conn->{out};
            push @due, $conn->{pending}[0][0] if @{ $conn->{pending} };
        }

        my $timeout = @due ? min(@due) - $now : undef;
        my ($readable, $writable) =
            IO::Select->select($readers, $writers, undef, $timeout);

        for my $sock (@{ $writable // [] }) {
            my $conn = $conns{ fileno $sock } or next;
            my $n = syswrite $sock, $conn->{out};
            if (!defined $n) {
                $drop->($conn) unless $!{EAGAIN};
                next;
            }
            substr($conn->{out}, 0, $n, '');
            $drop->($conn) if $conn->{closing} && !length $conn->{out}
                              && !@{ $conn->{pending} };
        }

        for my $sock (@{ $readable // [] }) {
            if ($sock == $listen) {
                # another worker may have taken the connection already
                my $client = $listen->accept or next;
                $client->blocking(0);
                $conns{ fileno $client } = { sock => $client, in => '',
                                             out => '', pending => [] };
                next;
            }

            my $conn = $conns{ fileno $sock } or next;
            my $n = sysread $sock, $conn->{in}, 65536, length $conn->{in};
            next if !defined $n && $!{EAGAIN};
            if (!$n) {
                $drop->($conn);
                next;
            }

            while (!$conn->{closing}) {
                my $req = eval { GmsTest::HTTP::parse_request(\$conn->{in}) };
                if ($@) {
                    push @{ $conn->{pending} },
                        [0, _response_bytes([400, [], $@], 'GET', 1)];
                    $conn->{closing} = 1;
                    last;
                }
                last unless $req;
                _answer($conn, $req, $handler, $log);
            }
        }
    }
}

sub _answer {
    my ($conn, $req, $handler, $log) = @_;

    _log_request($log, $req);

    my $res = eval { $handler->($req) };
    if (ref $res eq 'CODE') {
        # its first run comes at once, in the loop
        push @{ $conn->{pending} }, [0, undef, $res, $req];
        $conn->{closing} = 1 if _closes($req);
        return;
    }
    push @{ $conn->{pending} }, _response_entry($conn, $req, $res, $@);
}

# A waiting answer's run: its response in its place, or its next run.
sub _rerun {
    my ($conn, $entry, $now) = @_;

    my (undef, undef, $code, $req) = @$entry;
    my $res = eval { $code->() };
    if (!defined $res && !$@) {
        $entry->[0] = $now + $WAIT;
        return;
    }

    # the response takes the entry's place, whatever it is
    @$entry = @{ _response_entry($conn, $req, $res, $@) };
}

sub _closes {
    my ($req) = @_;
    my $connection = lc($req->{header}{connection} // '');
    return $req->{version} eq '1.0' ? $connection !~ /keep-alive/
                                    : $connection =~ /close/;
}

# A handler's response (or its failure, $err) as a pending entry.
sub _response_entry {
    my ($conn, $req, $res, $err) = @_;

    if (ref $res ne 'ARRAY') {
        # the 500 says why; a test that expects it wants no stray line
        # on prove's output, so it is said on stderr only under -v
        my $why = $err || "handler returned no arrayref\n";
        warn "stub handler: $why" if $ENV{TEST_VERBOSE};
        $res = [500, ['Content-Type' => 'text/plain'], $why];
    }

    my $close = _closes($req);

    # an answer saying "Connection: close" is the last on its connection
    my @own = @{ $res->[1] // [] };
    while (my ($name, $value) = splice @own, 0, 2) {
        $close = 1 if lc $name eq 'connection' && $value =~ /close/i;
    }

    $conn->{closing} = 1 if $close;
    return [time + ($res->[3] // 0),
            _response_bytes($res, $req->{method}, $close)];
}

sub _response_bytes {
    my ($res, $method, $close) = @_;

    my ($status, $headers, $body) = @$res;
    my @headers = @{ $headers // [] };
    $body //= '';

    my $out = "HTTP/1.1 $status " . ($REASON{$status} // 'Unknown') . "\r\n";
    my ($has_length, $has_connection);

    while (my ($name, $value) = splice @headers, 0, 2) {
        $out .= "$name: $value\r\n";
        $has_length = 1 if lc $name eq 'content-length';
        $has_connection = 1 if lc $name eq 'connection';
    }

    $out .= 'Content-Length: ' . length($body) . "\r\n" unless $has_length;
    $out .= "Connection: close\r\n" if $close && !$has_connection;

    return "$out\r\n" . ($method eq 'HEAD' ? '' : $body);
}

sub _log_request {
    my ($log, $req) = @_;
    open my $fh, '>>', $log or die "cannot append to $log: $!\n";
    flock $fh, LOCK_EX;
    print $fh GmsTest::json_encode(record($req)), "\n";
    close $fh;
}

1;
