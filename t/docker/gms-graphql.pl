#!/usr/bin/perl

# make docker-test's stand-in for GMS's GraphQL API, for 'gms-token
# follow' running in the image: GmsTest::GraphQL (listAccessTokens,
# listPolicies ... as t/41-gms-sync.t and t/45-follow-edge.t use it) on
# the host's loopback, for as long as this process lives.
#
#   perl -I t/lib t/docker/gms-graphql.pl DIR
#
# DIR/pat holds the token the follower must present; DIR/tokens the tokens
# DataHub lists, one "id actor" line each (the id as GMS stores it:
# base64 of SHA-256 of token and salt).  SIGHUP reads DIR/tokens again:
# a line removed is a token revoked in DataHub.  The port is written to
# DIR/port once it listens; SIGTERM stops it.

use strict;
use warnings;

use GmsTest::GraphQL;

my $dir = shift // die "usage: gms-graphql.pl DIR\n";

sub slurp {
    open my $fh, '<', $_[0] or die "$_[0]: $!\n";
    local $/;
    return scalar <$fh>;
}

my $now = time() * 1000;

sub listed {
    return [ map {
        my ($id, $actor) = split ' ';
        { urn => "urn:li:dataHubAccessToken:$id", id => $id,
          actorUrn => $actor, ownerUrn => $actor, name => "docker-$id",
          createdAt => $now - 86_400_000, expiresAt => $now + 86_400_000 }
    } grep { /\S/ } split /\n/, slurp("$dir/tokens") ];
}

(my $pat = slurp("$dir/pat")) =~ s/\n\z//;
my $gms = GmsTest::GraphQL->start(token => $pat, tokens => listed());

my $stop = 0;
$SIG{HUP} = sub { $gms->tokens(listed()) };
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };

open my $fh, '>', "$dir/port.tmp" or die "$dir/port.tmp: $!\n";
print $fh $gms->port, "\n";
close $fh;
rename "$dir/port.tmp", "$dir/port" or die "$dir/port: $!\n";

sleep 1 until $stop;
$gms->stop;
