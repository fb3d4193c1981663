#!/usr/bin/perl

# deploy/kubernetes/, the recipe beside DataHub's Helm chart: every YAML
# file passes yamllint with the shipped configuration and parses; every
# kustomization builds with 'kustomize build'; and what the manifests and
# the chart's values name of the image is the image's, as read here from
# the files that make it: each environment variable one docker/entrypoint.sh
# (or gms-token) reads, each port LISTEN_PORT's, each probe the path of
# docker/healthcheck.sh, the user the Dockerfile's USER, the run directory
# the entry point writes, each command one the image has, each option of
# gms-token follow one its --help names, each secret file one a mounted
# Secret holds, readable by the image's user.  The objects agree with
# each other (selectors, ports, the chart's Service on the sidecar's
# port), and the edge's settings render through the entry point into a
# configuration 'nginx -t' takes.  No cluster: kustomize, yamllint and
# python3's yaml (yamllint's) only, which tools/install-deps.sh installs;
# missing, they fail the test.

use strict;
use warnings;

use File::Basename qw(basename dirname);
use File::Find ();
use FindBin;
use Test::More;

use GmsTest ();
use GmsTest::Tool ();

my $ROOT = dirname($FindBin::Bin);
my $DEPLOY = "$ROOT/deploy/kubernetes";

# acryldata/datahub-helm at 0e3940bd (chart datahub 1.1.0, DataHub
# v1.7.0): the top-level keys of
# charts/datahub/subcharts/datahub-gms/values.yaml, those the subchart's
# templates read
my @CHART_GMS_KEYS = qw(
    replicaCount hpa revisionHistoryLimit image imagePullSecrets
    nameOverride fullnameOverride theme_v2 terminationGracePeriodSeconds
    serviceAccount serviceMonitor annotations podAnnotations
    podSecurityContext securityContext priorityClassName service ingress
    extraLabels extraPodLabels extraEnvs extraVolumes extraVolumeMounts
    extraInitContainers extraSidecars serverShutdownMode
    springShutdownLifeCycleTime resources nodeSelector tolerations affinity
    livenessProbe readinessProbe lifecycle global enabled sql
);

sub out {
    my ($cmd) = @_;
    my $file = GmsTest::scratch_dir() . '/out';
    unlink $file;
    my $rc = GmsTest::run($cmd, $file);
    return ($rc, GmsTest::slurp($file));
}

for my $tool (qw(kustomize yamllint python3)) {
    next if GmsTest::in_path($tool);
    fail("$tool is installed");
    diag("$tool not found: 'sh tools/install-deps.sh' as root installs it"
         . " (kustomize: trixie's package, on bookworm too)");
    done_testing();
    exit;
}

# YAML's documents as Perl data, through python3's yaml (yamllint's)
sub yaml_docs {
    my ($text) = @_;
    my $in = GmsTest::scratch_dir() . '/in.yaml';
    GmsTest::write_file($in, $text);
    my ($rc, $json) = out(['python3', '-c',
        'import json, sys, yaml; '
        . 'print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))',
        $in]);
    return $rc == 0 ? GmsTest::json_decode($json) : undef;
}


# --- the image, as its files make it ---------------------------------------

my $dockerfile = GmsTest::slurp("$ROOT/Dockerfile");
my $entry = GmsTest::slurp("$ROOT/docker/entrypoint.sh");
my $health = GmsTest::slurp("$ROOT/docker/healthcheck.sh");
my $template = GmsTest::slurp("$ROOT/conf-examples/gms-edge.conf.template");

my ($UID, $GID) = $dockerfile =~ /^USER (\d+):(\d+)$/m;
my %EXPOSE = map { $_ => 1 } map { split ' ' } $dockerfile =~ /^EXPOSE (.+)$/mg;
my ($ENTRYPOINT) = $dockerfile =~ /^ENTRYPOINT \["([^"]+)"/m;

# what the image installs, and the directories it makes
my %INSTALLED = map { $_ => 1 } $dockerfile =~ /^COPY .* (\/\S+)$/mg;
my %PROGRAMS = map { basename($_) => 1 }
               grep { m{/bin/} } keys %INSTALLED;
my %IMAGE_DIRS;
for my $cmd ($dockerfile =~ /\b((?:install -d|mkdir -p)[^;\\]*)/g) {
    $IMAGE_DIRS{$_} = 1 for $cmd =~ m{(?:^|\s)(/[\w./-]+)}g;
}

# the variables the entry point reads: ${NAME...}, the lists it loops on,
# secret_param's NAME and NAME_FILE; not those it sets itself
my %assigned = map { $_ => 1 } $entry =~ /^\s*([A-Z][A-Z0-9_]*)=/mg;
my %ENV_NAMES;
$ENV_NAMES{$_} = 1 for $entry =~ /\$\{([A-Z][A-Z0-9_]*)/g;
$ENV_NAMES{$_} = 1 for map { /\b([A-Z][A-Z0-9_]+)\b/g }
                       $entry =~ /^\s*for v in ([A-Z0-9_ \\\n]+?)(?:;|\n)/mg;
$ENV_NAMES{$_} = $ENV_NAMES{"${_}_FILE"} = 1
    for $entry =~ /^\s*secret_param ([A-Z][A-Z0-9_]*)/mg;
delete @ENV_NAMES{ keys %assigned };

# and gms-token's (in the image too)
my %TOOL_ENV;
for my $c (glob("$ROOT/src/tool/*.c"), glob("$ROOT/src/lib/*.c")) {
    $TOOL_ENV{$_} = 1 for GmsTest::slurp($c) =~ /getenv\("(\w+)"\)/g;
}

my ($DEFAULT_PORT) = $entry =~ /\$\{LISTEN_PORT:-(\d+)\}/;
my ($RUN_DIR) = $entry =~ /^default_run_dir\(\) \{.*?run_dir=(\/\S+)/ms;
my ($HEALTH_PATH) = $health =~ /GET (\/\S*) HTTP/;
my ($HEALTH_PORT) = $health =~ /\$\{LISTEN_PORT:-(\d+)\}/;
my %EDGE_COMMANDS = map { $_ => 1 }
                    $entry =~ /^ {4}(gms-edge[\w-]*)\)/mg;

ok($UID && $EXPOSE{$DEFAULT_PORT // ''} && $ENTRYPOINT
   && $INSTALLED{$ENTRYPOINT} && $PROGRAMS{'gms-token'}
   && $IMAGE_DIRS{$RUN_DIR // ''} && $ENV_NAMES{GMS_TOKEN_SALT_FILE}
   && $ENV_NAMES{GMS_UPSTREAM} && $ENV_NAMES{GMS_REDIS_PASSWORD}
   && $TOOL_ENV{GMS_REDIS_PASSWORD}
   && !$ENV_NAMES{NGX_REDIS} && $HEALTH_PATH
   && ($HEALTH_PORT // '') eq $DEFAULT_PORT && $EDGE_COMMANDS{'gms-edge'}
   && $template =~ /^\s*location = \Q$HEALTH_PATH\E \{/m,
   'the image read from its files: user, port, commands, run directory,'
   . ' variables, health check')
    or diag(explain({ uid => $UID, expose => \%EXPOSE,
                      entrypoint => $ENTRYPOINT, installed => \%INSTALLED,
                      dirs => \%IMAGE_DIRS, run_dir => $RUN_DIR,
                      env => [sort keys %ENV_NAMES],
                      health => $HEALTH_PATH }));

# gms-token follow's options, from its own --help
my ($help_rc, $help) = out([GmsTest::Tool::bin(), 'follow', '--help']);
my %FOLLOW_OPTIONS = map { $_ => 1 } $help =~ /^\s+(--[a-z][a-z-]*)/mg;
ok($FOLLOW_OPTIONS{'--gms'} && $FOLLOW_OPTIONS{'--redis'},
   "gms-token follow --help names its options")
    or diag($help);


# --- the files: yamllint, YAML, kustomize build -----------------------------

my @yaml;
File::Find::find(sub { push @yaml, $File::Find::name if /\.ya?ml$/ },
                 $DEPLOY);
@yaml = sort @yaml;
ok(@yaml >= 10, scalar(@yaml) . ' YAML files under deploy/kubernetes');

my ($lint_rc, $lint) = out(['yamllint', '--strict', '-c',
                            "$DEPLOY/.yamllint.yaml", $DEPLOY]);
is($lint_rc, 0, 'yamllint --strict with deploy/kubernetes/.yamllint.yaml')
    or diag($lint);

my %parsed;
for my $file (@yaml) {
    my $docs = yaml_docs(GmsTest::slurp($file));
    ok($docs && @$docs, 'parses: ' . ($file =~ s{^\Q$ROOT/\E}{}r));
    $parsed{$file} = $docs;
}

my %built;
for my $k (grep { basename($_) eq 'kustomization.yaml' } @yaml) {
    my $dir = dirname($k);
    my $name = $dir =~ s{^\Q$DEPLOY/\E}{}r;
    my ($rc, $text) = out(['kustomize', 'build', $dir]);
    is($rc, 0, "kustomize build $name") or diag($text);
    $built{$name} = yaml_docs($text) // [] if $rc == 0;
}
ok($built{standalone} && $built{sidecar}, 'the two layouts built');


# --- every container: what it names of the image ---------------------------

sub of_kind {
    my ($docs, $kind) = @_;
    return grep { ref $_ && ($_->{kind} // '') eq $kind } @$docs;
}

# the variables a container gets: name => value (undef: from a Secret)
sub container_env {
    my ($where, $c, $configmaps) = @_;
    my %env;
    for my $e (@{ $c->{env} // [] }) {
        my $ref = ($e->{valueFrom} // {})->{configMapKeyRef};
        $env{ $e->{name} } = $ref
            ? ($configmaps->{ $ref->{name} } // {})->{ $ref->{key} }
            : $e->{value};
    }
    for my $from (@{ $c->{envFrom} // [] }) {
        my $name = ($from->{configMapRef} // {})->{name} // '';
        my $data = $configmaps->{$name};
        ok($data, "$where: envFrom's ConfigMap $name is built") or next;
        %env = (%$data, %env);
    }
    return \%env;
}

# the secret files a container has: path => the volume's Secret
sub secret_files {
    my ($pod, $c) = @_;
    my %volumes = map { $_->{name} => $_ } @{ $pod->{volumes} // [] };
    my %files;
    for my $m (@{ $c->{volumeMounts} // [] }) {
        my $secret = ($volumes{ $m->{name} } // {})->{secret} or next;
        $files{"$m->{mountPath}/$_->{path}"} = $secret->{secretName}
            for @{ $secret->{items} // [] };
    }
    return \%files;
}

sub check_container {
    my ($where, $pod, $c, $configmaps) = @_;
    $where .= " $c->{name}";

    my %ctx = (%{ $pod->{securityContext} // {} },
               %{ $c->{securityContext} // {} });
    is($ctx{runAsUser}, $UID, "$where: runs as the image's USER $UID");
    is($ctx{runAsGroup}, $GID, "$where: its group $GID");
    ok($ctx{runAsNonRoot}, "$where: runAsNonRoot");

    ok(!$c->{command} || $INSTALLED{ $c->{command}[0] },
       "$where: the image's entry point");

    my @args = @{ $c->{args} // [] };
    my $edge = !@args || $EDGE_COMMANDS{ $args[0] } || $args[0] =~ /^-/;
    ok($edge || $PROGRAMS{ $args[0] },
       "$where: runs the edge or a program of the image ($args[0])")
        if @args;

    # the edge's variables are the entry point's; gms-token's its own, or
    # there for its arguments' $(VAR)
    my $env = container_env($where, $c, $configmaps);
    my %refs = map { $_ => 1 } map { /\$\((\w+)\)/g } @args;
    my @unknown = grep { $edge ? !$ENV_NAMES{$_}
                               : !$TOOL_ENV{$_} && !$refs{$_} }
                  sort keys %$env;
    is("@unknown", '', "$where: every variable is one the image reads");

    my $files = secret_files($pod, $c);
    my @named;
    my %volumes = map { $_->{name} => $_ } @{ $pod->{volumes} // [] };

    if ($edge) {
        my $port = $env->{LISTEN_PORT} // $DEFAULT_PORT;
        my %ports = map { ($_->{name} // '') => $_->{containerPort} }
                    @{ $c->{ports} // [] };
        is_deeply([values %ports], [$port],
                  "$where: its one port is LISTEN_PORT's, $port");
        for my $probe (qw(readinessProbe livenessProbe)) {
            my $get = ($c->{$probe} // {})->{httpGet} // {};
            is($get->{path}, $HEALTH_PATH, "$where: $probe asks"
               . " docker/healthcheck.sh's $HEALTH_PATH");
            my $p = $get->{port} // '';
            is($ports{$p} // $p, $port, "$where: $probe on LISTEN_PORT");
        }

        my $run = $env->{GMS_EDGE_RUN_DIR} // $RUN_DIR;
        my ($mount) = grep { $_->{mountPath} eq $run }
                      @{ $c->{volumeMounts} // [] };
        ok(!($c->{securityContext} // {})->{readOnlyRootFilesystem}
           || ($mount && $volumes{ $mount->{name} }{emptyDir}),
           "$where: the run directory $run writable (an emptyDir)");

        for my $name (grep { /_FILE$/ } sort keys %$env) {
            push @named, $env->{$name};
            ok($files->{ $env->{$name} }, "$where: $name names a file of"
               . " a mounted Secret ($env->{$name})");
        }
    } else {
        is($args[1], 'follow', "$where: gms-token follow");
        my @options = grep { /^--/ } @args;
        my @unknown = grep { !$FOLLOW_OPTIONS{$_} } @options;
        is("@unknown", '', "$where: every option is one of follow's");
        my @undefined = grep { !exists $env->{$_} } sort keys %refs;
        is("@undefined", '', "$where: each \$(VAR) of its arguments set");
        for my $i (0 .. $#args - 1) {
            next unless $args[$i] =~ /^--.*-file$/;
            push @named, $args[$i + 1];
            ok($files->{ $args[$i + 1] }, "$where: $args[$i] names a file"
               . " of a mounted Secret ($args[$i + 1])");
        }
    }

    # each mount: a directory of the image, or a Secret whose files are
    # used and readable by the image's user (root's files: by the pod's
    # fsGroup, a group of every container's user, or by all)
    for my $m (@{ $c->{volumeMounts} // [] }) {
        my $v = $volumes{ $m->{name} };
        ok($v, "$where: volume $m->{name} is the pod's") or next;
        my $used = grep { index($_, "$m->{mountPath}/") == 0 } @named;
        ok($IMAGE_DIRS{ $m->{mountPath} } || ($v->{secret} && $used),
           "$where: $m->{mountPath}: the image's directory, or secret"
           . " files named");
        my $secret = $v->{secret} or next;
        my $mode = $secret->{defaultMode} // 0644;
        ok(($mode & 0040 && defined $pod->{securityContext}{fsGroup})
           || $mode & 0004,
           sprintf("$where: $m->{mountPath}'s files (%04o) readable", $mode));
    }
}

sub labels_match {
    my ($selector, $labels) = @_;
    return %$selector && !grep { ($labels->{$_} // '') ne $selector->{$_} }
                               keys %$selector;
}

my %deployments;
for my $name (sort keys %built) {
    my $docs = $built{$name};
    my %configmaps = map { $_->{metadata}{name} => $_->{data} // {} }
                     of_kind($docs, 'ConfigMap');
    for my $d (of_kind($docs, 'Deployment')) {
        my $where = "$name: Deployment $d->{metadata}{name}";
        my $pod = $d->{spec}{template};
        ok(labels_match($d->{spec}{selector}{matchLabels},
                        $pod->{metadata}{labels}),
           "$where: its selector matches its pods");
        # without the overlay's ConfigMap, the bases are checked there
        next unless %configmaps;
        $deployments{ $d->{metadata}{name} } = $d;
        check_container($where, $pod->{spec}, $_, \%configmaps)
            for @{ $pod->{spec}{containers} };
    }

    for my $o (of_kind($docs, 'PodDisruptionBudget'),
               of_kind($docs, 'Service')) {
        my $sel = $o->{spec}{selector}{matchLabels} // $o->{spec}{selector};
        my @pods = grep { labels_match($sel, $_->{spec}{template}{metadata}
                                                {labels}) }
                   of_kind($docs, 'Deployment');
        ok(@pods == 1, "$name: $o->{kind} $o->{metadata}{name} selects"
           . " one Deployment's pods");
        next unless $o->{kind} eq 'Service' && @pods;
        my %names = map { $_->{name} => 1 }
                    map { @{ $_->{ports} // [] } }
                    @{ $pods[0]{spec}{template}{spec}{containers} };
        ok($names{ $_->{targetPort} }, "$name: Service port $_->{port}"
           . " goes to a port of the pod ($_->{targetPort})")
            for @{ $o->{spec}{ports} };
    }

    for my $h (of_kind($docs, 'HorizontalPodAutoscaler')) {
        my $ref = $h->{spec}{scaleTargetRef};
        ok(grep({ $_->{metadata}{name} eq $ref->{name} }
                of_kind($docs, 'Deployment')),
           "$name: the autoscaler scales $ref->{name}, built beside it");
    }
}

ok($deployments{'gms-edge'} && $deployments{'gms-token-follow'},
   'the edge and the follower checked with their settings');
cmp_ok(($deployments{'gms-token-follow'} // {})->{spec}{replicas} // 0,
       '>=', 2, 'the follower with its standby');


# --- the values for DataHub's Helm chart -----------------------------------

my ($sidecar) = @{ $parsed{"$DEPLOY/helm/datahub-gms-sidecar.yaml"} // [] };
my $gms = ($sidecar // {})->{'datahub-gms'} // {};
my %chart_keys = map { $_ => 1 } @CHART_GMS_KEYS;
my @not_chart = grep { !$chart_keys{$_} } sort keys %$gms;
is("@not_chart", '', "datahub-gms's keys are the chart's");

# the pod as the chart's templates/deployment.yaml makes it: GMS's
# container (port "http", 8080), then extraSidecars; extraVolumes
my $pod = { securityContext => $gms->{podSecurityContext},
            volumes => $gms->{extraVolumes} };
my @sidecars = @{ $gms->{extraSidecars} // [] };
ok(@sidecars, 'the edge as a sidecar');
check_container('helm: sidecar', $pod, $_, {}) for @sidecars;

my %sidecar_ports = map { $_->{name} => $_->{containerPort} }
                    map { @{ $_->{ports} // [] } } @sidecars;
ok($sidecar_ports{ ($gms->{service} // {})->{targetPort} // '' },
   "helm: GMS's Service (service.targetPort) goes to the edge's port");
my %sidecar_env = map { $_->{name} => $_->{value} }
                  map { @{ $_->{env} // [] } } @sidecars;
like($sidecar_env{GMS_UPSTREAM} // '', qr/^(?:127\.0\.0\.1|localhost):8080$/,
     "helm: the edge sends to GMS in its pod, on GMS's containerPort");

my ($standalone) = @{ $parsed{"$DEPLOY/helm/datahub-standalone.yaml"} // [] };
my $gms_host = ((($standalone // {})->{global} // {})->{datahub} // {})->{gms};
my ($edge_service) = grep { $_->{metadata}{name} eq ($gms_host // {})->{host} }
                     of_kind($built{standalone} // [], 'Service');
ok($edge_service && $edge_service->{spec}{ports}[0]{port} == $gms_host->{port},
   "helm: global.datahub.gms names the edge's Service and its port");


# --- the edge's settings through the entry point, then nginx -t ------------

SKIP: {
    my $module = GmsTest::module_path();
    skip 'the module is not built', 2 unless -f $module;

    my $d = $deployments{'gms-edge'};
    my %configmaps = map { $_->{metadata}{name} => $_->{data} // {} }
                     of_kind($built{standalone}, 'ConfigMap');
    my $c = $d->{spec}{template}{spec}{containers}[0];
    my $env = container_env('render', $c, \%configmaps);

    # the image's /etc/gms-edge and run directory, a secret per file, the
    # listening port free here, a cluster DNS in resolv.conf
    my $dir = GmsTest::tempdir();
    mkdir "$dir/$_" or die "$dir/$_: $!\n"
        for qw(conf conf/http.d conf/server.d conf/open-paths run secrets);
    (my $t = $template) =~ s{^load_module\s+\S+;}{load_module $module;}m;
    GmsTest::write_file("$dir/conf/nginx.conf.template", $t);
    GmsTest::write_file("$dir/conf/open-paths/" . basename($_),
                        GmsTest::slurp($_))
        for glob "$ROOT/conf-examples/open-paths/*.conf";
    GmsTest::write_file("$dir/resolv.conf", "nameserver 127.0.0.1\n");
    GmsTest::write_file("$dir/hosts", "127.0.0.1 localhost\n");
    my $port = GmsTest::free_port();

    # make test-asan's (read before the environment is replaced)
    my @wrapper = split ' ', ($ENV{GMS_NGINX_WRAPPER} // '');

    local %ENV = (PATH => dirname(GmsTest::nginx_bin()) . ':/usr/bin:/bin',
                  %$env, LISTEN_PORT => $port,
                  GMS_EDGE_CONF_DIR => "$dir/conf",
                  GMS_EDGE_RUN_DIR => "$dir/run",
                  GMS_EDGE_RESOLV_CONF => "$dir/resolv.conf",
                  GMS_EDGE_HOSTS => "$dir/hosts");
    for my $name (grep { /_FILE$/ } keys %$env) {
        my $file = "$dir/secrets/" . basename($env->{$name});
        GmsTest::write_file($file, "$name-placeholder\n");
        $ENV{$name} = $file;
    }

    my ($rc, $text) = out(['sh', "$ROOT/docker/entrypoint.sh",
                           'gms-edge-render']);
    is($rc, 0, "the entry point takes the edge's settings") or diag($text);

    # nginx -t resolves the upstreams' names: GMS's and the search
    # cluster's Services are 127.0.0.1 here
    my $conf = GmsTest::slurp("$dir/run/nginx.conf");
    $conf =~ s/^(\s*server )[^\s:;]+(:\d+;)/${1}127.0.0.1$2/mg;
    GmsTest::write_file("$dir/run/nginx.conf", $conf);
    ($rc, $text) = out([@wrapper, GmsTest::nginx_bin(), '-t',
                        '-p', "$dir/run/",
                        '-c', "$dir/run/nginx.conf", '-e', "$dir/error.log"]);
    is($rc, 0, "nginx -t with the edge's settings rendered") or diag($text);
}

done_testing();
