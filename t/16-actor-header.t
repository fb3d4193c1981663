#!/usr/bin/perl

# Only the module says who the user is: with gms_token_auth on, a client's
# own X-DataHub-Actor never reaches GMS beside a bearer token, whatever the
# location's proxy_set_header says.  A location with a proxy_set_header of
# its own inherits none of the server's, so the server's
# "proxy_set_header X-DataHub-Actor $gms_token_actor" no longer replaces
# the client's header there: the module takes it out of the request.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;

my $e = GmsTest::Edge->start(server => <<'S');
        location /own-headers/ {
            proxy_set_header X-Extra yes;
            proxy_pass http://gms;
        }

        location /own-headers-open/ {
            gms_token_auth off;
            proxy_set_header X-Extra yes;
            proxy_pass http://gms;
        }
S

$e->token('alice-token', actor => 'urn:li:corpuser:alice');

sub actors_at_gms {
    my ($res) = @_;
    my $echo = eval { GmsTest::json_decode($res->{body}) } // {};
    return [map { $_->[1] } grep { lc $_->[0] eq 'x-datahub-actor' }
            @{ $echo->{headers} // [] }];
}

my @smuggled = ('X-DataHub-Actor' => 'urn:li:corpuser:datahub');

subtest 'a location with its own proxy_set_header' => sub {
    my $res = $e->get('/own-headers/x', 'alice-token', @smuggled);
    is($res->{status}, 200, 'status 200');
    is_deeply(actors_at_gms($res), [], "the client's header dropped");

    $res = $e->nginx->raw("GET /own-headers/x HTTP/1.0\r\n"
                          . "Authorization: Bearer alice-token\r\n"
                          . "x-datahub-actor: urn:li:corpuser:datahub\r\n"
                          . "X-DATAHUB-ACTOR: urn:li:corpuser:admin\r\n"
                          . "\r\n");
    my $parsed = GmsTest::HTTP::parse_response($res, 'GET', 1);
    is($parsed->{status}, 200, 'two of them, any case: status 200');
    is_deeply(actors_at_gms($parsed), [], 'both dropped');
    my $echo = GmsTest::json_decode($parsed->{body});
    is_deeply([map { $_->[1] } grep { lc $_->[0] eq 'x-extra' }
               @{ $echo->{headers} }], ['yes'],
              "the location's own header still sent");
};

subtest 'the default location: replaced by the token\'s user' => sub {
    my $res = $e->get('/entities/x', 'alice-token', @smuggled);
    is_deeply(actors_at_gms($res), ['urn:li:corpuser:alice'],
              "only the token's user");
};

subtest 'auth off: the request goes as it came' => sub {
    my $res = $e->get('/own-headers-open/x', undef, @smuggled);
    is_deeply(actors_at_gms($res), ['urn:li:corpuser:datahub'],
              'not touched where the module checks nothing');
};

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');

done_testing();
