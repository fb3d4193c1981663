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
