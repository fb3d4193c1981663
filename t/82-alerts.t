#!/usr/bin/perl

# The shipped alerts and dashboard, as a platform team would load them:
# deploy/prometheus/gms-edge-alerts.yml passes `promtool check rules`, and
# `promtool test rules` (its .test.yml: each alert fires on the synthetic
# series that should fire it and stays silent on the healthy ones); every
# alert has a summary and a runbook whose anchor docs/operations.md has,
# and a test that fires it; the PrometheusRule in
# deploy/kubernetes/monitoring holds the same groups, as
# tools/prometheusrule.sh makes them; every query of the Grafana dashboard
# (deploy/grafana/gms-edge.json) is PromQL promtool accepts; and every
# metric the alerts and the dashboard name is one a live edge exports,
# whose /metrics passes `promtool check metrics`.  promtool is Debian's
# prometheus package's (tools/install-deps.sh installs it).

use strict;
use warnings;

use File::Temp qw(tempdir);
use FindBin;
use JSON::PP;
use Test::More;

use GmsTest;
use GmsTest::Edge;

my $top = "$FindBin::Bin/..";
my $rules = "$top/deploy/prometheus/gms-edge-alerts.yml";
my $rules_test = "$top/deploy/prometheus/gms-edge-alerts.test.yml";
my $operator = "$top/deploy/kubernetes/monitoring/prometheusrule.yaml";
my $dashboard = "$top/deploy/grafana/gms-edge.json";

for my $tool (qw(promtool python3)) {
    system("command -v $tool >/dev/null 2>&1") == 0
        or BAIL_OUT("$tool is missing: run tools/install-deps.sh "
                    . "(Debian's prometheus package has promtool)");
}

# (exit status, stdout and stderr) of a command, stdin from a string
sub run {
    my ($input, @cmd) = @_;
    my $dir = tempdir(CLEANUP => 1);
    GmsTest::write_file("$dir/in", $input // '');
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', "$dir/in" or die;
        open STDOUT, '>', "$dir/out" or die;
        open STDERR, '>&', \*STDOUT or die;
        exec @cmd or die "exec $cmd[0]: $!";
    }
    waitpid $pid, 0;
    return ($? >> 8, GmsTest::slurp("$dir/out"));
}

# a YAML file as Perl data, through python3's yaml (yamllint's)
sub yaml {
    my ($file) = @_;
    my ($rc, $out) = run(undef, 'python3', '-c',
        'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])),'
        . ' sys.stdout)', $file);
    $rc == 0 or die "$file: $out";
    return decode_json($out);
}

# --- the rules --------------------------------------------------------------

my ($rc, $out) = run(undef, 'promtool', 'check', 'rules', $rules);
is($rc, 0, 'promtool check rules') or diag($out);

($rc, $out) = run(undef, 'sh', '-c',
                  'cd "$1" && promtool test rules "$2"', 'sh',
                  "$top/deploy/prometheus", 'gms-edge-alerts.test.yml');
is($rc, 0, 'promtool test rules: every case as expected') or diag($out);

my $groups = yaml($rules)->{groups};
my @alerts = map { @{ $_->{rules} } } @$groups;
ok(@alerts >= 7, scalar(@alerts) . ' alerts');

# the anchors of docs/operations.md's headings, as GitHub makes them
my %anchor;
for (split /\n/, GmsTest::slurp("$top/docs/operations.md")) {
    next unless /^#+\s+(.*)$/;
    (my $a = lc $1) =~ s/[^a-z0-9 _-]//g;
    $a =~ s/ /-/g;
    $anchor{$a} = 1;
}

my $tests = yaml($rules_test);
my %fired;
for my $t (@{ $tests->{tests} }) {
    for my $c (@{ $t->{alert_rule_test} // [] }) {
        $fired{ $c->{alertname} } = 1 if @{ $c->{exp_alerts} // [] };
    }
}

for my $a (@alerts) {
    my $name = $a->{alert};
    like($a->{annotations}{summary} // '', qr/\S/, "$name: a summary");
    my ($doc, $frag) = ($a->{annotations}{runbook_url} // '')
        =~ m{^docs/operations\.md#(runbook-(.+))$} ? ('ok', $1) : ();
    ok($doc && $anchor{$frag}, "$name: its runbook is in docs/operations.md"
                              . ($frag ? " (#$frag)" : ''));
    like($a->{labels}{severity} // '', qr/^(critical|warning)$/,
         "$name: a severity");
    ok($fired{$name}, "$name: a test case fires it");
}

# the PrometheusRule: the same groups, and what the script makes of them
is_deeply(yaml($operator)->{spec}, { groups => $groups },
          'the PrometheusRule holds the same groups');
{
    my $dir = tempdir(CLEANUP => 1);
    system('cp', '-r', "$top/deploy", "$top/tools", $dir) == 0 or die;
    ($rc, $out) = run(undef, "$dir/tools/prometheusrule.sh");
    is($rc, 0, 'tools/prometheusrule.sh') or diag($out);
    is(GmsTest::slurp("$dir/deploy/kubernetes/monitoring/prometheusrule.yaml"),
       GmsTest::slurp($operator),
       'the PrometheusRule is as tools/prometheusrule.sh makes it');
}

# --- the dashboard ----------------------------------------------------------

my $dash = decode_json(GmsTest::slurp($dashboard));
my @exprs = map { $_->{expr} } map { @{ $_->{targets} } }
            @{ $dash->{panels} };
ok(@exprs >= 20, scalar(@exprs) . ' queries in ' . @{ $dash->{panels} }
                 . ' panels');

# each query as a recording rule, Grafana's variables given values
{
    my $dir = tempdir(CLEANUP => 1);
    my $i = 0;
    my $yaml = "groups:\n  - name: dashboard\n    rules:\n";
    for my $e (@exprs) {
        (my $q = $e) =~ s/\$__rate_interval/5m/g;
        $q =~ s/\$instance/.*/g;
        $q =~ s/'/''/g;
        $yaml .= "      - record: gms_dashboard_query_" . $i++ . "\n"
               . "        expr: '$q'\n";
    }
    GmsTest::write_file("$dir/dashboard.yml", $yaml);
    ($rc, $out) = run(undef, 'promtool', 'check', 'rules',
                      "$dir/dashboard.yml");
    is($rc, 0, 'promtool accepts every query of the dashboard') or diag($out);
}

# --- a live edge's metrics --------------------------------------------------

my $e = GmsTest::Edge->start(
    http   => 'gms_token_cache zone=tokens:1m ttl=60s;',
    server => 'location = /metrics { gms_token_auth off; gms_token_metrics; }',
);
$e->token('ok-token', actor => 'urn:li:corpuser:alice');
is($e->get('/', 'ok-token')->{status}, 200, 'a valid token: served');
is($e->get('/', 'no-such-token')->{status}, 401, 'an unknown one: 401');
is($e->get('/')->{status}, 401, 'none: 401');

my $metrics = $e->nginx->http(GET => '/metrics');
is($metrics->{status}, 200, '/metrics answered');
($rc, $out) = run($metrics->{body}, 'promtool', 'check', 'metrics');
is($rc, 0, 'promtool check metrics: nothing to fix') or diag($out);
is($out, '', 'promtool check metrics: no lint') or diag($out);

# every metric the alerts and the dashboard name, exported by the edge or
# written by gms-token follow --metrics-file (src/tool/gms_follow_metrics.c)
my %exported = map { $_ => 1 } $metrics->{body} =~ /^# TYPE (\S+)/mg;
$exported{$_} = 1
    for GmsTest::slurp("$top/src/tool/gms_follow_metrics.c")
        =~ /"(gms_follow_[a-z_]+?)(?:_bucket|_sum|_count)?[{" ]/g;
my %named;
for my $q (@exprs, map { $_->{expr} } @alerts) {
    for my $m ($q =~ /\b(gms_[a-z_]+)/g) {
        $m =~ s/_(bucket|sum|count)$// unless $exported{$m};
        $named{$m} = 1;
    }
}
$named{$_} = 1 for $dash->{templating}{list}[1]{definition}
                   =~ /\b(gms_[a-z_]+)/g;
is_deeply([grep { !$exported{$_} } sort keys %named], [],
          'every metric the alerts and the dashboard name is exported');
ok((grep { /^gms_follow_/ } keys %named) >= 5,
   'the follower\'s metrics among them');

done_testing();
