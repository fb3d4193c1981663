#!/usr/bin/perl

# The id formula with a salt (non-ASCII bytes included) and a key prefix
# of the operator's choice: ids computed independently, by openssl.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;

my $salt = "s\xc3\xa4lt-\xe2\x82\xac-\x01";   # UTF-8 and a control byte
my $e = GmsTest::Edge->start(salt => $salt, prefix => 'datahub:edge:');

my $id = $e->token('salted-token', salt => $salt,
                   actor => 'urn:li:corpuser:carol');

is($id, GmsTest::sha256_b64("salted-token$salt"), 'id seeded by openssl');

ok($e->redis->cmd(EXISTS => "datahub:edge:token:$id"), 'key under the prefix');

my $res = $e->get('/entities/x', 'salted-token');
is($res->{status}, 200, 'salted id found under the prefix');
is($res->{headers}{'x-gms-id'}, $id, 'the module computes the same id');
is(GmsTest::json_decode($res->{body})->{header}{'x-datahub-actor'},
   'urn:li:corpuser:carol', 'actor');

# the same token stored under its unsalted id, or under the default
# prefix, is not found: both salt and prefix are really used
$e->redis->cmd(DEL => "datahub:edge:token:$id");
$e->token('salted-token', actor => 'urn:li:corpuser:carol');
is($e->get('/entities/x', 'salted-token')->{status}, 401,
   'unsalted id is not accepted');
$e->redis->cmd(HSET => "gms:token:$id", actor => 'urn:li:corpuser:carol');
is($e->get('/entities/x', 'salted-token')->{status}, 401,
   'default prefix is not used');

$e->nginx->stop;
is_deeply([$e->nginx->bad_log_lines], [], 'no alerts');

# gms_token_salt_file: the salt as a mounted secret holds it, one trailing
# newline dropped (as gms-token --salt-file reads it); DataHub's default
# salt before 1.5 here
{
    my $default = 'ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O=';
    my $file = GmsTest::scratch_dir() . '/salt';
    GmsTest::write_file($file, "$default\n");

    my $f = GmsTest::Edge->start(salt_file => $file);
    my $fid = $f->token('file-salted', salt => $default,
                        actor => 'urn:li:corpuser:dave');
    my $res = $f->get('/entities/x', 'file-salted');
    is($res->{status}, 200, 'salt read from gms_token_salt_file');
    is($res->{headers}{'x-gms-id'}, $fid, 'the id with that salt');

    $f->token('newline-salted', salt => "$default\n");
    is($f->get('/entities/x', 'newline-salted')->{status}, 401,
       'the trailing newline is not part of the salt');

    $f->nginx->stop;
    is_deeply([$f->nginx->bad_log_lines], [], 'no alerts');
}

done_testing();
