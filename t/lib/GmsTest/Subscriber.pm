package GmsTest::Subscriber;

# A connection SUBSCRIBEd to one channel of a GmsTest::Redis, to see what
# gms-token publishes (the <prefix>invalidate messages an edge acts on):
#
#   my $sub = GmsTest::Subscriber->new($redis, 'gms:invalidate');
#   ... run the tool ...
#   my @messages = $sub->messages;    # what came since the last call
#
# messages() publishes a marker of its own on the channel and reads up to
# it: Redis delivers a channel's messages in the order it ran the PUBLISHes,
# so everything published before the call is read, without waiting on a
# clock.  The RESP reader is GmsTest::Redis's.

use strict;
use warnings;

use GmsTest::Redis;

sub new {
    my ($class, $redis, $channel) = @_;

    my $conn = bless { owner => $$, port => $redis->port, host => $redis->host,
                       opt => $redis->{opt} }, 'GmsTest::Redis';
    $conn->_connect;

    my $reply = $conn->_call(SUBSCRIBE => $channel);
    die "GmsTest::Subscriber: SUBSCRIBE $channel: unexpected reply\n"
        unless ref $reply eq 'ARRAY' && ($reply->[0] // '') eq 'subscribe';

    return bless { conn => $conn, redis => $redis, channel => $channel,
                   marks => 0 }, $class;
}

sub messages {
    my ($self) = @_;

    my $mark = "--GmsTest::Subscriber mark " . ++$self->{marks} . '--';
    $self->{redis}->cmd(PUBLISH => $self->{channel}, $mark);

    my @got;
    while (1) {
        my $m = $self->{conn}->_read_reply;
        next unless ref $m eq 'ARRAY' && ($m->[0] // '') eq 'message';
        last if $m->[2] eq $mark;
        push @got, $m->[2];
    }

    return @got;
}

1;
