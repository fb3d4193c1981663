package GmsTest::Messages;

# The metadata service's getEsTaskStatus messages (and the edge's own for
# what GMS does not check), as the tests expect them word for word.

use strict;
use warnings;

use Exporter qw(import);

our @EXPORT_OK = qw(task_form node_chars must_be);

sub task_form {
    return 'Task should be in the form nodeId:taskId e.g. '
           . "aB1cdEf2GHIJKLMnoPQr3S:123456 (got $_[0])";
}

sub node_chars {
    return "Node ID should contain only letters, digits, '-' and '_' "
           . "(got $_[0])";
}

sub must_be {
    my ($param, $type) = @_;
    return "Parameter '$param' must be $type";
}

1;
