package GmsTest::Checks;

# Checks on an edge (a GmsTest::Nginx) whose configuration has a location
# /ok that needs a token and /metrics with gms_token_metrics, as the edges
# of t/25 and t/26 have:
#
#   use GmsTest::Checks qw(status metric no_crash);
#   is(status($n, 'secret'), 200);
#   is(metric($n, 'gms_redis_tls_handshake_failures_total'), 0);
#   no_crash($n);

use strict;
use warnings;

use Exporter 'import';
use Test::More ();

our @EXPORT_OK = qw(status metric no_crash);

# The status of GET /ok with $token as a bearer token ('none': no answer).
sub status {
    my ($n, $token) = @_;
    my $res = $n->http(GET => '/ok', { Authorization => "Bearer $token" },
                       undef, timeout => 5);
    return $res->{status} // 'none';
}

# The value of an unlabelled series on /metrics (undef: not there).
sub metric {
    my ($n, $name) = @_;
    my $text = $n->http(GET => '/metrics')->{body} // '';
    return $text =~ /^\Q$name\E (\S+)$/m ? $1 : undef;
}

# Stops nginx and asserts its error log has no alerts or crashes; $allow:
# bad lines that are expected (nginx's own classification).
sub no_crash {
    my ($n, $allow) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    $n->stop;
    my @bad = $n->bad_log_lines;
    @bad = grep { !/$allow/ } @bad if $allow;
    Test::More::is_deeply(\@bad, [], 'no alerts or crashes');
}

1;
