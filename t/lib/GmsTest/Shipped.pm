package GmsTest::Shipped;

# A configuration file of conf-examples/ as shipped, served by a real nginx
# with the module: its http block, with only the addresses, the listening
# port, the access log's path and the secrets' paths replaced by the
# test's.
#
#   my $shipped = GmsTest::Shipped->load('conf-examples/gms-edge.conf');
#   my $pat = $shipped->personal_token($redis, $signing_key, 'alice');
#   my $n = $shipped->start(
#       redis => $redis->port, gms => $gms->port, search => $search->port,
#       access_log => 'shipped-access.log', secrets => $secrets,
#       replace => { qr/server 127\.0\.0\.1:9002;/ => '...' });
#
# A pattern that no longer matches the file bails out: the test would
# otherwise run against the example's own addresses.

use strict;
use warnings;

use Test::More ();

use GmsTest ();
use GmsTest::JWT;
use GmsTest::Nginx;

sub load {
    my ($class, $file) = @_;

    open my $fh, '<', $file or die "$file: $!\n";
    my $text = do { local $/; <$fh> };
    close $fh;

    my ($http) = $text =~ /^http \{\n(.*)^\}\s*\z/ms
        or Test::More::BAIL_OUT("$file: no http block");
    # the salt, when the file gives it (a gms_token_salt_file is the
    # test's to replace)
    my ($salt) = $http =~ /^\s*gms_token_salt "([^"]*)";$/m;
    $http =~ /^\s*gms_token_salt(?:_file)? /m
        or Test::More::BAIL_OUT("$file: no gms_token_salt");

    return bless { file => $file, http => $http, salt => $salt }, $class;
}

sub salt {
    return $_[0]{salt};
}

# A personal token of $user signed with $key, cached in $redis (prefix
# gms:) as hashed with the file's salt, its user allowed to read
# getEsTaskStatus; returns the token.
sub personal_token {
    my ($self, $redis, $key, $user) = @_;
    my $actor = "urn:li:corpuser:$user";
    my $pat = GmsTest::JWT::personal($key, $user);
    my $id = GmsTest::sha256_b64("$pat$self->{salt}");
    $redis->cmd(HSET => "gms:token:$id", actor => $actor, type => 'PERSONAL');
    $redis->cmd(SADD => "gms:actor:$actor", 'GET_ES_TASK_STATUS_PRIVILEGE');
    return $pat;
}

# The http block with the test's ports (redis, gms, search), access log
# (a file name in nginx's directory) and secrets (a directory holding
# gms-signing-key and gms-system-client-secret), each replaced only when
# given; listen always; replace: more patterns.
sub http {
    my ($self, %opt) = @_;

    my %replace = (
        qr/listen 8000;/ => 'listen 127.0.0.1:%%PORT%%;',
        %{ $opt{replace} // {} },
    );

    $replace{qr/gms_token_redis 127\.0\.0\.1:6379;/}
        = "gms_token_redis 127.0.0.1:$opt{redis};" if defined $opt{redis};
    $replace{qr/server 127\.0\.0\.1:8080;/}
        = "server 127.0.0.1:$opt{gms};" if defined $opt{gms};
    $replace{qr/server 127\.0\.0\.1:9200;/}
        = "server 127.0.0.1:$opt{search};" if defined $opt{search};
    $replace{qr{access_log /var/log/nginx/access\.log}}
        = "access_log %%TESTDIR%%/$opt{access_log}"
        if defined $opt{access_log};

    if (defined $opt{secrets}) {
        $replace{qr{/etc/nginx/secrets/gms-signing-key;}}
            = "$opt{secrets}/gms-signing-key;";
        $replace{qr{secret_file=/etc/nginx/secrets/gms-system-client-secret;}}
            = "secret_file=$opt{secrets}/gms-system-client-secret;";
    }

    my $http = $self->{http};
    for my $re (keys %replace) {
        $http =~ s/$re/$replace{$re}/
            or Test::More::BAIL_OUT("$self->{file}: no match for $re");
    }

    return $http;
}

# A GmsTest::Nginx started with http(%opt).
sub start {
    my ($self, %opt) = @_;
    my $n = GmsTest::Nginx->new;
    $n->start($self->http(%opt));
    return $n;
}

1;
