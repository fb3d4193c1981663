package GmsTest::Edge;

# The whole edge for a test: a real redis-server, a stand-in GMS that
# echoes what it received (GmsTest::Stub->echo), optionally a stand-in
# search cluster, and nginx with the module in front of them.
#
#   my $e = GmsTest::Edge->start(search => sub { ... });
#   $e->token('secret', actor => 'urn:li:corpuser:alice');
#   $e->grant('urn:li:corpuser:alice', 'GET_ES_TASK_STATUS_PRIVILEGE');
#   my $res = $e->get('/entities/x', 'secret');
#
# Options: salt (default ""), salt_file (instead of salt), prefix
# ('gms:'), timeout ('500ms'), http (extra http-level directives), server
# (extra server-level directives), redis (a running GmsTest::Redis to read
# instead of one of its own), search (a stub handler, as
# GmsTest::Stub::search_cluster makes; without it the cluster address is
# a closed port), conf (a whole
# http block instead of the default one), persist (Redis keeps its data
# across a kill and start_again), and the nginx options workers, log_level
# (debug) and master.
#
# For the tests of the Redis topologies, nginx alone in front of a Redis,
# a Sentinel or a Cluster (no stand-in GMS): /ok a file behind the token
# check, /open without one, /metrics; one worker, an info log.
#
#   my $n = GmsTest::Edge->topology(sentinel => $s,
#                                   options => 'replica=prefer');
#   GmsTest::Edge::seed($s->master, 'token-1');
#   is($n->http(GET => '/ok', { Authorization => 'Bearer token-1' })
#      ->{status}, 200);

use strict;
use warnings;

use GmsTest ();

# The default edge: both path forms of GMS, getEsTaskStatus on both, an
# open location, one that needs a privilege, and headers that expose the
# module's variables to the tests.
my $CONF = <<'CONF';
    gms_token_redis 127.0.0.1:%%REDIS%%;
    gms_token_redis_timeout %%TIMEOUT%%;
    gms_token_key_prefix %%PREFIX%%;
    %%SALT%%
    %%HTTP%%

    map $request_uri $gms_stripped_uri {
        ~^/api/gms(?<rest>/.*)$  $rest;
        default                  /;
    }

    upstream gms {
        server 127.0.0.1:%%GMS%%;
        keepalive 16;
    }

    upstream search {
        server 127.0.0.1:%%SEARCH%%;
    }

    server {
        listen 127.0.0.1:%%PORT%%;

        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header X-DataHub-Actor $gms_token_actor;

        add_header X-Gms-Result $gms_token_result always;
        add_header X-Gms-Id $gms_token_id always;
        add_header X-Gms-Actor $gms_token_actor always;
        add_header X-Gms-Privileges $gms_token_privileges always;

        gms_token_auth on;

        location /operations {
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }

        location /api/gms/ {
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms$gms_stripped_uri;
        }

        location /open/ {
            gms_token_auth off;
            # getEsTaskStatus is answered on GMS's own path only: a prefix
            # stripped by rewrite, as for GMS mounted elsewhere
            rewrite ^/open(/operations)$ $1 break;
            gms_es_task_status /_es_tasks/;
            proxy_pass http://gms;
        }

        location /admin/ {
            gms_token_require_privilege MANAGE_ACCESS_TOKENS
                                        GENERATE_PERSONAL_ACCESS_TOKENS;
            proxy_pass http://gms;
        }

        location / {
            proxy_pass http://gms;
        }

        location /_es_tasks/ {
            internal;
            proxy_pass http://search/_tasks/;
            proxy_connect_timeout 1s;
            proxy_read_timeout 1s;
            subrequest_output_buffer_size 8m;
        }

        %%SERVER%%
    }
CONF


sub start {
    my ($class, %opt) = @_;

    GmsTest::need_module();
    GmsTest::need_redis();

    my $self = bless { prefix => $opt{prefix} // 'gms:' }, $class;

    # several edges may read one Redis, as behind one follower
    $self->{redis} = $opt{redis}
                     // GmsTest::Redis->start(persist => $opt{persist});
    $self->{gms} = GmsTest::Stub->echo;
    $self->{search} = GmsTest::Stub->start(handler => $opt{search})
        if $opt{search};

    # debug level by default: nginx's own debug lines exercise more of the
    # module (event idents, masking of tokens) than an info log does
    my %nginx_opt = (log_level => 'debug',
                     map { exists $opt{$_} ? ($_ => $opt{$_}) : () }
                     qw(workers log_level master));

    $self->{nginx} = GmsTest::Nginx->new(%nginx_opt);
    $self->{conf} = $opt{conf} // $CONF;
    $self->{nginx}->start($self->{conf}, vars => {
        REDIS   => $self->{redis}->port,
        GMS     => $self->{gms}->port,
        SEARCH  => $self->{search} ? $self->{search}->port
                                   : GmsTest::free_port(),
        TIMEOUT => $opt{timeout} // '500ms',
        PREFIX  => $self->{prefix},
        # the module refuses to check tokens without a salt: an empty one
        # is a choice a test makes, as an operator would
        SALT    => defined $opt{salt_file}
                   ? "gms_token_salt_file $opt{salt_file};"
                   : 'gms_token_salt "' . ($opt{salt} // '') . '";',
        HTTP    => $opt{http} // '',
        SERVER  => $opt{server} // '',
    });

    return $self;
}

# nginx -s reload with another key prefix or salt (master => 1 needed)
sub reload {
    my ($self, %opt) = @_;

    my $vars = $self->{nginx}{opt}{vars};
    if (defined $opt{prefix}) {
        $vars->{PREFIX} = $opt{prefix};
        $self->{prefix} = $opt{prefix};
    }
    $vars->{SALT} = qq{gms_token_salt "$opt{salt}";} if defined $opt{salt};

    $self->{nginx}->reload($self->{conf});
}

sub nginx  { $_[0]{nginx} }
sub redis  { $_[0]{redis} }
sub gms    { $_[0]{gms} }
sub search { $_[0]{search} }

# Seeds a token as the metadata service would: the key is the id, computed
# here independently of the module (openssl), never the raw token.
sub token {
    my ($self, $token, %f) = @_;
    return seed($self->{redis}, $token, prefix => $self->{prefix}, %f);
}

sub grant {
    my ($self, $actor, @privileges) = @_;
    return $self->{redis}->cmd(SADD => "$self->{prefix}actor:$actor",
                               @privileges);
}

sub deny {
    my ($self, $actor, @privileges) = @_;
    return $self->{redis}->cmd(SREM => "$self->{prefix}actor:$actor",
                               @privileges);
}

# Lookups the module made so far: the EVALSHA and EVAL calls Redis saw (a
# token's lookup and a session or OAuth token's user's are the same
# script).
sub lookups {
    my ($self) = @_;

    my $info = $self->{redis}->cmd(INFO => 'commandstats');
    my $n = 0;
    $n += $1 while $info =~ /^cmdstat_eval(?:sha)?:calls=(\d+)/mg;

    return $n;
}

sub get {
    my ($self, $path, $token, %headers) = @_;
    $headers{Authorization} = "Bearer $token" if defined $token;
    return $self->{nginx}->http(GET => $path, \%headers);
}


# --- the Redis topologies ----------------------------------------------------

my $TOPOLOGY_CONF = <<'CONF';
    %%STORE%%
    gms_token_redis_timeout %%TIMEOUT%%;
    %%PREFIX%%
    gms_token_salt "";
    %%HTTP%%

    server {
        listen 127.0.0.1:%%PORT%%;
        gms_token_auth on;
        %%SERVER%%

        location / { root %%TESTDIR%%; }
        location /open { gms_token_auth off; return 200 "open\n"; }
        location = /metrics { gms_token_auth off; gms_token_metrics; }
    }
CONF

# The http block of topology(): one of
#   redis => a GmsTest::Redis (tls => 1: its TLS port),
#   sentinel => a Sentinel (GmsTest::Sentinel or ->fake), several in an
#     array, or an array of "host:port"; master => its name (the first
#     Sentinel's, else "gms"),
#   cluster => a GmsTest::Cluster (tls => 1: the TLS ports) or an array of
#     "host:port" seeds,
#   directives => the gms_token_redis* lines as they are (resolver, TLS);
# options (after the addresses), timeout (500ms), http and server (more
# directives).  The key prefix is "gms:"; a cluster's, its default
# "{gms}:".
sub topology_conf {
    my ($class, %opt) = @_;

    my $store = $opt{directives};
    my $options = defined $opt{options} ? " $opt{options}" : '';

    if (my $r = $opt{redis}) {
        $store = 'gms_token_redis ' . $r->address(tls => $opt{tls})
                 . "$options;";

    } elsif (my $s = $opt{sentinel}) {
        my @s = ref $s eq 'ARRAY' ? @$s : ($s);
        my $master = $opt{master}
                     // (ref $s[0] ? $s[0]->name : 'gms');
        $store = 'gms_token_redis_sentinel '
                 . join(' ', map { ref $_ ? $_->addresses : $_ } @s)
                 . " master=$master$options;";

    } elsif (my $c = $opt{cluster}) {
        my @seeds = ref $c eq 'ARRAY' ? @$c : $c->addresses(tls => $opt{tls});
        $store = "gms_token_redis_cluster @seeds$options;";
    }

    die "GmsTest::Edge->topology_conf: no Redis\n" unless defined $store;

    return GmsTest::substitute($TOPOLOGY_CONF,
        STORE   => $store,
        TIMEOUT => $opt{timeout} // '500ms',
        PREFIX  => $opt{cluster} ? '' : 'gms_token_key_prefix gms:;',
        HTTP    => $opt{http} // '',
        SERVER  => $opt{server} // '',
        # left for GmsTest::Nginx
        PORT    => '%%PORT%%',
        TESTDIR => '%%TESTDIR%%');
}

# nginx for topology_conf(), not started yet: /ok in its directory; one
# worker unless workers.
sub topology_nginx {
    my ($class, %opt) = @_;

    my $n = GmsTest::Nginx->new(log_level => 'info',
                                workers => $opt{workers} // 1);
    GmsTest::write_file($n->dir . '/ok', "ok\n");

    return $n;
}

# nginx started with topology_conf(%opt) (workers: 1; expect_fail: the
# start-up errors, as GmsTest::Nginx->start returns them); returns the
# GmsTest::Nginx.
sub topology {
    my ($class, %opt) = @_;

    my $n = $class->topology_nginx(workers => $opt{workers});
    my $r = $n->start($class->topology_conf(%opt),
                      expect_fail => $opt{expect_fail});

    return $opt{expect_fail} ? $r : $n;
}

# Seeds a token in $store (a GmsTest::Redis or GmsTest::Cluster) as the
# metadata service would: the key is the id (salted with salt, "" by
# default), computed here independently of the module (openssl), never
# the raw token; the key prefix is "gms:", a cluster's "{gms}:".  Fields:
# actor (alice), expiresAt, type.  Returns the id.
sub seed {
    my ($store, $token, %f) = @_;

    my $prefix = $f{prefix}
                 // (ref $store eq 'GmsTest::Cluster' ? '{gms}:' : 'gms:');
    my $id = GmsTest::sha256_b64($token . ($f{salt} // ''));
    my @fields = (actor => $f{actor} // 'urn:li:corpuser:alice');
    push @fields, expiresAt => $f{expiresAt} if defined $f{expiresAt};
    push @fields, type => $f{type} if defined $f{type};

    $store->cmd(HSET => "${prefix}token:$id", @fields);

    return $id;
}

1;
