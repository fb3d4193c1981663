#!/usr/bin/perl

# What browsers and rate limits need (issue 16): gms_token_preflight pass
# lets a CORS preflight through without a token, and the module's own
# 401 carries the CORS headers an "add_header ... always" gives it;
# gms_token_phase preaccess checks the token before limit_req, so a
# limit keyed on $gms_token_actor limits each user; gms_token_source takes
# the token from a cookie or another header, and GMS gets it as
# "Authorization: Bearer <token>", the only Authorization it sees; such a
# token reaches no log line either, at debug level.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;
use GmsTest::HTTP;

# a second server: gms_token_preflight pass at server level, inherited
my $browser_port = GmsTest::free_port();

my $e = GmsTest::Edge->start(http => <<"H", server => <<'S');
    limit_req_zone \$gms_token_actor zone=per_user:1m rate=1r/m;
    limit_req_zone \$binary_remote_addr zone=per_ip:1m rate=1r/m;

    server {
        listen 127.0.0.1:$browser_port;

        gms_token_auth on;
        gms_token_preflight pass;
        add_header X-Gms-Result \$gms_token_result always;

        location / {
            proxy_pass http://gms;
        }
    }
H
        location /cors/ {
            gms_token_preflight pass;
            add_header Access-Control-Allow-Origin $http_origin always;
            add_header Vary Origin always;
            add_header X-Gms-Result $gms_token_result always;
            proxy_pass http://gms;
        }

        location /limited/ {
            gms_token_phase preaccess;
            limit_req zone=per_user nodelay;
            limit_req_status 429;
            proxy_pass http://gms;
        }

        location /per-ip/ {
            gms_token_phase preaccess;
            limit_req zone=per_ip nodelay;
            limit_req_status 429;
            proxy_pass http://gms;
        }

        location /limited-late/ {
            limit_req zone=per_user nodelay;
            limit_req_status 429;
            proxy_pass http://gms;
        }

        location /cookie/ {
            gms_token_source $cookie_gms_token;
            proxy_pass http://gms;
        }

        location /header/ {
            gms_token_source $http_x_gms_token;
            proxy_pass http://gms;
        }
S

for my $user (qw(alice bob carol dave erin)) {
    $e->token("$user-token", actor => "urn:li:corpuser:$user");
}

# only ever sent in a cookie or in X-Gms-Token, never after "Bearer "
$e->token('cookie-only-token', actor => 'urn:li:corpuser:frank');
$e->token('header-only-token', actor => 'urn:li:corpuser:grace');

sub at_gms {
    my ($res, $name) = @_;
    my $echo = eval { GmsTest::json_decode($res->{body}) } // {};
    return [map { $_->[1] } grep { lc $_->[0] eq lc $name }
            @{ $echo->{headers} // [] }];
}

sub gms_method {
    my ($res) = @_;
    my $echo = eval { GmsTest::json_decode($res->{body}) } // {};
    return $echo->{method} // '';
}

my %preflight = (Origin => 'https://datahub.example.com',
                 'Access-Control-Request-Method' => 'POST',
                 'Access-Control-Request-Headers' => 'authorization');

subtest 'gms_token_preflight pass' => sub {
    my $res = $e->nginx->http(OPTIONS => '/cors/entities/x',
                              { %preflight,
                                'X-DataHub-Actor' => 'urn:li:corpuser:x' });
    is($res->{status}, 200, 'a preflight without a token: through');
    is(gms_method($res), 'OPTIONS', 'GMS answered it');
    is_deeply(at_gms($res, 'X-DataHub-Actor'), [],
              "the client's X-DataHub-Actor dropped all the same");
    is($res->{headers}{'access-control-allow-origin'},
       'https://datahub.example.com', 'with the CORS header');
    is($res->{headers}{'x-gms-result'}, 'preflight',
       '$gms_token_result: preflight');

    $res = $e->nginx->http(OPTIONS => '/cors/entities/x',
                           { Origin => 'https://datahub.example.com' });
    is($res->{status}, 401, 'OPTIONS without Access-Control-Request-Method: '
                            . 'not a preflight, 401');
    is($res->{headers}{'x-gms-result'}, 'missing', 'as missing');

    $res = $e->nginx->http(OPTIONS => '/cors/entities/x',
                           { 'Access-Control-Request-Method' => 'POST' });
    is($res->{status}, 401, 'OPTIONS without Origin: 401');

    $res = $e->nginx->http(OPTIONS => '/entities/x', \%preflight);
    is($res->{status}, 401, 'a preflight where the default (check) holds: 401');

    $res = $e->nginx->http(GET => '/cors/entities/x',
                           { Origin => 'https://datahub.example.com' });
    is($res->{status}, 401, "a browser's GET without a token: 401");
    is($res->{headers}{'access-control-allow-origin'},
       'https://datahub.example.com',
       "the module's 401 carries add_header ... always");
    like($res->{headers}{'www-authenticate'} // '', qr/^Bearer /,
         'and its challenge');

    $res = $e->get('/cors/entities/x', 'alice-token',
                   Origin => 'https://datahub.example.com');
    is($res->{status}, 200, 'with a token: 200');
    is($res->{headers}{'access-control-allow-origin'},
       'https://datahub.example.com', 'with the CORS header');
    is($res->{headers}{'x-gms-result'}, 'ok', 'as ok');
};

subtest 'gms_token_preflight pass at server level' => sub {
    my $res = GmsTest::HTTP::request($browser_port, OPTIONS => '/entities/x',
                                     \%preflight);
    is($res->{status}, 200, "a location inherits the server's pass");
    is(gms_method($res), 'OPTIONS', 'GMS answered it');
    is($res->{headers}{'x-gms-result'}, 'preflight',
       '$gms_token_result: preflight');

    $res = GmsTest::HTTP::request($browser_port, GET => '/entities/x', {});
    is($res->{status}, 401, 'a GET without a token: 401');
    is($res->{headers}{'x-gms-result'}, 'missing', 'as missing');
};

subtest 'gms_token_phase preaccess: limit_req by user' => sub {
    my $res = $e->get('/limited/x', 'alice-token');
    is($res->{status}, 200, "alice's first request");
    is($res->{headers}{'x-gms-actor'}, 'urn:li:corpuser:alice',
       'checked in the preaccess phase');

    $res = $e->get('/limited/x', 'alice-token');
    is($res->{status}, 429, "alice's second in the minute: limit_req_status");

    $res = $e->get('/limited/x', 'bob-token');
    is($res->{status}, 200, 'bob is not limited by alice');

    my %seen;
    for my $i (1 .. 20) {
        $seen{ $e->get('/limited/x', $i % 2 ? undef : "forged-$i")->{status} }++;
    }
    is_deeply(\%seen, { 401 => 20 },
              'an unauthenticated flood: refused by the token check');

    $res = $e->get('/limited/x', 'carol-token');
    is($res->{status}, 200, "and it used nobody's budget");

    # keyed on the client's address, which the flood shares with erin:
    # were limit_req first, the second request would be a 429
    %seen = ();
    $seen{ $e->get('/per-ip/x')->{status} }++ for 1 .. 5;
    is_deeply(\%seen, { 401 => 5 },
              'limit_req by address: requests without a token, all 401');

    $res = $e->get('/per-ip/x', 'erin-token');
    is($res->{status}, 200, "and it did not use the address's budget");

    $res = $e->get('/limited-late/x', 'dave-token');
    is($res->{status}, 200, "gms_token_phase access (default): dave's first");
    $res = $e->get('/limited-late/x', 'dave-token');
    is($res->{status}, 200, 'and his second: the actor is not known yet '
                            . 'when limit_req runs, nothing is limited');
};

subtest 'gms_token_source' => sub {
    my $res = $e->nginx->http(GET => '/cookie/entities/x',
                              { Cookie => 'other=1; gms_token=alice-token' });
    is($res->{status}, 200, 'a token from a cookie: 200');
    is($res->{headers}{'x-gms-actor'}, 'urn:li:corpuser:alice', 'its user');
    is_deeply(at_gms($res, 'Authorization'), ['Bearer alice-token'],
              'GMS gets it as Authorization: Bearer');
    is_deeply(at_gms($res, 'X-DataHub-Actor'), ['urn:li:corpuser:alice'],
              'and the actor');
    is_deeply(at_gms($res, 'Cookie'), ['other=1; gms_token=alice-token'],
              'the Cookie header passes as sent');

    $res = $e->nginx->http(GET => '/cookie/entities/x',
                           { Cookie => 'gms_token=alice-token',
                             Authorization => 'Bearer bob-token' });
    is($res->{status}, 200, 'with an Authorization header beside it: 200');
    is($res->{headers}{'x-gms-actor'}, 'urn:li:corpuser:alice',
       'the cookie is what is checked');
    is_deeply(at_gms($res, 'Authorization'), ['Bearer alice-token'],
              "the client's Authorization replaced, not forwarded");

    $res = $e->get('/cookie/entities/x', 'alice-token');
    is($res->{status}, 401, 'without the cookie: 401, whatever the header');
    is($res->{headers}{'x-gms-result'}, 'missing', 'as missing');

    $res = $e->nginx->http(GET => '/cookie/entities/x',
                           { Cookie => 'gms_token=nobody-token' });
    is($res->{status}, 401, 'an unknown token in the cookie: 401');
    is($res->{headers}{'x-gms-result'}, 'unknown', 'as unknown');

    $res = $e->nginx->http(GET => '/cookie/entities/x',
                           { Cookie => 'gms_token=a%00b' });
    is($res->{status}, 401, 'a malformed token in the cookie: 401');
    is($res->{headers}{'x-gms-result'}, 'malformed', 'as malformed');

    $res = $e->nginx->http(GET => '/header/entities/x',
                           { 'X-Gms-Token' => 'Bearer bob-token' });
    is($res->{status}, 200, 'from another header, "Bearer " and all: 200');
    is_deeply(at_gms($res, 'Authorization'), ['Bearer bob-token'],
              'GMS gets Authorization: Bearer');

    $res = $e->nginx->http(GET => '/header/entities/x',
                           { 'X-Gms-Token' => 'bob-token' });
    is($res->{status}, 200, 'a bare token in the header: 200');
};

subtest 'a token from gms_token_source reaches no log line' => sub {
    my $res = $e->nginx->http(
        GET => '/cookie/entities/x',
        { Cookie => 'other=1; gms_token=cookie-only-token' });
    is($res->{status}, 200, 'from a cookie: 200');
    is($res->{headers}{'x-gms-actor'}, 'urn:li:corpuser:frank', 'its user');

    $res = $e->nginx->http(GET => '/header/entities/x',
                           { 'X-Gms-Token' => 'header-only-token' });
    is($res->{status}, 200, 'from X-Gms-Token: 200');
    is($res->{headers}{'x-gms-actor'}, 'urn:li:corpuser:grace', 'its user');

    my $log = $e->nginx->error_log;
    like($log, qr/http header: "Cookie: other=\*; gms_token=\*+/,
         'the Cookie header is logged at debug, its values masked');
    like($log, qr/http header: "X-Gms-Token: \*+/,
         'X-Gms-Token too');
    unlike($log, qr/cookie-only-token/, 'the cookie token in no log line');
    unlike($log, qr/header-only-token/, 'the header token in no log line');
};

$e->nginx->stop;
is_deeply([ $e->nginx->bad_log_lines ], [], 'no alerts or errors');

done_testing;
