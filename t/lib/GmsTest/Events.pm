package GmsTest::Events;

# The stand-in GMS's change stream: the Metadata Change Log its changes
# append, and DataHub's Events API serving it (GmsTest::GraphQL routes
# GET /openapi/v1/events/poll here; see its header for the knobs).
#
# The log is one Storable file (events) beside GmsTest::GraphQL's state,
# changed under an flock of events.lock by whoever changes the state: the
# test process (tokens(), users(), ...) and the stub's workers (the
# mutations).  It holds
#   next     per partition, the next Kafka offset (the end)
#   log      the events kept, oldest first: [partition, offset, ms, value]
#   keep     retention: only the last N events kept (undef: all)
#   max_age  retention: events older than SECONDS gone (undef: none)
#
# DataHub's source followed (acryldata/datahub):
# - metadata-service/openapi-servlet/.../v1/event/ExternalEventsController
#   .java: limit capped at 5000 (MAX_LIMIT), pollTimeoutSeconds at 10
#   (MAX_POLL_TIMEOUT_SECONDS); 403 with no body when the caller may not
#   read the topic; any exception 500 {"errorMessage": "An unexpected error
#   occurred: " + its message}.
# - metadata-service/events-service/.../ExternalEventsService.java: the
#   topics served (an other: UnsupportedTopicException, "Unsupported events
#   topic provided: T"); defaults limit 100, pollTimeoutSeconds 5
#   (ExternalEventsServiceFactory); each event {contentType:
#   "application/json", value: the record in Avro's JSON encoding}.
# - KafkaExternalEventsPollHandler.java: no offsetId -> seekToEnd; polls
#   until limit records came or the timeout ran out (a timeout of 0 reads
#   nothing); the answer's offset per partition is the last record's + 1,
#   the others as they were.  An offset outside what the partition keeps
#   is reset by the consumer to the earliest kept (autoOffsetReset
#   earliest, application.yaml kafka.consumer.*): after retention dropped
#   events, the answer skips ahead of the offset asked (a gap).
# - ExternalEventsOffsetCodec.java: offsetId = base64 of the JSON object
#   {"<topic>-<partition>": offset}; anything else "Failed to decode and
#   parse offsetId: <offsetId>".
# - ExternalEventsResponse.java / ExternalEvent.java: {offsetId, count,
#   events: [{contentType, value}], errorMessage} in that order, nulls
#   left out (metadata-service/war/.../gms/ServletConfig.java: the
#   servlet's ObjectMapper, JsonInclude.Include.NON_NULL): an answer has
#   no errorMessage, an error nothing else.
# - metadata-dao-impl/kafka-producer/.../KafkaEventProducer.java: an MCL is
#   produced with the entity URN as its key, so Kafka's default
#   partitioner (murmur2 of the key, Utils.murmur2 / toPositive) puts it
#   on a partition: two partitions here.
# - metadata-events/mxe-utils-avro/.../v1/avro/com/linkedin/mxe/
#   MetadataChangeLog.avsc: the record's fields, in that order, optional
#   ones as Avro JSON unions ({"string": ...}, {"com.linkedin.pegasus2avro.
#   mxe.GenericAspect": {"value": "<aspect JSON>", "contentType":
#   "application/json"}}); the records are written with EventUtils.java's
#   RENAMED_MCL_AVRO_SCHEMA (com.linkedin.pegasus2avro.mxe.MetadataChange-
#   Log.SCHEMA$), so every named type's branch is under com.linkedin.
#   pegasus2avro (...common.AuditStamp); see mcl().  The shapes agree with
#   t/fixtures/datahub/events-poll.constructed.json (i34-events).

use strict;
use warnings;

use Fcntl qw(:flock);
use MIME::Base64 qw(encode_base64 decode_base64);
use Storable ();
use Time::HiRes ();

use GmsTest ();

our $TOPIC = 'MetadataChangeLog_Versioned_v1';
my $PARTITIONS = 2;
my %TOPICS = map { $_ => 1 } 'PlatformEvent_v1', $TOPIC,
                             'MetadataChangeLog_Timeseries_v1';
my ($MAX_LIMIT, $MAX_TIMEOUT) = (5000, 10);
my ($DEFAULT_LIMIT, $DEFAULT_TIMEOUT) = (100, 5);

my $GENERIC = 'com.linkedin.pegasus2avro.mxe.GenericAspect';


# --- the log -----------------------------------------------------------------

sub init {
    my ($dir, %opt) = @_;
    _write("$dir/events", { next => [ (0) x $PARTITIONS ], log => [],
                            keep => $opt{keep}, max_age => $opt{max_age} });
}

# Runs $change on the log under its lock, then applies retention and
# writes it.
sub _change {
    my ($dir, $change) = @_;
    open my $lock, '>>', "$dir/events.lock"
        or die "GmsTest::Events: cannot open $dir/events.lock: $!\n";
    flock $lock, LOCK_EX;
    my $ev = Storable::retrieve("$dir/events");
    $change->($ev);
    _expire($ev);
    _write("$dir/events", $ev);
    close $lock;
}

# Appends events: each [URN (the Kafka key), value (the bytes served)].
sub append {
    my ($dir, @events) = @_;
    return unless @events;
    my $ms = int(Time::HiRes::time() * 1000);
    _change($dir, sub {
        my ($ev) = @_;
        for (@events) {
            my ($key, $value) = @$_;
            my $p = partition($key);
            push @{ $ev->{log} }, [$p, $ev->{next}[$p]++, $ms, $value];
        }
    });
}

# Sets the retention: keep => N (the last N events), max_age => SECONDS;
# undef for either: none.  Applied at once and at each append.
sub retention {
    my ($dir, %opt) = @_;
    _change($dir, sub {
        my ($ev) = @_;
        $ev->{$_} = $opt{$_} for qw(keep max_age);
    });
}

sub _expire {
    my ($ev) = @_;
    my $log = $ev->{log};
    splice @$log, 0, @$log - $ev->{keep}
        if defined $ev->{keep} && @$log > $ev->{keep};
    if (defined $ev->{max_age}) {
        my $oldest = Time::HiRes::time() * 1000 - $ev->{max_age} * 1000;
        shift @$log while @$log && $log->[0][2] < $oldest;
    }
}

# The log as the test process sees it: {next, log, keep, max_age}.
sub read_log {
    my ($dir) = @_;
    return Storable::retrieve("$dir/events");
}

sub _write {
    my ($file, $data) = @_;
    my $tmp = "$file.$$.tmp";
    Storable::store($data, $tmp)
        or die "GmsTest::Events: cannot write $tmp\n";
    rename $tmp, $file or die "GmsTest::Events: cannot rename $tmp: $!\n";
}

# Kafka's Utils.murmur2 on the key's bytes, toPositive, modulo the
# partitions: what the default partitioner does with a keyed record.
sub partition {
    my ($key) = @_;
    return (murmur2($key) & 0x7fffffff) % $PARTITIONS;
}

sub _mul32 {
    my ($a, $b) = @_;
    return ($a * ($b & 0xffff)
            + ((($a * ($b >> 16)) & 0xffff) << 16)) & 0xffffffff;
}

# Utils.murmur2 as an unsigned 32-bit number
sub murmur2 {
    my ($bytes) = @_;
    utf8::encode($bytes) if utf8::is_utf8($bytes);
    my @d = unpack 'C*', $bytes;
    my $len = @d;
    my ($m, $r) = (0x5bd1e995, 24);
    my $h = (0x9747b28c ^ $len) & 0xffffffff;

    my $i = 0;
    for (; $i + 4 <= $len; $i += 4) {
        my $k = $d[$i] | $d[$i + 1] << 8 | $d[$i + 2] << 16 | $d[$i + 3] << 24;
        $k = _mul32($k, $m);
        $k ^= $k >> $r;
        $k = _mul32($k, $m);
        $h = _mul32($h, $m) ^ $k;
    }
    my $rest = $len - $i;
    if ($rest) {
        $h ^= $d[$i + 2] << 16 if $rest == 3;
        $h ^= $d[$i + 1] << 8 if $rest >= 2;
        $h ^= $d[$i];
        $h = _mul32($h, $m);
    }
    $h ^= $h >> 13;
    $h = _mul32($h, $m);
    $h ^= $h >> 15;
    return $h;
}


# --- the records -------------------------------------------------------------

# A MetadataChangeLog record in Avro's JSON encoding (MetadataChangeLog.avsc,
# its fields in order), as ExternalEventsService.convertGenericRecordToJson
# writes it:
#   mcl(type => 'dataHubAccessToken', urn => URN, change => 'UPSERT',
#       aspect_name => NAME, aspect => {...} (the aspect's JSON, or undef),
#       previous => {...} (previousAspectValue), time => MS, actor => URN)
# Returns [URN, the JSON text].
sub mcl {
    my (%f) = @_;
    my $time = $f{time} // int(Time::HiRes::time() * 1000);
    my $actor = $f{actor} // 'urn:li:corpuser:datahub';
    my $sys = '{"com.linkedin.pegasus2avro.mxe.SystemMetadata":{'
        . '"lastObserved":{"long":' . $time . '},'
        . '"runId":{"string":"no-run-id-provided"},'
        . '"lastRunId":{"string":"no-run-id-provided"},'
        . '"pipelineName":null,"registryName":null,"registryVersion":null,'
        . '"properties":null,"version":null}}';
    my $text = '{"auditHeader":null,'
        . '"entityType":' . _j($f{type}) . ','
        . '"entityUrn":{"string":' . _j($f{urn}) . '},'
        . '"entityKeyAspect":null,'
        . '"changeType":' . _j($f{change}) . ','
        . '"aspectName":' . (defined $f{aspect_name}
                             ? '{"string":' . _j($f{aspect_name}) . '}'
                             : 'null') . ','
        . '"aspect":' . _generic($f{aspect}) . ','
        . '"systemMetadata":' . $sys . ','
        . '"headers":null,'
        . '"previousAspectValue":' . _generic($f{previous}) . ','
        . '"previousSystemMetadata":' . (defined $f{previous} ? $sys : 'null')
        . ','
        . '"created":{"com.linkedin.pegasus2avro.common.AuditStamp":{'
        . '"time":' . $time
        . ',"actor":' . _j($actor) . ',"impersonator":null,"message":null}}}';
    return [$f{urn}, $text];
}

sub _j { GmsTest::json_encode($_[0]) }

# GenericAspect: value is Avro bytes, the aspect's JSON text as
# ISO-8859-1 characters (Avro's JsonEncoder); ours are ASCII or UTF-8
# bytes written as such
sub _generic {
    my ($aspect) = @_;
    return 'null' unless defined $aspect;
    return '{"' . $GENERIC . '":{"value":' . _j(_j($aspect))
           . ',"contentType":"application/json"}}';
}

# The events of a token made (createAccessToken: the key and
# DataHubAccessTokenInfo, metadata-models/.../access/token/
# DataHubAccessTokenInfo.pdl and DataHubAccessTokenKey.pdl), or revoked
# (RevokeAccessTokenResolver -> EntityService.deleteUrn: DELETE of each).
sub token_put {
    my ($t, %opt) = @_;
    my $info = { name => $t->{name} // $t->{id}, actorUrn => $t->{actorUrn},
                 ownerUrn => $t->{ownerUrn} // 'urn:li:corpuser:datahub',
                 createdAt => $t->{createdAt} // 0 };
    $info->{expiresAt} = $t->{expiresAt} if defined $t->{expiresAt};
    $info->{description} = $t->{description} if defined $t->{description};
    my $urn = "urn:li:dataHubAccessToken:$t->{id}";
    my %e = (type => 'dataHubAccessToken', urn => $urn, change => 'UPSERT');
    return (($opt{new} ? mcl(%e, aspect_name => 'dataHubAccessTokenKey',
                               aspect => { id => $t->{id} }) : ()),
            mcl(%e, aspect_name => 'dataHubAccessTokenInfo', aspect => $info));
}

sub token_delete {
    my ($t) = @_;
    my $urn = "urn:li:dataHubAccessToken:$t->{id}";
    my %e = (type => 'dataHubAccessToken', urn => $urn, change => 'DELETE');
    return (mcl(%e, aspect_name => 'dataHubAccessTokenInfo',
                previous => { name => $t->{name} // $t->{id},
                              actorUrn => $t->{actorUrn} }),
            mcl(%e, aspect_name => 'dataHubAccessTokenKey',
                previous => { id => $t->{id} }));
}


# --- the Events API, in the stub's workers -----------------------------------

my %LOG;    # dir => [key, log]: read again when its file changed

sub _log {
    my ($dir) = @_;
    my @st = Time::HiRes::stat("$dir/events");
    my $key = join ':', @st[1, 7, 9];
    my $c = $LOG{$dir};
    return $c->[1] if $c && $c->[0] eq $key;
    my $ev = Storable::retrieve("$dir/events");
    $LOG{$dir} = [$key, $ev];
    return $ev;
}

sub _error {
    my ($message) = @_;
    return [500, ['Content-Type' => 'application/json'],
            '{"errorMessage":'
            . _j("An unexpected error occurred: $message") . '}'];
}

# ExternalEventsOffsetCodec.decodeOffsetId: {partition => offset} of the
# topic, or undef (the offsetId is refused).  A key of another topic is
# refused too: the consumer is assigned the topic's partitions only.
sub decode_offset {
    my ($id, $topic) = @_;
    return undef unless $id =~ m{\A[A-Za-z0-9+/]*={0,2}\z};
    my $map = eval { GmsTest::json_decode(decode_base64($id)) };
    return undef unless ref $map eq 'HASH';
    my %out;
    for my $key (keys %$map) {
        my ($t, $p) = $key =~ /\A(.+)-(\d+)\z/ or return undef;
        my $off = $map->{$key};
        return undef unless defined $off && !ref $off && $off =~ /\A\d+\z/
                            && $t eq $topic && $p < $PARTITIONS;
        $out{$p} = 0 + $off;
    }
    return \%out;
}

sub encode_offset {
    my ($pos, $topic) = @_;
    my $json = '{' . join(',', map { _j("$topic-$_") . ':' . $pos->{$_} }
                               sort { $a <=> $b } keys %$pos) . '}';
    return encode_base64($json, '');
}

# The answer to GET /openapi/v1/events/poll once authenticated and
# allowed: a response, or a code ref that answers when limit events came
# or the timeout ran out (GmsTest::Stub runs it again until then).
sub poll {
    my ($dir, $req) = @_;

    my %q;
    for (split /&/, $req->{query} // '') {
        my ($k, $v) = split /=/, $_, 2;
        next unless defined $k;
        $_ = unescape($_) for $k, $v;
        $q{$k} //= $v;    # Spring binds the first
    }

    # Spring's binding: a missing required parameter or a number that is
    # not one is a 400 before the controller
    return [400, [], ''] unless defined $q{topic};
    for (qw(limit pollTimeoutSeconds)) {
        return [400, [], '']
            if defined $q{$_} && $q{$_} !~ /\A[+-]?\d{1,9}\z/;
    }

    my $topic = $q{topic};
    return _error("Unsupported events topic provided: $topic")
        unless $TOPICS{$topic};
    my $limit = $q{limit} // $DEFAULT_LIMIT;
    $limit = $MAX_LIMIT if $limit > $MAX_LIMIT;
    my $timeout = $q{pollTimeoutSeconds} // $DEFAULT_TIMEOUT;
    $timeout = $MAX_TIMEOUT if $timeout > $MAX_TIMEOUT;

    # the other topics are served empty: nothing here produces to them
    my $ev = $topic eq $TOPIC ? _log($dir)
             : { next => [ (0) x $PARTITIONS ], log => [] };

    my $pos;
    if (defined $q{offsetId}) {
        $pos = decode_offset($q{offsetId}, $topic)
            // return _error('Failed to decode and parse offsetId: '
                             . $q{offsetId});
    } else {
        $pos = { map { $_ => $ev->{next}[$_] } 0 .. $PARTITIONS - 1 };
    }
    my %start = %$pos;

    my $deadline = Time::HiRes::time() + $timeout;
    return sub {
        my $ev = $topic eq $TOPIC ? _log($dir) : $ev;
        my ($taken, $latest) = _take($ev, \%start, $limit, $timeout > 0);
        return undef
            if @$taken < $limit && Time::HiRes::time() < $deadline;
        my $body = '{"offsetId":' . _j(encode_offset($latest, $topic))
            . ',"count":' . scalar(@$taken) . ',"events":['
            . join(',', map { '{"contentType":"application/json","value":'
                              . _j($_->[3]) . '}' } @$taken)
            . ']}';
        return [200, ['Content-Type' => 'application/json'], $body];
    };
}

# The events a consumer seeked to $start reads (up to $limit), and the
# offsets after them.  A partition's position outside what it keeps
# (before its earliest kept event, or past its end) is reset to the
# earliest kept (its end if it keeps none): autoOffsetReset earliest.
sub _take {
    my ($ev, $start, $limit, $reads) = @_;

    my %latest = %$start;
    return ([], \%latest) unless $reads && $limit > 0;

    my %first;
    for (@{ $ev->{log} }) {
        $first{ $_->[0] } //= $_->[1];
    }
    my %at;
    for my $p (0 .. $PARTITIONS - 1) {
        my $end = $ev->{next}[$p];
        my $earliest = $first{$p} // $end;
        my $s = $start->{$p} // $earliest;
        $s = $earliest if $s < $earliest || $s > $end;
        $at{$p} = $s;
    }

    my @taken;
    for my $e (@{ $ev->{log} }) {
        last if @taken >= $limit;
        next if $e->[1] < $at{ $e->[0] };
        push @taken, $e;
        $latest{ $e->[0] } = $e->[1] + 1;
    }
    return (\@taken, \%latest);
}

# a query string's value, %XX and + decoded
sub unescape {
    my ($s) = @_;
    return undef unless defined $s;
    $s =~ tr/+/ /;
    $s =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge;
    return $s;
}

1;
