#!/usr/bin/perl

# make demo's stand-in for GMS's GraphQL endpoint (POST /api/graphql), the
# one 'gms-token follow' asks: t/lib/GmsTest/GraphQL.pm on a given port,
# knowing the demo's token and a policy granting its user the privileges
# the demo uses.  Runs in the foreground until SIGTERM or SIGINT, then
# stops its workers.  Run by tools/demo.sh as
#
#   perl -I t/lib tools/demo-gms.pl --port N --salt SALT --token-file FILE \
#       --id ID --actor URN --created-at MS --expires-at MS
#
# The token is read from its file (never an argument): the stand-in wants
# it as every request's bearer, as GMS wants a token of an account that
# may list tokens and policies.

use strict;
use warnings;

use Getopt::Long qw(GetOptions);

use GmsTest ();
use GmsTest::GraphQL;
use GmsTest::Stub;

my %o;
GetOptions(\%o, 'port=i', 'salt=s', 'token-file=s', 'id=s', 'actor=s',
           'created-at=i', 'expires-at=i')
    && !@ARGV && 7 == grep { defined $o{$_} }
                     qw(port salt token-file id actor created-at expires-at)
    or die "usage: demo-gms.pl --port N --salt SALT --token-file FILE"
           . " --id ID --actor URN --created-at MS --expires-at MS\n";

my $token = GmsTest::slurp($o{'token-file'});
$token =~ s/\n\z//;

# the token as GMS lists it (AccessTokenMetadata, as the demo minted it)
my %metadata = (
    urn       => "urn:li:dataHubAccessToken:$o{id}",
    id        => $o{id},
    actorUrn  => $o{actor},
    ownerUrn  => $o{actor},
    name      => 'demo',
    createdAt => $o{'created-at'},
    expiresAt => $o{'expires-at'},
);

# a PLATFORM policy for the demo user: getEsTaskStatus's privilege, and
# making tokens of one's own
my %policy = (
    urn        => 'urn:li:dataHubPolicy:demo',
    name       => 'demo',
    privileges => [qw(GET_ES_TASK_STATUS_PRIVILEGE
                      GENERATE_PERSONAL_ACCESS_TOKENS)],
    actors     => { users => [ $o{actor} ] },
);

my $gms = GmsTest::GraphQL->start(token => $token, port => $o{port},
                                  tokens => [ \%metadata ],
                                  policies => [ \%policy ],
                                  salt => $o{salt}, caller => $o{actor});

# exit runs the harness's END, which stops the stub's workers
my $stop = 0;
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };

print "stand-in GMS GraphQL on ", $gms->url, "/api/graphql\n";
sleep 1 until $stop;
exit 0;
