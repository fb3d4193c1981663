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

done_testing();
