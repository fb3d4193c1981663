package GmsTest::Prove;

# prove, as make test runs it, with one change to --rules: each par=
# pattern is a group of its own, as a seq= chain is.  prove puts the
# files of a par= pattern beside the chains, and TAP::Parser::Scheduler
# hands out such a file before any chain's next one, so a chain waited
# for the last of them; as groups, the first rule goes first and the
# chain (Sentinel's failover, discovery, replica timers) runs from the
# start, beside the rest.
#
#   perl -I t/lib -MGmsTest::Prove -e 'exit GmsTest::Prove->main(@ARGV)' \
#       -j4 --rules='seq=t/2[56]-*.t' --rules='par=**' t/

use strict;
use warnings;

use parent 'App::Prove';

sub _get_args {
    my ($self, @rest) = @_;

    my $args = $self->SUPER::_get_args(@rest);

    if (my $rules = $args->{rules}) {
        $args->{rules} = {
            par => [ map { ref $_ ? $_ : { par => $_ } } @{ $rules->{par} } ]
        };
    }

    return $args;
}

sub main {
    my ($class, @argv) = @_;

    my $app = $class->new;
    $app->process_args(@argv);

    return $app->run ? 0 : 1;
}

1;
