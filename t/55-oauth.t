#!/usr/bin/perl

# External OAuth tokens (issue 26, item 3): gms_token_oauth checks them as
# DataHub 1.3.0's DataHubOAuthAuthenticator does
# (metadata-service/auth-impl/.../authenticator/DataHubOAuthAuthenticator
# .java, token/DataHubOAuthSigningKeyResolver.java, PR 14707): the iss and
# one aud of a configured issuer, the header's alg the issuer's (RS256),
# its kid a key of the issuer's JWKS, a good signature, exp and nbf, the
# user ServiceAccountService.buildServiceUserUrn derives
# (__oauth_<issuer sanitized>_<sub>).  An RSA key pair made here with the
# openssl CLI signs the tokens.  A good token reaches GMS unchanged; a bad
# one is refused by the edge with 401, without a Redis lookup.  The JWKS
# file, replaced, is read again without a reload; rewritten in place too
# (issue 33): in the second it was read, at the same size, and caught
# half-written (its keys unused until it is whole).

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep time);

use GmsTest;
use GmsTest::Edge;
use GmsTest::JWT;
use GmsTest::Messages qw($RESTLI_EXCEPTION $INVALID_TOKEN $CANNOT_VERIFY
                         $GMS_UNAUTHORIZED);

GmsTest::need_module();
GmsTest::need_redis();
GmsTest::skip_all('no openssl command') unless GmsTest::in_path('openssl');

my $ISS = 'https://idp.example.test/realms/dh';
my $AUD = 'api://datahub';
# ServiceAccountService.buildServiceUserUrn of $ISS and sub "alice"
my $ALICE = 'urn:li:corpuser:__oauth_idp_example_test_realms_dh_alice';

my $dir = GmsTest::tempdir();
my $k1 = GmsTest::JWT::rsa_key("$dir/k1.pem");
my $k2 = GmsTest::JWT::rsa_key("$dir/k2.pem");

# as gms-token jwks replaces it: a new file renamed over the old
sub write_jwks {
    my ($text) = @_;
    GmsTest::write_file("$dir/jwks.json.tmp", $text);
    rename "$dir/jwks.json.tmp", "$dir/jwks.json" or die "rename: $!\n";
}

write_jwks(GmsTest::JWT::jwks([$k1, 'k1']));

sub claims {
    my (%over) = @_;
    my %c = (iss => $ISS, aud => [$AUD, 'account'], sub => 'alice',
             azp => 'ingest', exp => time() + 600, iat => time(), %over);
    delete @c{ grep { !defined $c{$_} } keys %c };
    return \%c;
}

sub token { GmsTest::JWT::rs256($k1, 'k1', claims(@_)) }

# DataHubOAuthAuthenticator came with DataHub 1.3.0
my $e = GmsTest::Edge->start(
    http   => "gms_datahub_version 1.3.0;\n"
              . "gms_token_oauth issuer=$ISS audience=$AUD,datahub "
              . "jwks_file=$dir/jwks.json;",
    server => 'add_header X-Gms-Type $gms_token_type always;',
);

sub body {
    my ($res) = @_;
    my $body = eval { GmsTest::json_decode($res->{body} // '') };
    return ref $body eq 'HASH' ? $body : {};
}


# --- good tokens --------------------------------------------------------------

subtest 'a good RS256 token reaches GMS unchanged, for the derived user' => sub {
    my $t = token();
    my $lookups = $e->lookups;
    my $res = $e->get('/entities/x', $t);
    is($res->{status}, 200, '200 from the stand-in GMS');
    is(body($res)->{header}{authorization}, "Bearer $t",
       'GMS got the token unchanged');
    is($res->{headers}{'x-gms-result'}, 'ok', '$gms_token_result ok');
    is($res->{headers}{'x-gms-actor'}, $ALICE,
       '$gms_token_actor: urn:li:corpuser:__oauth_<issuer>_<sub>');
    is($res->{headers}{'x-gms-type'}, 'OAUTH', '$gms_token_type OAUTH');
    is($e->lookups - $lookups, 0,
       'no privilege needed: no Redis lookup (as a session token)');
};

subtest 'aud as a plain string, the second configured audience' => sub {
    is($e->get('/entities/x', token(aud => 'datahub'))->{status}, 200,
       'aud "datahub": 200');
};

subtest "a privilege is read from Redis for the token's user" => sub {
    my $t = token(sub => 'bob');
    my $bob = 'urn:li:corpuser:__oauth_idp_example_test_realms_dh_bob';
    my $lookups = $e->lookups;
    my $res = $e->get('/admin/x', $t);
    # DataHub 1.3.0: a missing privilege is 403 (from 0.13.1, PR 10066)
    is($res->{status}, 403, 'without the privilege: refused (403)');
    is($e->lookups - $lookups, 1, 'after one Redis lookup');
    $e->grant($bob, 'MANAGE_ACCESS_TOKENS');
    $res = $e->get('/admin/x', $t);
    is($res->{status}, 200, 'granted to the derived user: 200');
    is($res->{headers}{'x-gms-privileges'}, 'MANAGE_ACCESS_TOKENS',
       'its privileges from Redis');
};


# --- bad tokens: 401 from the edge, no Redis -----------------------------------

my $pub_pem = GmsTest::JWT::public_pem($k1);

my @bad = (
    ['wrong issuer', token(iss => 'https://evil.example.test/realms/dh'),
     $CANNOT_VERIFY],
    ['wrong audience', token(aud => 'someone-else'), $CANNOT_VERIFY],
    ['no audience', token(aud => undef), $CANNOT_VERIFY],
    # 1.3.0: AuthenticationEnforcementFilter's one message (PR 14292)
    ['expired', token(exp => time() - 60), $GMS_UNAUTHORIZED],
    ['not yet valid (nbf)', token(nbf => time() + 600), $CANNOT_VERIFY],
    ['unknown kid', GmsTest::JWT::rs256($k1, 'k9', claims()),
     $CANNOT_VERIFY],
    ['signed by another key under k1',
     GmsTest::JWT::rs256($k2, 'k1', claims()), $CANNOT_VERIFY],
    ['alg none, no signature',
     GmsTest::JWT::mint('', claims(), header => { alg => 'none',
                                                  kid => 'k1' },
                        sig => ''), $CANNOT_VERIFY],
    ['HS256 signed with the public key',
     GmsTest::JWT::mint($pub_pem, claims(),
                        header => { alg => 'HS256', kid => 'k1' }),
     $CANNOT_VERIFY],
    ['RS384 where the issuer signs RS256',
     GmsTest::JWT::rs256($k1, 'k1', claims(), alg => 'RS384'),
     $CANNOT_VERIFY],
    ['the user claim missing', token(sub => undef), $CANNOT_VERIFY],
);

for my $case (@bad) {
    my ($title, $t, $message) = @$case;
    subtest "refused: $title" => sub {
        my $lookups = $e->lookups;
        my $seen = @{ $e->gms->requests };
        my $res = $e->get('/entities/x', $t);
        is($res->{status}, 401, 'status 401');
        is($res->{headers}{'www-authenticate'}, $INVALID_TOKEN,
           "the edge's challenge");
        is_deeply(body($res), { exceptionClass => $RESTLI_EXCEPTION,
                                status => 401, message => $message },
                  "the edge's body, as for DataHub's own bad tokens");
        is($e->lookups - $lookups, 0, 'no Redis lookup');
        is(scalar @{ $e->gms->requests }, $seen, 'GMS not asked');
    };
}

like($e->nginx->error_log,
     qr/\[info\].*refused as an OAuth token: kid is not in the issuer's JWKS/,
     'the reason is logged at info');


# --- the JWKS file replaced: read again without a reload ---------------------

subtest 'a rotated JWKS is picked up without a reload' => sub {
    my $new = GmsTest::JWT::rs256($k2, 'k2', claims());
    my $old = token();
    is($e->get('/entities/x', $new)->{status}, 401,
       'k2 unknown before the rotation');

    write_jwks(GmsTest::JWT::jwks([$k2, 'k2']));
    ok(GmsTest::wait_until(
           sub { $e->get('/entities/x', $new)->{status} == 200 }, 5),
       'k2 accepted within a few seconds');
    is($e->get('/entities/x', $old)->{status}, 401,
       'k1, no longer in the file: refused');
    like($e->nginx->error_log,
         qr/\[notice\].*jwks_file ".*jwks.json" read again: 1 keys/,
         'the new file logged');

    write_jwks('{"keys": "not a JWKS"}');
    sleep 2;
    is($e->get('/entities/x', $new)->{status}, 200,
       'a broken file: the keys read before stay');
    like($e->nginx->error_log,
         qr/\[error\].*jwks_file ".*jwks.json" changed but is not a JWKS/,
         'and the broken file logged');
};


# --- the JWKS file rewritten in place (issue 33, finding 4) -------------------

# The file written where it is (its inode kept), as an editor or a
# configuration tool may; $head bytes of $text only, and with $sized
# the rest of the file's length zeros, as a writer that sets the length
# first leaves it.
sub write_in_place {
    my ($text, %opt) = @_;
    my $head = $opt{head} // length $text;
    my $bytes = substr($text, 0, $head);
    $bytes .= "\0" x (length($text) - $head) if $opt{sized};
    open my $fh, '+<:raw', "$dir/jwks.json" or die "jwks.json: $!\n";
    truncate $fh, 0 unless $opt{sized};
    print $fh $bytes;
    close $fh or die "jwks.json: $!\n";
}

# the rest of $text written over the zeros (or appended)
sub complete_in_place {
    my ($text, $head) = @_;
    open my $fh, '+<:raw', "$dir/jwks.json" or die "jwks.json: $!\n";
    seek $fh, $head, 0;
    print $fh substr($text, $head);
    close $fh or die "jwks.json: $!\n";
}

# $steps run at the start of a second, again (up to 3 times) until they
# ran within one: a file's whole-second mtime then says nothing of them.
# Not a check of the module: on a machine too slow for that, the test
# only says so (it then cannot tell a stamp of whole seconds).
sub within_one_second {
    my ($steps) = @_;
    for (1 .. 3) {
        sleep(int(time) + 1.02 - time);
        my $start = time;
        $steps->();
        return if int(time) == int($start);
    }
    diag('the steps never ran within one second');
}

sub status { $e->get('/entities/x', $_[0])->{status} }

sub errors {
    my @lines = $e->nginx->error_log =~ /^.*\[error\].*jwks_file.*$/mg;
    return scalar @lines;
}

my $k3 = GmsTest::JWT::rsa_key("$dir/k3.pem");
my $jwks1 = GmsTest::JWT::jwks([$k1, 'kr']);
my $jwks3 = GmsTest::JWT::jwks([$k3, 'kr']);
my $tok1 = GmsTest::JWT::rs256($k1, 'kr', claims());
my $tok3 = GmsTest::JWT::rs256($k3, 'kr', claims());

is(length $jwks3, length $jwks1, 'two keys under one kid: JWKS of one size');

subtest 'rewritten in place in the second it was read: a new key, one kid'
    => sub {
    my $read;
    within_one_second(sub {
        write_in_place($jwks1);
        $read = status($tok1);
        write_in_place($jwks3);
    });
    is($read, 200, 'the first key read and used');
    ok(GmsTest::wait_until(sub { status($tok3) == 200 }, 5),
       'the new key under the same kid accepted');
    is(status($tok1), 401, 'the old key refused');
};

# a good file in place, replaced by a rename, and read
sub jwks_read {
    my ($text, $token) = @_;
    write_jwks($text);
    return GmsTest::wait_until(sub { status($token) == 200 }, 5);
}

subtest 'caught mid-write (sized first): the keys read before stay' => sub {
    ok(jwks_read($jwks3, $tok3), 'the third key in use');
    my $half = int(length($jwks1) / 2);
    my ($during, $logged) = (0, errors());
    within_one_second(sub {
        write_in_place($jwks1, head => $half, sized => 1);
        $during = status($tok3);
        complete_in_place($jwks1, $half);
    });
    is($during, 200, 'the half-written file: the keys read before stay');
    is(errors(), $logged + 1, 'the half-written file logged');
    ok(GmsTest::wait_until(sub { status($tok1) == 200 }, 5),
       'completed: the new key accepted');
    is(status($tok3), 401, 'and the old one refused');
};

subtest 'caught mid-write (truncated): the keys read before stay' => sub {
    ok(jwks_read($jwks1, $tok1), 'the first key in use');
    my $half = int(length($jwks3) / 2);
    my $logged = errors();
    write_in_place($jwks3, head => $half);
    ok(GmsTest::wait_until(sub { status($tok1) == 200 && errors() > $logged },
                           5),
       'the truncated file logged, the keys read before used');
    my $until = time + 2.5;
    my $ok = 1;
    while (time < $until) {
        $ok &&= status($tok1) == 200;
        sleep 0.1;
    }
    ok($ok, 'and they stay while it is half-written');
    is(errors(), $logged + 1, 'logged once');
    complete_in_place($jwks3, $half);
    ok(GmsTest::wait_until(sub { status($tok3) == 200 }, 5),
       'completed: the new key accepted');
    is(status($tok1), 401, 'and the old one refused');
};

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- beside GMS's signing key and a cache: DataHub's own tokens as before ----

# DataHub's default signing key (DATAHUB_TOKEN_SERVICE_SIGNING_KEY)
my $KEY = 'WnEdIeTG/VVCLQqGwC/BAkqyY0k+H8NEAtWGejrBI94=';
GmsTest::write_file("$dir/key", "$KEY\n");
write_jwks(GmsTest::JWT::jwks([$k1, 'k1']));

my $s = GmsTest::Edge->start(
    http   => "gms_datahub_version 1.7.0;\n"
              . "gms_token_oauth issuer=$ISS audience=$AUD "
              . "jwks_file=$dir/jwks.json;\n"
              . "gms_token_signing_key_file $dir/key;\n"
              . 'gms_token_cache zone=tokens:1m ttl=30s;',
    server => 'add_header X-Gms-Type $gms_token_type always;',
);

subtest 'a DataHub session token and an OAuth token side by side' => sub {
    my $session = GmsTest::JWT::session($KEY, 'carol');
    my $res = $s->get('/entities/x', $session);
    is($res->{status}, 200, 'the session token: 200');
    is($res->{headers}{'x-gms-type'}, 'SESSION', 'as SESSION');
    is($res->{headers}{'x-gms-actor'}, 'urn:li:corpuser:carol',
       'for its actorId');

    my $t = token();
    $res = $s->get('/entities/x', $t);
    is($res->{status}, 200, 'the OAuth token: 200');
    is($res->{headers}{'x-gms-type'}, 'OAUTH', 'as OAUTH');
    $res = $s->get('/entities/y', $t);
    is($res->{status}, 200, 'again, from the cache: 200');
    is($res->{headers}{'x-gms-type'}, 'OAUTH', 'still OAUTH');
    is($res->{headers}{'x-gms-actor'}, $ALICE, 'for the derived user');

    my $lookups = $s->lookups;
    $res = $s->get('/entities/x',
                   GmsTest::JWT::mint($pub_pem, claims(),
                                      header => { alg => 'HS256' }));
    is($res->{status}, 401,
       'HS256 with the public key and the trusted issuer: 401');
    $res = $s->get('/entities/x',
                   GmsTest::JWT::session('not the key', 'carol'));
    is($res->{status}, 401, 'a DataHub token under another key: 401');
    is($s->lookups - $lookups, 0, 'neither asked Redis');
};

$s->nginx->stop;
is_deeply([$s->nginx->bad_log_lines], [], 'no alerts or crashes');


# --- nginx -t ------------------------------------------------------------------

my $conf = <<'CONF';
load_module %%MODULE%%;
error_log %%TESTDIR%%/error.log;
events { }
http {
    gms_token_salt "";
    gms_datahub_version %%VERSION%%;
    %%HTTP%%
    server {
        listen 127.0.0.1:1;
        location / { gms_token_auth on; }
    }
}
CONF

sub nginx_t {
    my ($http, $version) = @_;
    my $text = $conf =~ s/%%HTTP%%/$http/r;
    return GmsTest::nginx_t($text =~ s/%%VERSION%%/$version \/\/ '1.3.0'/er);
}

GmsTest::write_file("$dir/good.json", GmsTest::JWT::jwks([$k1, 'k1']));
GmsTest::write_file("$dir/bad.json", '{"keys":[]}');

my ($rc, $out) = nginx_t("gms_token_oauth issuer=$ISS audience=a "
                         . "audience=b,c jwks_file=$dir/good.json "
                         . "user_claim=email algorithm=PS256;");
is($rc, 0, 'nginx -t accepts every parameter') or diag($out);

my @refused = (
    ['a file that is no JWKS', "jwks_file=$dir/bad.json",
     qr/is not a JWKS: no RSA key with a kid/],
    ['a missing file', "jwks_file=$dir/none.json", qr/none\.json/],
    ['ES256 (GMS: "ECDSA algorithms not yet supported")',
     "jwks_file=$dir/good.json algorithm=ES256",
     qr/invalid algorithm "algorithm=ES256"/],
    ['HS256', "jwks_file=$dir/good.json algorithm=HS256",
     qr/invalid algorithm/],
);

for my $case (@refused) {
    my ($title, $params, $says) = @$case;
    ($rc, $out) = nginx_t("gms_token_oauth issuer=$ISS audience=a $params;");
    isnt($rc, 0, "nginx -t refuses $title");
    like($out, $says, 'saying what');
}

($rc, $out) = nginx_t("gms_token_oauth issuer=$ISS jwks_file=$dir/good.json;");
like($out, qr/needs issuer=, audience= and jwks_file=/,
     'nginx -t refuses an issuer without an audience');

($rc, $out) = nginx_t("gms_token_oauth issuer=$ISS audience=a "
                      . "jwks_file=$dir/good.json;\n"
                      . "gms_token_oauth issuer=$ISS audience=b "
                      . "jwks_file=$dir/good.json;");
like($out, qr/issuer ".*" is given twice/,
     'nginx -t refuses an issuer given twice');

# GMS before 1.3.0 has no DataHubOAuthAuthenticator: it refuses them all
for my $version (qw(0.13.0 1.2.0)) {
    ($rc, $out) = nginx_t("gms_token_oauth issuer=$ISS audience=a "
                          . "jwks_file=$dir/good.json;", $version);
    isnt($rc, 0, "nginx -t refuses gms_token_oauth for DataHub $version");
    like($out, qr/gms_token_oauth needs DataHub 1\.3\.0 or later (?x:
                  )\(DataHubOAuthAuthenticator\), and gms_datahub_version (?x:
                  )is \Q$version\E here/, '... saying why');
}
($rc, $out) = nginx_t("gms_token_oauth issuer=$ISS audience=a "
                      . "jwks_file=$dir/good.json;", '1.3.0');
is($rc, 0, '... and accepts it for 1.3.0') or diag($out);

done_testing();
