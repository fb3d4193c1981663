package GmsTest::Certs;

# Certificates for TLS tests, made with the openssl command line in a
# temporary directory (EC P-256 keys: fast to make):
#
#   my $c = GmsTest::Certs->new;
#   $c->{ca}, $c->{ca_key}            the test CA
#   $c->{server_cert}, $c->{server_key}
#                                     signed by the CA, for the names
#                                     localhost, redis.test, 127.0.0.1, ::1
#   $c->{client_cert}, $c->{client_key}
#                                     signed by the CA (mutual TLS)
#   $c->{wrong_ca}, $c->{wrong_ca_key}
#                                     a CA that signed none of them
#   $c->{dir}
#
# Paths are absolute.  One set per test file is enough: new() caches the
# first set made in this process unless called with fresh => 1.

use strict;
use warnings;

use GmsTest ();

my $SAN = 'DNS:localhost,DNS:redis.test,IP:127.0.0.1,IP:::1';

my $cached;

sub new {
    my ($class, %opt) = @_;

    return $cached if $cached && !$opt{fresh};

    my $dir = GmsTest::tempdir();
    my $self = bless { dir => $dir }, $class;

    $self->_ca('ca', 'GmsTest CA');
    $self->_ca('wrong_ca', 'GmsTest Wrong CA');
    $self->_leaf('server', 'localhost',
                 "subjectAltName=$SAN\nextendedKeyUsage=serverAuth\n");
    $self->_leaf('client', 'gms-edge',
                 "extendedKeyUsage=clientAuth\n");

    $cached = $self unless $opt{fresh};
    return $self;
}

sub dir {
    return $_[0]{dir};
}


sub _openssl {
    my ($self, @args) = @_;

    my $out = "$self->{dir}/openssl.out";
    my $rc = GmsTest::run(['openssl', @args], $out);
    die "GmsTest::Certs: openssl @args[0, 1] failed ($rc):\n"
        . GmsTest::slurp($out) if $rc;
}

sub _key {
    my ($self, $path) = @_;
    $self->_openssl('genpkey', '-algorithm', 'EC',
                    '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', $path);
}

sub _ca {
    my ($self, $name, $cn) = @_;

    my $dir = $self->{dir};
    $self->_key("$dir/$name.key");
    $self->_openssl('req', '-x509', '-new', '-key', "$dir/$name.key",
                    '-subj', "/CN=$cn", '-days', 30, '-sha256',
                    '-addext', 'basicConstraints=critical,CA:TRUE',
                    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
                    '-out', "$dir/$name.crt");

    $self->{$name} = "$dir/$name.crt";
    $self->{"${name}_key"} = "$dir/$name.key";
}

sub _leaf {
    my ($self, $name, $cn, $ext) = @_;

    my $dir = $self->{dir};
    GmsTest::write_file("$dir/$name.ext",
        "basicConstraints=CA:FALSE\n"
        . "keyUsage=critical,digitalSignature,keyEncipherment\n" . $ext);

    $self->_key("$dir/$name.key");
    $self->_openssl('req', '-new', '-key', "$dir/$name.key",
                    '-subj', "/CN=$cn", '-out', "$dir/$name.csr");
    $self->_openssl('x509', '-req', '-in', "$dir/$name.csr",
                    '-CA', $self->{ca}, '-CAkey', $self->{ca_key},
                    '-CAcreateserial', '-days', 30, '-sha256',
                    '-extfile', "$dir/$name.ext", '-out', "$dir/$name.crt");

    $self->{"${name}_cert"} = "$dir/$name.crt";
    $self->{"${name}_key"} = "$dir/$name.key";
}

1;
