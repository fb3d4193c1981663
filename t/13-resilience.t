#!/usr/bin/perl

# Redis killed and restarted, and nginx reloaded, under a steady request
# loop: no worker dies, every request gets an answer, and the only answers
# are 200 (token found) and 503 (Redis unavailable), never 401 or 500.

use strict;
use warnings;

use Test::More;
use POSIX ();
use Time::HiRes qw(sleep time);
use GmsTest;
use GmsTest::Edge;
use GmsTest::Checks qw(request_rows);

# GET /entities/x with the token steady for $seconds, from a child
# process
sub loop {
    my ($e, $seconds) = @_;
    return request_rows($e->nginx->port, tokens => ['steady'],
                        path => '/entities/x', pause => 0.005,
                        seconds => $seconds);
}

# the statuses $loop saw, in order, once it has ended
sub statuses {
    my ($loop) = @_;
    return [ map { $_->[2] } @{ $loop->{wait}->() } ];
}

sub counts {
    my %c;
    $c{$_}++ for @{ $_[0] };
    return \%c;
}

my $e = GmsTest::Edge->start(timeout => '250ms', workers => 2, persist => 1);
my $n = $e->nginx;
$e->token('steady', actor => 'urn:li:corpuser:alice');

my @workers = sort $n->worker_pids;

# --- Redis killed, then back -------------------------------------------------

my $loop = loop($e, 3);
sleep(0.8);
kill 'KILL', $e->redis->pid;
sleep(1);
$e->redis->start_again;
my $statuses = statuses($loop);

my $c = counts($statuses);
ok($c->{200} && $c->{503}, 'both 200 and 503 seen')
    or diag explain $c;
is_deeply([sort grep { $_ ne '200' && $_ ne '503' } keys %$c], [],
          'nothing but 200 and 503 while Redis died and came back')
    or diag explain $c;
is($statuses->[-1], '200', 'the loop ends on 200s');

ok(GmsTest::wait_until(sub { $e->get('/entities/x', 'steady')->{status} == 200 },
                       2),
   'recovered after Redis returned');
is_deeply([sort $n->worker_pids], \@workers, 'no worker died');

# --- reload with lookups in flight ------------------------------------------

$loop = loop($e, 2.5);
for (1 .. 2) {
    sleep(0.5);
    my $pid = $e->redis->sleep_in_background(0.2);
    sleep(0.05);
    $n->reload;
    waitpid($pid, 0);
}
$statuses = statuses($loop);
$c = counts($statuses);
is_deeply([sort grep { $_ ne '200' && $_ ne '503' } keys %$c], [],
          'every request during the reloads answered, 200 or 503')
    or diag explain $c;
ok($c->{200} > 10, 'mostly 200') or diag explain $c;

# --- an outage does not write one error line per request -------------------

{
    $e->redis->stop;
    my $mark = length $n->error_log;
    my $t0 = time;
    my $count = 0;
    while (time - $t0 < 1.5) {
        $e->get('/entities/x', "outage-$count");
        $count++;
    }
    my @lines = grep { /\[error\].*gms: redis/ }
                split /\n/, substr($n->error_log, $mark);
    # one line a second and worker for requests, one per reconnect attempt
    # (the backoff grows to 1 s): a few dozen at most, not one a request
    ok($count >= 200, "$count requests during the outage");
    ok(@lines <= 30, scalar(@lines) . ' error lines for them')
        or diag(explain(\@lines));
    ok((grep { /\(([1-9]\d*) such lines suppressed\)/ } @lines),
       'with the count of those left out');
    $e->redis->start_again;
}

$n->stop;
is_deeply([$n->bad_log_lines], [],
          'no alert, crash or socket left open in the error log');

done_testing();
