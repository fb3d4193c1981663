#!/usr/bin/perl

# gms-token jwks (issue 26, item 3): an OAuth issuer's JWKS fetched into
# gms_token_oauth's jwks_file=, from a stand-in issuer on loopback (its
# discovery document and its JWKS).  The discovery URL is found as
# DataHub 1.3.0's JwksUriResolver finds it (the issuer without a trailing
# '/', then /.well-known/openid-configuration).  A good JWKS replaces the
# file atomically; anything else (an error, a redirect, a JWKS the module
# would refuse) leaves the file as it was.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::JWT;
use GmsTest::Stub;
use GmsTest::Tool qw(run_tool);

GmsTest::Tool::need_tool();
GmsTest::skip_all('no openssl command') unless GmsTest::in_path('openssl');

my $dir = GmsTest::tempdir();
my $k1 = GmsTest::JWT::rsa_key("$dir/k1.pem");
my $k2 = GmsTest::JWT::rsa_key("$dir/k2.pem");
my $weak = GmsTest::JWT::rsa_key("$dir/weak.pem", 1024);

# What the stand-in issuer serves, changed by the tests through files:
# $dir/discovery (the document, or "STATUS" alone) and $dir/certs.
my $issuer = GmsTest::Stub->start(handler => sub {
    my ($req) = @_;
    my %files = ('/realms/dh/.well-known/openid-configuration' => 'discovery',
                 '/realms/dh/certs' => 'certs');
    my $name = $files{$req->{path}} or return [404, [], 'not found'];
    my $body = GmsTest::slurp("$dir/$name");
    return [$1, ['Location' => '/elsewhere'], ''] if $body =~ /^(\d{3})$/;
    return [200, ['Content-Type' => 'application/json'], $body];
});

my $base = 'http://127.0.0.1:' . $issuer->port;
my $ISS = "$base/realms/dh";
my $out = "$dir/out/jwks.json";
mkdir "$dir/out" or die "mkdir: $!\n";

sub discovery {
    my (%over) = @_;
    GmsTest::write_file("$dir/discovery", GmsTest::json_encode({
        issuer => $ISS, jwks_uri => "$ISS/certs",
        authorization_endpoint => "$ISS/auth", %over }));
}

sub certs { GmsTest::write_file("$dir/certs", $_[0]) }


sub left_over { [grep { !/jwks\.json\z/ } glob("$dir/out/*")] }

sub fetch { run_tool(undef, 'jwks', '--issuer', @_, '--out', $out) }

discovery();
my $jwks1 = GmsTest::JWT::jwks([$k1, 'k1']);
certs($jwks1);


# --- good ---------------------------------------------------------------------

my $res = fetch($ISS);
is($res->{rc}, 0, 'exit 0') or diag($res->{err});
is(GmsTest::slurp($out), $jwks1, 'the JWKS written as served');
like($res->{out}, qr/\Q$out\E: 1 RSA key from \Q$ISS\E\/certs/,
     'one line saying what was written');
is(sprintf('%o', (stat $out)[2] & 07777), '644', 'mode 0644');
is_deeply(left_over(), [], 'no temporary file left');

my $inode = (stat $out)[1];
my $jwks2 = GmsTest::JWT::jwks([$k2, 'k2'], [$k1, 'k1']);
certs($jwks2);
$res = fetch("$ISS/");
is($res->{rc}, 0, 'the issuer with a trailing slash: exit 0');
is(GmsTest::slurp($out), $jwks2, 'the new JWKS written');
isnt((stat $out)[1], $inode, 'by a rename (a new inode)');

$res = fetch("$ISS/.well-known/openid-configuration");
is($res->{rc}, 0, 'the discovery document named itself: exit 0');

discovery(issuer => 'https://idp.example.test/realms/dh');
$res = fetch($ISS);
is($res->{rc}, 0, 'a discovery document naming another issuer: written');
like($res->{err}, qr/names the issuer 'https:\/\/idp\.example\.test\/realms\/dh'/,
     'with a warning');
discovery();

my ($rc, $t_out) = GmsTest::nginx_t(<<"CONF");
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events { }
http {
    gms_token_salt "";
    gms_datahub_version 1.3.0;
    gms_token_oauth issuer=$ISS audience=datahub jwks_file=$out;
    server { listen 127.0.0.1:1; location / { gms_token_auth on; } }
}
CONF
is($rc, 0, 'nginx -t accepts the file written') or diag($t_out);


# --- bad: the file left as it was ----------------------------------------------

my $before = GmsTest::slurp($out);

my @bad = (
    ['a JWKS without a key', sub { certs('{"keys":[]}') },
     qr/not a JWKS the module accepts: no RSA key with a kid; \Q$out\E left/],
    ['not JSON', sub { certs('<html>oops</html>') }, qr/not a JSON object/],
    ['a 1024-bit key', sub { certs(GmsTest::JWT::jwks([$weak, 'w'])) },
     qr/shorter than 2048 bits/],
    ['the JWKS answered 500', sub { certs('500') }, qr/certs: HTTP 500/],
    ['the discovery document missing', sub { GmsTest::write_file(
         "$dir/discovery", '404') }, qr/openid-configuration: HTTP 404/],
    ['a redirect (not followed)', sub { GmsTest::write_file(
         "$dir/discovery", '302') }, qr/HTTP 302/],
    ['no jwks_uri', sub { discovery(jwks_uri => undef) },
     qr/no jwks_uri/],
    ['a jwks_uri that is not http(s)', sub {
         discovery(jwks_uri => 'file:///etc/passwd') }, qr/no jwks_uri/],
);

for my $case (@bad) {
    my ($title, $setup, $says) = @$case;
    subtest "refused: $title" => sub {
        discovery();
        certs($jwks2);
        $setup->();
        my $res = fetch($ISS);
        is($res->{rc}, 4, 'exit 4');
        like($res->{err}, $says, 'saying why');
        is(GmsTest::slurp($out), $before, 'the file left as it was');
        is_deeply(left_over(), [], 'no temporary file left');
    };
}

discovery();
certs($jwks2);


# --- usage ---------------------------------------------------------------------

is(run_tool(undef, 'jwks', '--issuer', $ISS)->{rc}, 2, 'no --out: exit 2');
$res = run_tool(undef, 'jwks', '--issuer', 'ftp://x/', '--out', $out);
is($res->{rc}, 2, 'an ftp:// issuer: exit 2');
like($res->{err}, qr/not an http:\/\/ or https:\/\/ URL/, 'saying why');
$res = run_tool(undef, 'jwks', '--issuer', $ISS, '--out',
                "$dir/none/jwks.json");
is($res->{rc}, 2, 'a directory that does not exist: exit 2');
like($res->{err}, qr/cannot create/, 'saying why');
is(run_tool(undef, 'jwks', '--issuer', $ISS, '--out', $out, '--redis',
            '127.0.0.1:1')->{rc}, 2, '--redis is not an option of jwks');
is(GmsTest::slurp($out), $before, 'the file still as it was');

done_testing();
