#!/usr/bin/perl

# Tests for the test harness itself (t/lib/GmsTest*), without the module:
# if these fail, no other test result can be trusted.

use strict;
use warnings;

use Digest::SHA qw(sha256_base64);
use File::Spec ();
use FindBin;
use IO::Select;
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(time);

use GmsTest;
use GmsTest::Certs;
use GmsTest::DNS;
use GmsTest::FakeRedis;
use GmsTest::Sentinel;

GmsTest::need_nginx();


subtest 'utilities' => sub {
    my @ports = map { GmsTest::free_port() } 1 .. 50;
    my %seen;
    is(scalar(grep { !$seen{$_}++ } @ports), 50, 'free_port never repeats');

    # prove -j: another test process neither gets these ports nor takes
    # their locks, and outgoing connections are never given them
    my ($low) = GmsTest::slurp('/proc/sys/net/ipv4/ip_local_port_range')
                =~ /^\s*(\d+)/;
    is(scalar(grep { $_ >= ($low // 32768) } @ports), 0,
       'free_port: below the ephemeral range');
    my $dir = File::Spec->tmpdir . '/gms-test-ports';
    my $script = 'use Fcntl qw(:flock); my $n = 0; for (@ARGV) {'
               . ' open my $fh, "<", $_ or next;'
               . ' $n++ unless flock($fh, LOCK_EX | LOCK_NB) } print $n';
    open my $other, '-|', $^X, '-e', $script, map { "$dir/$_" } @ports
        or die "perl: $!\n";
    is(scalar(<$other>), '50', 'free_port: each port locked for the test');
    close $other;

    {
        local $ENV{GMS_MODULE} = '/x/y.so';
        is(GmsTest::module_path(), '/x/y.so', 'GMS_MODULE overrides module path');
    }
    {
        local $ENV{GMS_MODULE};
        like(GmsTest::module_path(),
             qr{/build/nginx/objs/ngx_http_gms_module\.so$},
             'default module path');
    }

    is(GmsTest::json_encode({ b => 1, a => [1, 'x', undef] }),
       '{"a":[1,"x",null],"b":1}', 'json_encode is canonical');
    is_deeply(GmsTest::json_decode('{"a":[1,null],"s":"\u00e9"}'),
              { a => [1, undef], s => "\x{e9}" }, 'json_decode');

    is(GmsTest::sha256_b64('abc'),
       'ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=', 'sha256_b64 abc');
    is(GmsTest::sha256_b64(''),
       '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=', 'sha256_b64 empty');
    my $binary = join '', map { chr } 0 .. 255;
    is(GmsTest::sha256_b64($binary), sha256_base64($binary) . '=',
       'sha256_b64 binary agrees with Digest::SHA');

    is(GmsTest::wait_until(sub { 42 }), 42, 'wait_until returns the value');
    my $t0 = time;
    ok(!GmsTest::wait_until(sub { 0 }, 0.3), 'wait_until times out');
    cmp_ok(time - $t0, '>=', 0.3, 'after the timeout');
};


subtest 'redis' => sub {
    GmsTest::need_redis();

    my $r = GmsTest::Redis->start(password => 'sekret');
    ok($r->pid, 'redis-server started');
    is($r->cmd('PING'), 'PONG', 'PING');

    # the server REDIS_SERVER names (make test-matrix: valkey-server) is
    # the one running: its --version is the version INFO reports (Valkey
    # reports valkey_version beside a redis_version of its own)
    my $bin = GmsTest::redis_bin('server');
    my $out = GmsTest::scratch_dir() . '/server-version.out';
    GmsTest::run([$bin, '--version'], $out);
    my ($want) = GmsTest::slurp($out) =~ /\bv=(\S+)/;
    my $info = $r->cmd(INFO => 'server');
    my ($got) = $info =~ /^valkey_version:(\S+)/m;
    ($got) = $info =~ /^redis_version:(\S+)/m unless defined $got;
    is($got, $want, "the server running is ${bin}'s ("
                    . ($want // '?') . ')');

    my $value = "a\r\nb\0c\xff";
    is($r->cmd(SET => 'k', $value), 'OK', 'SET simple string reply');
    is($r->cmd(GET => 'k'), $value, 'GET binary-safe bulk string');
    is($r->cmd(GET => 'missing'), undef, 'nil is undef');
    is($r->cmd(INCR => 'n'), 1, 'integer reply');
    is($r->cmd(RPUSH => 'l', 'a', 'b'), 2, 'RPUSH');
    is_deeply($r->cmd(LRANGE => 'l', 0, -1), ['a', 'b'], 'array reply');

    my $err = $r->cmd('NOSUCHCMD');
    isa_ok($err, 'GmsTest::Redis::Error');
    ok($err->is_error, 'is_error');
    like($err->message, qr/^ERR unknown command/, 'error message');
    like("$err", qr/^ERR unknown command/, 'error stringifies to message');

    $r->cmd('MULTI');
    $r->cmd(SET => 's', 'x');
    $r->cmd(INCR => 's');
    my $exec = $r->cmd('EXEC');
    is($exec->[0], 'OK', 'nested reply');
    ok(ref $exec->[1] && $exec->[1]->is_error, 'nested error reply');

    my $plain = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $r->port);
    print $plain "PING\r\n";
    like(scalar <$plain>, qr/^-NOAUTH/, 'password required');
    close $plain;

    is($r->cmd('QUIT'), 'OK', 'QUIT');
    is($r->cmd(GET => 'k'), $value, 'reconnects after the server closed');

    my ($port, $pid) = ($r->port, $r->pid);
    $r->start_again;
    is($r->port, $port, 'start_again: same port');
    isnt($r->pid, $pid, 'start_again: new process');
    ok(!kill(0, $pid), 'old process gone');
    is($r->cmd(GET => 'k'), undef, 'start_again: data gone');
    is($r->cmd('PING'), 'PONG', 'start_again: password still required');

    $pid = $r->pid;
    $r->stop;
    ok(!kill(0, $pid), 'stop');
    ok(!eval { $r->cmd('PING'); 1 }, 'cmd dies when redis is down');
    like($@, qr/cannot connect/, 'with a message');
};


subtest 'echo stub' => sub {
    my $s = GmsTest::Stub->echo(workers => 2);
    my $port = $s->port;

    my $body = "a=1&b=\0\xff\r\n";
    my $res = GmsTest::HTTP::request($port, POST => '/gms/check?x=1',
        [['X-Dup', 'one'], ['x-dup', 'two'], ['X-MiXed', 'Case']], $body);
    is($res->{status}, 200, 'POST');
    is($res->{headers}{'content-type'}, 'application/json', 'content type');
    my $echo = GmsTest::json_decode($res->{body});
    is($echo->{method}, 'POST', 'method');
    is($echo->{body}, $body, 'body byte for byte');
    is_deeply([ grep { $_->[0] =~ /^x-/i } @{ $echo->{headers} } ],
              [['X-Dup', 'one'], ['x-dup', 'two'], ['X-MiXed', 'Case']],
              'headers in order, names as sent');
    is($echo->{header}{'x-dup'}, 'two', 'header hash: last wins');

    $res = GmsTest::HTTP::request($port, PUT => '/chunked',
        { 'Transfer-Encoding' => 'chunked' },
        "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
    is(GmsTest::json_decode($res->{body})->{body}, 'hello world',
       'chunked request body');

    my $uri = '/a%2Fb/..%2F./c?q=%2F%20x&y';
    $res = GmsTest::HTTP::request($port, GET => $uri);
    is(GmsTest::json_decode($res->{body})->{uri}, $uri, 'uri byte for byte');

    my $reqs = $s->requests;
    is_deeply([ map { "$_->{method} $_->{uri}" } @$reqs ],
              ['POST /gms/check?x=1', 'PUT /chunked', "GET $uri"],
              'requests recorded in order');
    is($reqs->[0]{body}, $body, 'recorded body');
    is($reqs->[0]{header}{'x-mixed'}, 'Case', 'recorded header hash');
    is_deeply($reqs->[2]{headers}, [['Host', 'localhost'],
              ['Connection', 'close']], 'recorded header list');

    $s->clear_requests;
    is_deeply($s->requests, [], 'clear_requests');

    my $raw = GmsTest::HTTP::raw($port,
        "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
        . "GET /2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    my @uris = $raw =~ /"uri":"([^"]+)"/g;
    is_deeply(\@uris, ['/1', '/2'], 'keep-alive, pipelined');
    like($raw, qr/Connection: close\r\n\r\n[^\r]*"uri":"\/2"[^\r]*\z/,
         'closed after Connection: close');

    like(GmsTest::HTTP::raw($port, "nonsense\r\n\r\n"), qr{^HTTP/1.1 400 },
         'bad request');

    $s->stop;
    ok(!IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port),
       'stop closes the port');
};


subtest 'custom stub: large, slow, failing' => sub {
    my $big = join '', map { chr(65 + $_ % 26) } 1 .. 5 * 1024 * 1024;

    my $s = GmsTest::Stub->start(workers => 1, handler => sub {
        my ($req) = @_;
        return [200, ['Content-Type' => 'text/plain'], $big]
            if $req->{path} eq '/big';
        return [200, [], "slow $req->{query}", 0.5]
            if $req->{path} eq '/slow';
        die "boom\n" if $req->{path} eq '/die';
        return [404, ['X-Path' => $req->{path}], 'no'];
    });

    my $res = GmsTest::HTTP::request($s->port, GET => '/big', undef, undef,
                                      timeout => 60);
    is($res->{status}, 200, 'large response');
    ok($res->{body} eq $big, '5 MB body intact');

    # one worker serves all ten at once
    my $t0 = time;
    my $all = GmsTest::HTTP::parallel($s->port,
                                      [ map { [GET => "/slow?$_"] } 1 .. 10 ]);
    my $elapsed = time - $t0;
    is_deeply([ map { $_->{body} } @$all ], [ map { "slow $_" } 1 .. 10 ],
              'delayed responses in order');
    cmp_ok($elapsed, '>=', 0.5, 'delay applied');
    cmp_ok($elapsed, '<', 4.5, 'delays overlap (in turn: 5 s)');

    $res = GmsTest::HTTP::request($s->port, GET => '/die');
    is($res->{status}, 500, 'handler died: 500');
    like($res->{body}, qr/boom/, 'with the reason');

    $res = GmsTest::HTTP::request($s->port, HEAD => '/nothing');
    is($res->{status}, 404, 'HEAD status');
    is($res->{headers}{'x-path'}, '/nothing', 'handler headers');
    is($res->{body}, '', 'HEAD has no body');

    $res = GmsTest::HTTP::request($s->port, GET => '/slow', {}, undef,
                                  timeout => 0.2);
    is($res->{status}, undef, 'client timeout');
    is($res->{error}, 'timeout', 'reported');
};


subtest 'nginx' => sub {
    my $stub = GmsTest::Stub->echo;
    my $slow = GmsTest::Stub->start(workers => 1, handler => sub {
        return [200, [], 'slow', 0.5];
    });

    my $conf = <<'EOF';
    upstream stub_pool {
        server 127.0.0.1:%%STUB%%;
        keepalive 8;
    }

    server {
        listen 127.0.0.1:%%PORT%%;

        location / { return 200 "hi"; }
        location /dir { return 200 "%%TESTDIR%%"; }
        location /gms/ { proxy_pass http://127.0.0.1:%%STUB%%; }
        location /slow { proxy_pass http://127.0.0.1:%%SLOW%%; }
        location /pool/ {
            proxy_pass http://stub_pool;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /chunked {
            sub_filter_types text/plain;
            sub_filter x y;
            return 200 "hix";
        }
    }
EOF

    my $n = GmsTest::Nginx->new(no_module => 1);
    $n->start($conf, workers => 2,
              vars => { STUB => $stub->port, SLOW => $slow->port });

    my $conf_text = GmsTest::slurp($n->dir . '/nginx.conf');
    unlike($conf_text, qr/load_module/, 'no_module');
    like($conf_text, qr/^worker_processes 2;$/m, 'workers');

    ok(kill(0, $n->master_pid), 'master running');
    is(scalar(my @w = $n->worker_pids), 2, 'two workers');

    my $res = $n->http(GET => '/');
    is($res->{status}, 200, 'http status');
    is($res->{body}, 'hi', 'http body');
    is($res->{headers}{'content-length'}, 2, 'http headers');
    like($res->{raw}, qr{^HTTP/1.1 200 OK\r\n}, 'raw response kept');

    is($n->http(GET => '/dir')->{body}, $n->dir, '%%TESTDIR%%');

    $res = $n->http(GET => '/chunked');
    is($res->{headers}{'transfer-encoding'}, 'chunked', 'chunked response');
    is($res->{body}, 'hiy', 'chunked response body');

    is($n->http(HEAD => '/')->{body}, '', 'HEAD');

    my $uri = '/gms/a%2Fb/../c?x=%2F';
    $res = $n->http(GET => $uri, [['X-A', '1'], ['X-A', '2']]);
    my $echo = GmsTest::json_decode($res->{body});
    is($echo->{uri}, $uri, 'request target passed byte for byte');
    is_deeply([ grep { $_->[0] eq 'X-A' } @{ $echo->{headers} } ],
              [['X-A', '1'], ['X-A', '2']], 'duplicate headers sent');

    like($n->raw("GET / HTTP/1.0\r\n\r\n"), qr{^HTTP/1.1 200 OK\r\n.*\r\n\r\nhi\z}s,
         'raw');
    like($n->raw("nonsense\r\n\r\n"), qr{^HTTP/1.1 400 }, 'raw bad request');

    my $all = $n->parallel([ map { [GET => "/?$_"] } 1 .. 50 ]);
    is(scalar(grep { $_->{status} == 200 && $_->{body} eq 'hi' } @$all), 50,
       '50 parallel requests');

    # idle connections kept by nginx must not hold up the stub's workers
    for my $round (1 .. 3) {
        $all = $n->parallel([ map { [GET => "/pool/$round/$_"] } 1 .. 20 ],
                            timeout => 3);
        is(scalar(grep { ($_->{status} // 0) == 200 } @$all), 20,
           "keep-alive upstream round $round");
    }

    my $t0 = time;
    $all = $n->parallel([ map { [GET => '/slow'] } 1 .. 20 ]);
    is(scalar(grep { ($_->{body} // '') eq 'slow' } @$all), 20,
       '20 parallel slow requests');
    cmp_ok(time - $t0, '<', 2, 'served concurrently');

    my @old = $n->worker_pids;
    $n->reload;
    my @new = $n->worker_pids;
    is(scalar @new, 2, 'reload: two workers');
    ok(!grep({ my $o = $_; grep { $_ == $o } @new } @old), 'reload: new workers');
    is($n->http(GET => '/')->{body}, 'hi', 'serves after reload');

    $n->reload(<<'EOF');
    server {
        listen 127.0.0.1:%%PORT%%;
        location / { return 200 "bye"; }
    }
EOF
    is($n->http(GET => '/')->{body}, 'bye', 'reload with new configuration');

    my $master = $n->master_pid;
    $n->stop;
    ok(GmsTest::process_gone($master, 0), 'stopped');
    is($n->http(GET => '/')->{status}, undef, 'port closed');
    like($n->error_log, qr/\[notice\].*reconfiguring/, 'error_log');
    is_deeply([$n->bad_log_lines], [], 'no alerts');

    like($n->start($conf, vars => { STUB => 1, SLOW => 1 }), qr/^GmsTest::Nginx=/,
         'start again after stop');
    $n->stop;
};


subtest 'nginx failures and modes' => sub {
    my $n = GmsTest::Nginx->new;
    my $text = $n->start("bogus_directive;", no_module => 1, expect_fail => 1);
    like($text, qr/unknown directive "bogus_directive"/, 'expect_fail');
    ok(!$n->master_pid, 'not running');

    ok(!eval { $n->start('return 200 "%%NOPE%%";', no_module => 1); 1 },
       'unknown placeholder');
    like($@, qr/no value for %%NOPE%%/, 'is reported');

    $text = GmsTest::Nginx->new->start("location / {}", no_module => 1,
                                       expect_fail => 1);
    like($text, qr/"location" directive is not allowed here/, 'bad config');

    my $conf = 'server { listen 127.0.0.1:%%PORT%%; location / { return 200 "one"; } }';

    $n = GmsTest::Nginx->new(no_module => 1);
    $n->start($conf, master => 0);
    my $conf_text = GmsTest::slurp($n->dir . '/nginx.conf');
    like($conf_text, qr/^master_process off;\ndaemon off;$/m, 'master => 0');
    is($n->http(GET => '/')->{body}, 'one', 'single process serves');
    is_deeply([$n->worker_pids], [], 'no workers');
    my $pid = $n->master_pid;
    $n->stop;
    ok(!kill(0, $pid), 'single process stopped and reaped');
    is_deeply([$n->bad_log_lines], [], 'no alerts');

    $n = GmsTest::Nginx->new(no_module => 1);
    $n->start($conf);
    my ($worker) = $n->worker_pids;
    ok($worker, 'worker running after start');
    kill 'KILL', $worker if $worker;
    ok(GmsTest::wait_until(sub { $n->bad_log_lines }, 5),
       'crashed worker detected');
    like(join("\n", $n->bad_log_lines), qr/exited on signal 9/, 'by bad_log_lines');
    $n->stop;

    my ($rc, $out) = GmsTest::nginx_t(<<'EOF');
error_log %%TESTDIR%%/t.log;
events {}
http { server { location / { return 204; } } }
EOF
    is($rc, 0, 'nginx_t ok');
    like($out, qr/syntax is ok/, 'nginx_t output');

    ($rc, $out) = GmsTest::nginx_t("events {}\nhttp { bogus; }\n");
    is($rc, 1, 'nginx_t failure');
    like($out, qr/unknown directive "bogus"/, 'nginx_t error output');
};


subtest 'certificates' => sub {
    my $c = GmsTest::Certs->new;
    ok(-s $c->{$_}, "$_ made") for qw(ca ca_key server_cert server_key
                                      client_cert client_key wrong_ca);
    is(GmsTest::Certs->new, $c, 'one set per test file');

    my $out = GmsTest::scratch_dir() . '/verify.out';
    is(GmsTest::run(['openssl', 'verify', '-CAfile', $c->{ca},
                     $c->{server_cert}, $c->{client_cert}], $out), 0,
       'server and client certificates signed by the CA');
    isnt(GmsTest::run(['openssl', 'verify', '-CAfile', $c->{wrong_ca},
                       $c->{server_cert}], $out), 0,
         'not by the wrong CA');

    unlink $out;
    GmsTest::run(['openssl', 'x509', '-in', $c->{server_cert}, '-noout',
                  '-ext', 'subjectAltName'], $out);
    like(GmsTest::slurp($out),
         qr/DNS:localhost,\ DNS:redis\.test,\ IP\ Address:127\.0\.0\.1,
            \ IP\ Address:0:0:0:0:0:0:0:1/x,
         'server names');
};


subtest 'redis: TLS, IPv6, replica' => sub {
    GmsTest::need_redis();

    my $c = GmsTest::Certs->new;
    my $r = GmsTest::Redis->start(tls => $c);
    ok($r->tls_port && $r->port, 'TLS and plain ports');
    is($r->cmd(SET => 'k', 'v'), 'OK', 'seeded over the plain port');
    is($r->cli('--tls', 'GET', 'k'), 'v', 'read over TLS (redis-cli --tls)');
    is($r->address(tls => 1), '127.0.0.1:' . $r->tls_port, 'address tls');

    my $out = GmsTest::scratch_dir() . '/cli.out';
    unlink $out;
    GmsTest::run([GmsTest::redis_bin('cli'), '-p', $r->tls_port, '--tls',
                  '--cacert', $c->{wrong_ca}, 'PING'], $out);
    unlike(GmsTest::slurp($out), qr/PONG/, 'wrong CA refused');
    $r->stop;

    my $m = GmsTest::Redis->start(tls => $c, plain => 0,
                                  tls_auth_clients => 'yes');
    is($m->port, 0, 'plain => 0: no plain port');
    is($m->cmd('PING'), 'PONG', 'cmd through TLS with a client certificate');
    unlink $out;
    GmsTest::run([GmsTest::redis_bin('cli'), '-p', $m->tls_port, '--tls',
                  '--cacert', $c->{ca}, 'PING'], $out);
    unlike(GmsTest::slurp($out), qr/PONG/, 'no client certificate: refused');
    $m->stop;

    my $v6 = GmsTest::Redis->start(bind => '::1', password => 'pw');
    is($v6->address, '[::1]:' . $v6->port, 'IPv6 address');
    is($v6->cmd(SET => 'six', 'x'), 'OK', 'cmd over IPv6');
    is($v6->cmd(CONFIG => 'GET', 'bind')->[1], '::1', 'bound to ::1');

    my $r2 = GmsTest::Redis->start(bind => '127.0.0.2');
    is($r2->cmd('PING'), 'PONG', 'bound to 127.0.0.2');

    my $replica = GmsTest::Redis->start(replicaof => ['::1', $v6->port],
                                        password => 'pw');
    is($replica->cmd(GET => 'six'), 'x', 'replica synced before start returns');
    is($replica->cmd('ROLE')->[0], 'slave', 'replica role');

    $replica->pause;
    my $answered = eval {
        local $SIG{ALRM} = sub { die "alarm\n" };
        alarm 1;
        $replica->cmd('PING');
        alarm 0;
        1;
    };
    alarm 0;
    ok(!$answered, 'pause: no answer');
    delete $replica->{sock};
    $replica->resume;
    is($replica->cmd('PING'), 'PONG', 'resume');

    my $pid = $replica->pid;
    $replica->kill;
    ok(!kill(0, $pid), 'kill');
};


subtest 'sentinel' => sub {
    GmsTest::need_redis();

    my $m = GmsTest::Redis->start(password => 'pw');
    my $r = GmsTest::Redis->start(replicaof => ['127.0.0.1', $m->port],
                                  password => 'pw');
    my $s = GmsTest::Sentinel->start(master => $m, name => 'gms',
                                     sentinel_password => 'spw');

    is(scalar(my @p = $s->ports), 3, 'three sentinels');
    is_deeply([$s->addresses], [ map { "127.0.0.1:$_" } $s->ports ],
              'addresses');
    is_deeply($s->master_addr, ['127.0.0.1', $m->port], 'master_addr');
    is_deeply($s->cmd(1, SENTINEL => 'get-master-addr-by-name', 'gms'),
              ['127.0.0.1', $m->port], 'each sentinel knows the master');
    my $replicas = { @{ $s->cmd(2, SENTINEL => 'replicas', 'gms')->[0] } };
    is("$replicas->{ip}:$replicas->{port}", '127.0.0.1:' . $r->port,
       'replica announced as 127.0.0.1');

    $m->cmd(SET => 'k', 'before');
    is($m->cmd(WAIT => 1, 5000), 1, 'replicated');
    my $old = $m->port;
    $m->kill;
    is($s->wait_failover($old, 20), $r->port, 'failover to the replica');
    is($r->cmd('ROLE')->[0], 'master', 'replica promoted');
    is($r->cmd(GET => 'k'), 'before', 'with the data');
};


# A DNS query for $name of $type (1: A, 28: AAAA) to 127.0.0.1:$port;
# returns (rcode, addresses).
sub dns_query {
    my ($port, $name, $type) = @_;

    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $port, Proto => 'udp')
        or die "udp: $!\n";
    my $q = pack('n n n n n n', 4242, 0x0100, 1, 0, 0, 0)
            . join('', map { chr(length) . $_ } split /\./, $name)
            . "\0" . pack('n n', $type, 1);
    $sock->send($q);
    IO::Select->new($sock)->can_read(2) or return ('timeout');
    $sock->recv(my $a, 512);
    my ($id, $flags, $qd, $an) = unpack 'n n n n', $a;
    my @addrs;
    my $pos = length $q;
    for (1 .. $an) {
        my ($ptr, $t, $c, $ttl, $len) = unpack 'n n n N n', substr $a, $pos, 12;
        push @addrs, join '.', unpack 'C4', substr $a, $pos + 12, 4 if $t == 1;
        $pos += 12 + $len;
    }
    return ($flags & 0xf, @addrs);
}

subtest 'dns' => sub {
    my $dns = GmsTest::DNS->start(names => { 'redis.test' => '127.0.0.1' });

    is_deeply([dns_query($dns->port, 'redis.test', 1)], [0, '127.0.0.1'],
              'A record');
    is_deeply([dns_query($dns->port, 'REDIS.Test', 1)], [0, '127.0.0.1'],
              'case does not matter');
    is_deeply([dns_query($dns->port, 'redis.test', 28)], [0],
              'AAAA: NOERROR, no answer');
    is_deeply([dns_query($dns->port, 'other.test', 1)], [3], 'NXDOMAIN');
    is($dns->queries('redis.test'), 2, 'A queries counted');
    is($dns->queries('redis.test', 'AAAA'), 1, 'AAAA queries counted');

    $dns->set('redis.test' => '127.0.0.2', 'new.test' => '127.0.0.3');
    is_deeply([dns_query($dns->port, 'redis.test', 1)], [0, '127.0.0.2'],
              'set changes an answer');
    is_deeply([dns_query($dns->port, 'new.test', 1)], [0, '127.0.0.3'],
              'set adds a name');
    $dns->set('new.test' => undef);
    is_deeply([dns_query($dns->port, 'new.test', 1)], [3], 'set removes one');

    # nginx's own resolver, as the module's will use it
    my $stub = GmsTest::Stub->start(workers => 1,
                                    handler => sub { [200, [], 'hello'] });
    $dns->set('redis.test' => '127.0.0.1');
    my $n = GmsTest::Nginx->new(no_module => 1);
    $n->start(<<'EOF', vars => { DNS => $dns->port, STUB => $stub->port });
    resolver 127.0.0.1:%%DNS%% valid=1s ipv6=off;
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            set $name redis.test;
            proxy_pass http://$name:%%STUB%%;
        }
        location /nx {
            set $name nowhere.test;
            proxy_pass http://$name:%%STUB%%;
        }
    }
EOF
    my $before = $dns->queries('redis.test');
    is($n->http(GET => '/')->{body}, 'hello', 'nginx resolves through it');
    cmp_ok($dns->queries('redis.test'), '>', $before, 'and asked it');
    is($n->http(GET => '/nx')->{status}, 502, 'unknown name: 502');
    like($n->error_log,
         qr/nowhere\.test could not be resolved \(3: Host not found\)/,
         'nginx saw NXDOMAIN');
    $n->stop;
};


subtest 'fake redis' => sub {
    my $f = GmsTest::FakeRedis->start(
        greeting => "+HELLO\r\n",
        on => {
            EVALSHA => GmsTest::FakeRedis::HUGE_ARRAY,
            GET     => sub {
                my ($c, @cmd) = @_;
                return "\$" . length($cmd[1]) . "\r\n$cmd[1]\r\n";
            },
        },
    );
    is($f->connections, 0, 'no connections yet');

    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $f->port) or die;
    my $read = sub {
        my $buf = '';
        while (IO::Select->new($sock)->can_read(0.3)) {
            sysread($sock, $buf, 65536, length $buf) or last;
        }
        return $buf;
    };
    is($read->(), "+HELLO\r\n", 'greeting on connect');
    print $sock "*2\r\n\$4\r\nAUTH\r\n\$2\r\npw\r\n";
    is($read->(), "+OK\r\n", 'AUTH: OK');
    my $lua = 'return 1';
    print $sock "*3\r\n\$6\r\nSCRIPT\r\n\$4\r\nLOAD\r\n\$8\r\n$lua\r\n";
    is($read->(), "\$40\r\n" . Digest::SHA::sha1_hex($lua) . "\r\n",
       'SCRIPT LOAD: the real SHA1');
    print $sock "*3\r\n\$7\r\nEVALSHA\r\n\$1\r\nx\r\n\$1\r\n0\r\n";
    is($read->(), "*2147483647\r\n", 'EVALSHA: scripted reply');
    print $sock "GET abc\r\n";
    is($read->(), "\$3\r\nabc\r\n", 'inline command, reply from a sub');
    print $sock "*1\r\n\$4\r\nNOPE\r\n";
    like($read->(), qr/^-ERR unknown command/, 'unknown command');
    is($f->connections, 1, 'one connection');
    is_deeply([$f->commands], ['AUTH pw', 'SCRIPT LOAD return_1',
              'EVALSHA x 0', 'GET abc', 'NOPE'], 'commands logged');
    close $sock;

    my $g = GmsTest::FakeRedis->start(bind => '::1', extra => ":7\r\n");
    is($g->address, '[::1]:' . $g->port, 'IPv6 address');
    my $client = GmsTest::Redis->client(host => '::1', port => $g->port);
    is($client->cmd('PING'), 'PONG', 'default reply');
    is($client->_read_reply, 7, 'then the extra one');
    delete $client->{sock};

    my $h = GmsTest::FakeRedis->start(script => sub {
        my ($c) = @_;
        $c->send('-ERR number ' . $c->number . "\r\n");
        $c->wait_closed(5);
    });
    for my $i (1 .. 2) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                      PeerPort => $h->port) or die;
        is(scalar <$s>, "-ERR number $i\r\n", "script, connection $i");
    }
    ok(GmsTest::wait_until(sub { $h->connections == 2 }, 2), 'counted');

    my $port = $h->port;
    $h->stop;
    ok(!IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port),
       'stop closes the port');
};


subtest 'GmsTest::Prove: the serial chain starts first' => sub {
    # four files, two jobs: a chain of two (seq=) and two others, each
    # writing when it started; the chain's first starts before the
    # second other one (prove's own runs the chain last)
    my $dir = GmsTest::tempdir();
    mkdir "$dir/t" or die "$dir/t: $!\n";
    for my $name (qw(10-par 20-par 50-seq 60-seq)) {
        GmsTest::write_file("$dir/t/$name.t", <<"T");
use Time::HiRes qw(sleep time);
open my \$fh, '>', '$dir/$name.started' or die;
print \$fh time;
close \$fh;
sleep 0.5;
print "1..1\\nok 1\\n";
T
    }
    my $lib = "$FindBin::Bin/lib";
    my $rc = system("cd '$dir' && '$^X' -I '$lib' -MGmsTest::Prove "
                    . q{-e 'exit GmsTest::Prove->main(@ARGV)' -- -j2 }
                    . q{--rules='seq=t/{50,60}-*.t' --rules='par=**' -Q t/}
                    . " > '$dir/prove.out' 2>&1");
    is($rc, 0, 'prove passes') or diag GmsTest::slurp("$dir/prove.out");
    my %at = map { $_ => GmsTest::slurp("$dir/$_.started") || 0 }
             qw(20-par 50-seq);
    cmp_ok($at{'50-seq'}, '<', $at{'20-par'},
           'the chain started before the second other file');
};

done_testing;
