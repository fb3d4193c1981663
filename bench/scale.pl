#!/usr/bin/perl
#
# make bench-scale (issue 28): what the edge costs as the number of tokens
# grows, and under a flood of random ones.
#
#   perl -I t/lib bench/scale.pl
#
# On 127.0.0.1 only, in temporary directories: a real redis-server filled
# by build/gms-token sync from a listing on stdin (pipelined batches, as
# the follower writes them) with BENCH_SCALE_SIZES tokens (1,000, 100,000
# and 1,000,000), a fifth as many users each holding three privileges
# (redis-cli --pipe); a stand-in GMS (an nginx of its own, answering a
# small JSON body); and the measured nginx (one worker, the module, the
# cache zone of the row) driven by wrk (one thread, 50 connections)
# through bench/tokens.lua, which cycles through the row's distinct
# tokens.
#
# Rows, each a fresh measured nginx (the cache starts empty):
#
#   warm N      N tokens, a zone that holds them (the sizing rule below):
#               a pass over every token first, then the measured run;
#   distinct N  N tokens cycled with the documented zone (16m, as
#               gms-edge.conf): more tokens than the zone holds, so the
#               cache keeps evicting (and ttl=30s expires what a cycle
#               of 1,000,000 tokens at 30,000 a second does not reach in
#               time): about a lookup a request;
#   nocache N   the same tokens without gms_token_cache: a Redis lookup a
#               request, front D of make bench;
#   flood       1,000 valid tokens (10 connections) warm in the
#               documented zone while 1,000,000 random ones, never valid,
#               arrive on 40 more: the valid tokens' hits, the flood's
#               lookups.
#
# Per row: requests per second, the worker's CPU time per request, the
# cache's hit ratio (hits over hits and misses, from gms_token_metrics),
# evictions, entries, the worker's RSS before and after; per size,
# Redis's MEMORY USAGE of a token (the mean of 200) and INFO memory's
# used_memory.  Bytes per cached entry: the documented zone divided by
# the entries it held when full (the distinct row of the largest size).
#
# BENCH_SCALE_SIZES="1000 100000" BENCH_SCALE_DURATION=5 (seconds a run)
# to choose.  Exit 1 if a row could not be measured.

use strict;
use warnings;

use Digest::SHA qw(sha256_base64);
use FindBin;
use POSIX ();
use Time::HiRes qw(sleep time);

use GmsTest ();
use GmsTest::Nginx;
use GmsTest::Redis;
use GmsTest::Tool ();

my @SIZES = split ' ', $ENV{BENCH_SCALE_SIZES} // '1000 100000 1000000';
my $DURATION = $ENV{BENCH_SCALE_DURATION} // 5;
my $ZONE = '16m';                        # gms-edge.conf's, the documented
my $FLOOD = 1_000_000;

my $BIN = GmsTest::Tool::bin();
-x $BIN or die "bench-scale: $BIN not built (make tool)\n";
-f GmsTest::module_path()
    or die 'bench-scale: ' . GmsTest::module_path() . " not built (make)\n";
GmsTest::in_path($_) or die "bench-scale: no $_\n"
    for qw(redis-server redis-cli wrk);
delete $ENV{GMS_REDIS_PASSWORD};

my $LUA = "$FindBin::Bin/tokens.lua";
my $dir = GmsTest::tempdir();

my $gms = GmsTest::Nginx->new(workers => 1);
$gms->start(<<'CONF');
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:%%PORT%% backlog=4096;
        location / {
            default_type application/json;
            return 200 '{"value":{"ok":true}}';
        }
    }
CONF

printf "bench-scale: %s tokens, %d s a run, wrk 1 thread 50 connections; "
       . "%s\n", join(', ', map { commas($_) } @SIZES), $DURATION,
       machine();

my (@rows, %redis_mem, $failed);

for my $size (@SIZES) {
    my $redis = GmsTest::Redis->start;
    my $tokens = fill($redis, $size);
    $redis_mem{$size} = redis_memory($redis, $size);

    printf "\n%s tokens in Redis: %s bytes a token (MEMORY USAGE), "
           . "used_memory %s MB\n", commas($size),
           $redis_mem{$size}{per_token}, mb($redis_mem{$size}{used});

    for my $kind (qw(warm distinct nocache)) {
        my $row = eval { measure($redis, $tokens, $size, $kind) };
        if (!$row) {
            warn "bench-scale: $kind $size: $@";
            $failed = 1;
            next;
        }
        push @rows, $row;
        print_row($row);
    }

    $redis->stop;
}

{
    my $redis = GmsTest::Redis->start;
    my $tokens = fill($redis, 1000);
    my $row = eval { flood($redis, $tokens) };
    if ($row) {
        push @rows, $row;
        print_row($row);
    } else {
        warn "bench-scale: flood: $@";
        $failed = 1;
    }
    $redis->stop;
}

$gms->stop;

print "\n";
print_table(\@rows, \%redis_mem);
exit($failed ? 1 : 0);


# Writes $size tokens through gms-token sync (pages of 1,000 as DataHub
# lists them) and their users' privileges; returns the file of tokens,
# one a line, for tokens.lua.
sub fill {
    my ($redis, $size) = @_;

    my $file = "$dir/tokens-$size.txt";
    my $listing = "$dir/listing-$size.json";
    my $users = int($size / 5) || 1;
    my $expires = (time() + 86400) * 1000;

    open my $t, '>', $file or die "$file: $!\n";
    open my $l, '>', $listing or die "$listing: $!\n";

    for (my $start = 0; $start < $size; $start += 1000) {
        my @page;
        for my $i ($start .. $start + 999) {
            last if $i >= $size;
            # 54 bytes, as make bench's tokens
            my $token = sprintf 'bench-scale-%042d', $i;
            print $t "$token\n";
            push @page, sprintf '{"id":"%s","actorUrn":"urn:li:corpuser:'
                . 'user%d","expiresAt":%d,"type":"PERSONAL"}',
                id($token), $i % $users, $expires;
        }
        printf $l '{"data":{"listAccessTokens":{"start":%d,"count":%d,'
            . '"total":%d,"tokens":[%s]}}}' . "\n", $start, scalar @page,
            $size, join ',', @page;
    }
    close $t;
    close $l;

    my $started = time;
    my $out = "$dir/sync.out";
    my $rc = run_stdin([$BIN, 'sync', '--redis', $redis->address],
                       $out, $listing);
    die "bench-scale: gms-token sync failed ($rc): "
        . GmsTest::slurp($out) if $rc;
    my $sync = time - $started;

    # the users' sets, pipelined
    my $pipe = "$dir/users-$size.resp";
    open my $p, '>', $pipe or die "$pipe: $!\n";
    for my $u (0 .. $users - 1) {
        print $p resp('SADD', "gms:actor:urn:li:corpuser:user$u",
                      'GET_ES_TASK_STATUS_PRIVILEGE', 'MANAGE_ACCESS_TOKENS',
                      'VIEW_ANALYTICS');
    }
    close $p;
    $rc = run_stdin([GmsTest::redis_bin('cli'), '-p', $redis->port, '--pipe'],
                    "$dir/pipe.out", $pipe);
    die "bench-scale: redis-cli --pipe failed\n" if $rc;

    unlink $listing, $pipe;
    printf "filled %s tokens (gms-token sync, %.1f s) and %s users\n",
           commas($size), $sync, commas($users);

    return $file;
}

# GmsTest::run with stdin from a file
sub run_stdin {
    my ($cmd, $output, $input) = @_;

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        open STDIN, '<', $input or POSIX::_exit(127);
        open STDOUT, '>', $output or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT;
        exec { $cmd->[0] } @$cmd or POSIX::_exit(127);
    }
    waitpid $pid, 0;
    return $? >> 8;
}

sub id {
    my ($token) = @_;
    # the bench's salt is empty, as make bench's
    my $id = sha256_base64($token);
    $id .= '=' while length($id) % 4;
    return $id;
}

sub resp {
    return '*' . @_ . "\r\n" . join '', map { '$' . length($_) . "\r\n$_\r\n" } @_;
}

sub redis_memory {
    my ($redis, $size) = @_;

    my ($sum, $n) = (0, 0);
    for (1 .. 200) {
        my $key = $redis->cmd('RANDOMKEY') // next;
        next unless $key =~ /^gms:token:/;
        $sum += $redis->cmd(MEMORY => 'USAGE', $key);
        $n++;
    }
    my ($used) = $redis->cmd(INFO => 'memory') =~ /^used_memory:(\d+)/m;

    return { per_token => $n ? int($sum / $n + 0.5) : 0, used => $used };
}

# The zone for $size warm tokens by the sizing rule in docs/operations.md:
# 256 bytes an entry, a quarter kept for negative entries, 1 MB spare.
sub zone_for {
    my ($size) = @_;
    my $mb = int($size * 256 / 0.75 / 1048576 + 0.999) + 1;
    $mb = 16 if $mb < 16;
    return "${mb}m";
}

sub edge {
    my (%opt) = @_;

    my $cache = $opt{zone}
              ? "gms_token_cache zone=tokens:$opt{zone} "
                . 'ttl=' . ($opt{ttl} // '30s') . ' negative_ttl=5s;'
              : '';
    my $n = GmsTest::Nginx->new(workers => 1, log_level => 'warn');
    $n->start(<<"CONF", vars => { GMS => $gms->port });
    access_log off;
    keepalive_requests 1000000;
    gms_token_redis $opt{redis};
    gms_token_redis_timeout 1s;
    gms_token_key_prefix gms:;
    gms_token_salt "";
    $cache

    upstream gms {
        server 127.0.0.1:%%GMS%%;
        keepalive 64;
        keepalive_requests 1000000;
    }

    server {
        listen 127.0.0.1:%%PORT%% backlog=4096;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-DataHub-Actor \$gms_token_actor;
        gms_token_auth on;

        location / {
            proxy_pass http://gms;
        }

        location = /metrics {
            gms_token_auth off;
            gms_token_metrics;
        }
    }
CONF
    return $n;
}

sub measure {
    my ($redis, $tokens, $size, $kind) = @_;

    my $zone = $kind eq 'warm' ? zone_for($size)
             : $kind eq 'distinct' ? $ZONE : undef;
    # warm: the entries outlive a pass over every token (a million at
    # 10,000 a second take 100 s); else the shipped ttl
    my $n = edge(redis => $redis->address, zone => $zone,
                 ttl => $kind eq 'warm' ? '1h' : '30s');
    my ($worker) = $n->worker_pids;
    my $url = 'http://127.0.0.1:' . $n->port . '/entities/x';

    # warm: every token once before the measured run; else 2 s of
    # warm-up, the measured run going on from the token after
    my $warm = $kind eq 'warm' ? warm_pass($url, $tokens, $size)
                               : wrk($url, $tokens, 2, 50)->{requests};

    my $rss0 = rss($worker);
    my $m0 = metrics($n);
    my $c0 = cpu_ticks($worker);
    my $w = wrk($url, $tokens, $DURATION, 50,
                $kind eq 'warm' ? 0 : $warm);
    my $c1 = cpu_ticks($worker);
    my $m1 = metrics($n);
    my $rss1 = rss($worker);

    $n->stop;

    my $hits = delta($m0, $m1, 'hits_positive') + delta($m0, $m1,
                                                         'hits_negative');
    my $misses = delta($m0, $m1, 'misses');

    return {
        what     => "$kind " . commas($size),
        zone     => $zone // 'none',
        rps      => $w->{rps},
        us       => $w->{requests}
                    ? ($c1 - $c0) / clk_tck() * 1e6 / $w->{requests} : 0,
        non2xx   => $w->{non2xx},
        hit      => $zone && $hits + $misses
                    ? $hits / ($hits + $misses) : undef,
        lookups  => $w->{requests}
                    ? delta($m0, $m1, 'lookups') / $w->{requests} : 0,
        evicted  => $zone ? delta($m0, $m1, 'evicted_positive')
                            + delta($m0, $m1, 'evicted_negative') : undef,
        entries  => $zone ? $m1->{entries_positive} : undef,
        rss      => [$rss0, $rss1],
        size     => $size,
        kind     => $kind,
    };
}

# Every one of $size tokens asked once (and so cached), in passes of 2 s
# each going on where the last stopped; returns the requests made.
sub warm_pass {
    my ($url, $tokens, $size) = @_;

    my $done = 0;
    while ($done < $size) {
        $done += wrk($url, $tokens, 2, 50, $done)->{requests};
    }
    return $done;
}

# 1,000 valid tokens warm while a million random ones arrive
sub flood {
    my ($redis, $tokens) = @_;

    my $random = "$dir/random.txt";
    open my $f, '>', $random or die "$random: $!\n";
    printf $f "flood-%048d\n", $_ for 1 .. $FLOOD;
    close $f;

    my $n = edge(redis => $redis->address, zone => $ZONE);
    my ($worker) = $n->worker_pids;
    my $url = 'http://127.0.0.1:' . $n->port . '/entities/x';

    wrk($url, $tokens, 2, 10);

    my $rss0 = rss($worker);
    my $m0 = metrics($n);
    my $c0 = cpu_ticks($worker);

    my $pid = fork // die "fork: $!\n";
    if ($pid == 0) {
        my $w = wrk($url, $random, $DURATION, 40);
        GmsTest::write_file("$dir/flood.res", "$w->{requests} $w->{non2xx}");
        POSIX::_exit(0);
    }
    my $valid = wrk($url, $tokens, $DURATION, 10);
    waitpid $pid, 0;

    my $c1 = cpu_ticks($worker);
    my $m1 = metrics($n);
    my $rss1 = rss($worker);

    # and the valid tokens once more on their own, after the flood
    my $after = wrk($url, $tokens, 2, 10);
    my $m2 = metrics($n);
    $n->stop;

    my ($flooded, $refused) = split ' ', GmsTest::slurp("$dir/flood.res");
    my $all = $valid->{requests} + $flooded;

    return {
        what     => 'flood: 1,000 valid + 1,000,000 random',
        zone     => $ZONE,
        rps      => $all / $DURATION,
        us       => $all ? ($c1 - $c0) / clk_tck() * 1e6 / $all : 0,
        non2xx   => $valid->{non2xx},
        # the valid tokens' hits: positive hits and "ok" are theirs alone
        hit      => ratio(delta($m0, $m1, 'hits_positive'),
                          delta($m0, $m1, 'ok')),
        hit_after => ratio(delta($m1, $m2, 'hits_positive'),
                           delta($m1, $m2, 'ok')),
        # what the valid tokens miss is theirs: the rest is the flood's
        lookups  => ratio(delta($m0, $m1, 'lookups')
                          - (delta($m0, $m1, 'ok')
                             - delta($m0, $m1, 'hits_positive')),
                          delta($m0, $m1, 'misses')
                          + delta($m0, $m1, 'hits_negative')
                          - (delta($m0, $m1, 'ok')
                             - delta($m0, $m1, 'hits_positive'))) // 0,
        flooded  => $flooded,
        refused  => $refused,
        evicted  => delta($m0, $m1, 'evicted_positive')
                    + delta($m0, $m1, 'evicted_negative'),
        evicted_positive => delta($m0, $m1, 'evicted_positive'),
        entries  => $m1->{entries_positive},
        negative => $m1->{entries_negative},
        rss      => [$rss0, $rss1],
        kind     => 'flood',
    };
}

# wrk over the tokens of $tokens, from line $first (0)
sub wrk {
    my ($url, $tokens, $seconds, $connections, $first) = @_;

    my $out = "$dir/wrk-$$.out";
    unlink $out;                # GmsTest::run appends
    GmsTest::run(['wrk', '-t1', "-c$connections", "-d${seconds}s",
                  '--timeout', '5s', '-s', $LUA, $url, '--', $tokens,
                  $first // 0],
                 $out) == 0 or die "wrk failed: " . GmsTest::slurp($out);
    my $text = GmsTest::slurp($out);

    my ($requests) = $text =~ /(\d+) requests in/
        or die "wrk: no result:\n$text";
    my ($non2xx) = $text =~ /Non-2xx or 3xx responses: (\d+)/;
    my ($rps) = $text =~ /Requests\/sec:\s+([\d.]+)/;

    return { requests => $requests, rps => $rps, non2xx => $non2xx // 0 };
}

sub metrics {
    my ($n) = @_;

    my $text = $n->http(GET => '/metrics')->{body} // '';
    my %m;
    my %series = (
        hits_positive    => qr/^gms_token_cache_hits_total\{kind="positive"\} (\d+)/m,
        hits_negative    => qr/^gms_token_cache_hits_total\{kind="negative"\} (\d+)/m,
        misses           => qr/^gms_token_cache_misses_total (\d+)/m,
        lookups          => qr/^gms_redis_lookups_total (\d+)/m,
        evicted_positive => qr/^gms_token_cache_evictions_total\{kind="positive"\} (\d+)/m,
        evicted_negative => qr/^gms_token_cache_evictions_total\{kind="negative"\} (\d+)/m,
        entries_positive => qr/^gms_token_cache_entries\{kind="positive"\} (\d+)/m,
        entries_negative => qr/^gms_token_cache_entries\{kind="negative"\} (\d+)/m,
        ok               => qr/^gms_token_requests_total\{result="ok"\} (\d+)/m,
    );
    for my $k (keys %series) {
        $m{$k} = $text =~ $series{$k} ? $1 : 0;
    }
    return \%m;
}

sub ratio {
    my ($a, $b) = @_;
    return $b ? $a / $b : undef;
}

sub delta {
    my ($a, $b, $k) = @_;
    return ($b->{$k} // 0) - ($a->{$k} // 0);
}

sub cpu_ticks {
    my ($pid) = @_;
    my $stat = GmsTest::slurp("/proc/$pid/stat");
    $stat =~ s/^.*\)\s+//s;
    my @f = split ' ', $stat;
    return $f[11] + $f[12];
}

sub rss {
    my ($pid) = @_;
    my ($kb) = GmsTest::slurp("/proc/$pid/status") =~ /^VmRSS:\s+(\d+)/m;
    return $kb // 0;
}

sub clk_tck { POSIX::sysconf(POSIX::_SC_CLK_TCK()) || 100 }

sub machine {
    my ($model) = GmsTest::slurp('/proc/cpuinfo') =~ /^model name\s*:\s*(.*)$/m;
    my $cores = () = GmsTest::slurp('/proc/cpuinfo') =~ /^processor/mg;
    return "$cores cores, " . ($model // 'unknown CPU');
}

sub print_row {
    my ($r) = @_;
    printf "%-40s zone %-5s %8.0f req/s %6.1f us/req hit %s lookups/req "
           . "%.3f evicted %s entries %s rss %s->%s MB%s\n",
           $r->{what}, $r->{zone}, $r->{rps}, $r->{us},
           defined $r->{hit} ? sprintf('%.1f%%', 100 * $r->{hit}) : '-',
           $r->{lookups}, $r->{evicted} // '-', $r->{entries} // '-',
           mb($r->{rss}[0] * 1024), mb($r->{rss}[1] * 1024),
           $r->{non2xx} && $r->{kind} ne 'flood'
               ? " (non-2xx: $r->{non2xx})" : '';
}

sub print_table {
    my ($rows, $mem) = @_;

    print "| row | zone | req/s | µs/req | hit ratio | Redis lookups/req "
        . "| evictions | entries | worker RSS before, after |\n";
    print "|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
    for my $r (@$rows) {
        printf "| %s | %s | %s | %.1f | %s | %.3f | %s | %s | %s, %s MB |\n",
               $r->{what}, $r->{zone}, commas(int $r->{rps}), $r->{us},
               defined $r->{hit} ? sprintf('%.1f%%', 100 * $r->{hit}) : '',
               $r->{lookups}, defined $r->{evicted} ? commas($r->{evicted})
                                                    : '',
               defined $r->{entries} ? commas($r->{entries}) : '',
               mb($r->{rss}[0] * 1024), mb($r->{rss}[1] * 1024);
    }

    print "\n| tokens | Redis MEMORY USAGE a token | used_memory |\n";
    print "|--:|--:|--:|\n";
    printf "| %s | %d bytes | %s MB |\n", commas($_), $mem->{$_}{per_token},
           mb($mem->{$_}{used}) for sort { $a <=> $b } keys %$mem;

    my ($full) = grep { $_->{kind} eq 'distinct' && $_->{evicted} }
                 reverse @$rows;
    printf "\nbytes per cached entry: %s zone / %s entries when full = %d\n",
           $ZONE, commas($full->{entries}),
           16 * 1048576 / $full->{entries}
        if $full && $full->{entries};

    my %by = map { ("$_->{kind} $_->{size}" => $_) }
             grep { $_->{size} } @$rows;
    my ($c) = $by{'warm 1000'};
    for my $size (@SIZES) {
        my $w = $by{"warm $size"};
        my $d = $by{"distinct $size"};
        my $nc = $by{"nocache $size"};
        printf "warm %s / warm 1,000 CPU: %.2f (goal <= 1.10 for 100,000)\n",
               commas($size), $w->{us} / $c->{us}
            if $c && $w && $size != 1000;
        printf "distinct %s / nocache %s CPU: %.2f (goal <= 1.10 for "
               . "1,000,000)\n", commas($size), commas($size),
               $d->{us} / $nc->{us}
            if $d && $nc && $nc->{us};
    }
    my ($fl) = grep { $_->{kind} eq 'flood' } @$rows;
    printf "flood: valid tokens' hit ratio %.2f%% during, %.2f%% after "
           . "(goal > 99%%); %s random requests, %.3f Redis lookups each; "
           . "positive entries evicted: %d\n",
           100 * $fl->{hit}, 100 * $fl->{hit_after}, commas($fl->{flooded}),
           $fl->{lookups}, $fl->{evicted_positive}
        if $fl;
}

sub mb {
    return sprintf '%.1f', ($_[0] // 0) / 1048576;
}

sub commas {
    my $n = reverse shift;
    $n =~ s/(\d{3})(?=\d)/$1,/g;
    return scalar reverse $n;
}
