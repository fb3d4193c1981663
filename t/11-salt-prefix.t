#!/usr/bin/perl

# The id formula with a salt (non-ASCII bytes included) and a key prefix
# of the operator's choice: ids computed independently, by openssl.

use strict;
use warnings;

use Test::More;
use GmsTest;
use GmsTest::Edge;
use GmsTest::Tool ();

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

# One rule for a secret file, the module's and gms-token's
# (src/lib/gms_secret.c): a CRLF at the end is dropped by both, so the
# edge and the tool give a token the same id; a file of two lines is
# refused by both, never read as its first line or with a CR kept.
{
    my $default = 'ohDVbJBvHHVJh9S/UA4BYF9COuNnqqVhr9MLKEGXk1O=';
    my $dir = GmsTest::scratch_dir();
    GmsTest::write_file("$dir/salt-crlf", "$default\r\n");

    my $f = GmsTest::Edge->start(salt_file => "$dir/salt-crlf");
    my $fid = $f->token('crlf-salted', salt => $default,
                        actor => 'urn:li:corpuser:erin');
    my $res = $f->get('/entities/x', 'crlf-salted');
    is($res->{status}, 200, 'a salt file ending in CRLF: the CRLF dropped');
    is($res->{headers}{'x-gms-id'}, $fid, 'the id with that salt');
    SKIP: {
        skip 'gms-token not built', 1 unless -x GmsTest::Tool::bin();
        is(GmsTest::Tool::run_tool("crlf-salted\n", 'id', '--salt-file',
                                   "$dir/salt-crlf")->{out},
           "$fid\n", 'gms-token --salt-file gives the edge\'s id');
    }
    $f->nginx->stop;

    GmsTest::write_file("$dir/salt-two", "$default\nsecond line\n");
    my ($rc, $out) = GmsTest::nginx_t(
        "load_module %%MODULE%%;\nevents { }\nhttp {\n"
        . "    gms_token_salt_file $dir/salt-two;\n"
        . "    gms_token_redis 127.0.0.1:6379 password_file=$dir/salt-crlf;\n"
        . "    server { listen 127.0.0.1:1; location / { gms_token_auth on; } }\n"
        . "}\n");
    isnt($rc, 0, 'a salt file of two lines: nginx -t fails');
    like($out, qr/"\Q$dir\E\/salt-two" holds more than one line/,
         'saying why, naming the file');
    unlike($out, qr/second line|\Q$default\E/, 'no byte of the salt shown');
    GmsTest::write_file("$dir/password-two", "pa55\nword\n");
    ($rc, $out) = GmsTest::nginx_t(
        "load_module %%MODULE%%;\nevents { }\nhttp {\n"
        . "    gms_token_salt_file $dir/salt-crlf;\n"
        . "    gms_token_redis 127.0.0.1:6379 password_file=$dir/password-two;\n"
        . "    server { listen 127.0.0.1:1; location / { gms_token_auth on; } }\n"
        . "}\n");
    isnt($rc, 0, 'a Redis password file of two lines: nginx -t fails '
                 . '(not its first line taken)');
    like($out, qr/"\Q$dir\E\/password-two" holds more than one line/,
         'saying why');
    SKIP: {
        skip 'gms-token not built', 2 unless -x GmsTest::Tool::bin();
        my $r = GmsTest::Tool::run_tool("crlf-salted\n", 'id', '--salt-file',
                                        "$dir/salt-two");
        isnt($r->{rc}, 0, 'gms-token refuses it too');
        like($r->{err}, qr/holds more than one line/, 'saying why');
    }
}

done_testing();
