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
# Options: salt (default ""), salt_file (instead of salt), prefix ('gms:'), timeout ('500ms'), http (extra http-level
# directives), server (extra server-level directives), redis (a running
# GmsTest::Redis to read instead of one of its own), search (a stub
# handler; without it the cluster address is a closed port), conf (a whole
# http block instead of the default one), persist (Redis keeps its data
# across a kill and start_again), and the nginx options workers, log_level
# (debug) and master.

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

    my $id = GmsTest::sha256_b64($token . ($f{salt} // ''));
    my @fields = (actor => $f{actor} // 'urn:li:corpuser:alice');
    push @fields, expiresAt => $f{expiresAt} if defined $f{expiresAt};
    push @fields, type => $f{type} if defined $f{type};

    $self->{redis}->cmd(HSET => "$self->{prefix}token:$id", @fields);

    return $id;
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

1;
