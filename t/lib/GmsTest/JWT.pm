package GmsTest::JWT;

# Access tokens minted as DataHub's metadata service mints them: an HS256
# JWT (JJWT's compact form) whose HMAC key is the bytes of the signing key
# string, the claims of StatelessTokenService (session tokens, version "1")
# and StatefulTokenService (personal and service-account tokens, version
# "2"):
#
#   my $jwt = GmsTest::JWT::session($key, 'alice', exp => time + 60);
#   my $pat = GmsTest::JWT::personal($key, 'alice');
#   my $bad = GmsTest::JWT::mint($key, { actorId => 42 },
#                                header => { alg => 'none' }, sig => '');
#
# JSON is compact with sorted keys; every part is base64url without
# padding.  Shares no code with the module: Digest::SHA and MIME::Base64.

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256);
use JSON::PP ();
use MIME::Base64 qw(encode_base64url decode_base64url);

my $JSON = JSON::PP->new->utf8->canonical;

my %VERSION = (SESSION => '1', PERSONAL => '2', SERVICE_ACCOUNT => '2');


# mint($key, \%claims, %opt): the compact JWT signed with $key.
#   header          a hashref, or the header's raw JSON text
#                   (default {"alg":"HS256"}, as JJWT writes it)
#   payload_raw     the payload's text instead of the claims' JSON
#   payload_segment the payload's part as it goes in the token, unencoded
#   hmac            the function signing "<header>.<payload>" with the key
#                   (default Digest::SHA::hmac_sha256)
#   sig             the signature part as it goes in the token
sub mint {
    my ($key, $claims, %opt) = @_;

    my $header = $opt{header} // { alg => 'HS256' };
    $header = $JSON->encode($header) if ref $header;

    my $payload = $opt{payload_segment}
                  // encode_base64url($opt{payload_raw}
                                      // $JSON->encode($claims));

    my $input = encode_base64url($header) . '.' . $payload;
    my $hmac = $opt{hmac} // \&hmac_sha256;

    return "$input." . ($opt{sig} // encode_base64url($hmac->($input, $key)));
}

# DataHub's claims for a token of $type for the user $actor_id; %over
# replaces claims, and a claim given as undef is left out (exp => undef: a
# token that never expires).  exp defaults to an hour from now.
sub claims {
    my ($type, $actor_id, %over) = @_;

    my %c = (
        actorType => 'USER',
        actorId   => $actor_id,
        type      => $type,
        version   => $VERSION{$type} // '2',
        jti       => _uuid(),
        sub       => $actor_id,
        exp       => time() + 3600,
        iss       => 'datahub-metadata-service',
        %over,
    );
    delete @c{ grep { !defined $c{$_} } keys %c };

    # a number the caller interpolated somewhere would go out as a string
    $c{$_} += 0 for grep { exists $c{$_} && $c{$_} =~ /^-?\d+\z/ }
                    qw(exp nbf iat);

    return \%c;
}

sub session {
    my ($key, $actor_id, %over) = @_;
    return mint($key, claims('SESSION', $actor_id, %over));
}

sub personal {
    my ($key, $actor_id, %over) = @_;
    return mint($key, claims('PERSONAL', $actor_id, %over));
}

sub service_account {
    my ($key, $actor_id, %over) = @_;
    return mint($key, claims('SERVICE_ACCOUNT', $actor_id, %over));
}

# External OAuth tokens (DataHub 1.3's DataHubOAuthAuthenticator): an RSA
# key pair made by the openssl CLI, its public half as a JWK, and tokens
# signed with it, as an identity provider signs them:
#
#   my $pem = GmsTest::JWT::rsa_key("$dir/k1.pem");
#   my $jwks = GmsTest::JWT::jwks([$pem, 'k1']);
#   my $t = GmsTest::JWT::rs256($pem, 'k1', { iss => ..., aud => ..., ... });
#
# rs256(..., header => {...}) replaces the header; alg => 'RS384' (or
# PS256 ...) signs with that algorithm instead.

# A new 2048-bit RSA private key in $path (PEM); returns $path.
sub rsa_key {
    my ($path, $bits) = @_;
    _openssl('genpkey', '-quiet', '-algorithm', 'RSA', '-pkeyopt',
             'rsa_keygen_bits:' . ($bits // 2048), '-out', $path);
    return $path;
}

# The public half of $path in PEM, as a string.
sub public_pem {
    my ($path) = @_;
    return _openssl('pkey', '-in', $path, '-pubout');
}

# {"kty":"RSA","kid":...,"n":...,"e":...} of the key in $path.
sub jwk {
    my ($path, $kid) = @_;
    my ($n) = _openssl('rsa', '-in', $path, '-noout', '-modulus')
              =~ /Modulus=([0-9A-F]+)/;
    my $e_text = _openssl('rsa', '-in', $path, '-noout', '-text');
    my ($e) = $e_text =~ /publicExponent: (\d+)/;
    my $e_hex = sprintf('%x', $e);
    $e_hex = "0$e_hex" if length($e_hex) % 2;
    return { kty => 'RSA', use => 'sig', kid => $kid,
             n => encode_base64url(pack('H*', $n)),
             e => encode_base64url(pack('H*', $e_hex)) };
}

# A JWKS document of ([$path, $kid], ...).
sub jwks {
    my (@keys) = @_;
    return $JSON->encode({ keys => [map { jwk(@$_) } @keys] });
}

# A token of %$claims signed with the key in $path, its header naming $kid.
sub rs256 {
    my ($path, $kid, $claims, %opt) = @_;
    my $alg = $opt{alg} // 'RS256';
    my ($bits) = $alg =~ /(\d+)$/;
    my @pss = $alg =~ /^PS/
              ? ('-sigopt', 'rsa_padding_mode:pss', '-sigopt',
                 'rsa_pss_saltlen:digest')
              : ();
    return mint($path, $claims,
                header => $opt{header} // { alg => $alg, kid => $kid,
                                            typ => 'JWT' },
                hmac => sub {
                    my ($input, $key) = @_;
                    return _openssl_in($input, 'dgst', "-sha$bits", @pss,
                                       '-sign', $key);
                });
}

sub _openssl {
    my (@args) = @_;
    open my $fh, '-|', 'openssl', @args
        or die "cannot run openssl: $!\n";
    local $/;
    my $out = <$fh> // '';
    close $fh or die "openssl @args failed\n";
    return $out;
}

# openssl with $input on its stdin (through a temporary file)
sub _openssl_in {
    my ($input, @args) = @_;
    require File::Temp;
    my $tmp = File::Temp->new;
    binmode $tmp;
    print $tmp $input;
    close $tmp;
    open my $fh, '-|', 'openssl', @args, $tmp->filename
        or die "cannot run openssl: $!\n";
    binmode $fh;
    local $/;
    my $out = <$fh> // '';
    close $fh or die "openssl @args failed\n";
    return $out;
}

# The three parts of a token: its header and claims decoded, its signature
# part as it is.
sub parts {
    my ($jwt) = @_;
    my ($h, $p, $s) = split /\./, $jwt, 3;
    return ($JSON->decode(decode_base64url($h)),
            $JSON->decode(decode_base64url($p)), $s);
}

sub _uuid {
    my @b = map { int rand 256 } 1 .. 16;
    $b[6] = $b[6] & 0x0f | 0x40;
    $b[8] = $b[8] & 0x3f | 0x80;
    return sprintf '%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-'
                   . '%02x%02x%02x%02x%02x%02x', @b;
}

1;
