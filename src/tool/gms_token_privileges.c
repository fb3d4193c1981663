
/*
 * gms-token: users' privileges mirrored from DataHub's policies into
 * <prefix>actor:<urn>.  Placeholder until the mirror lands (issue 14,
 * item 3): it refuses, so nothing can mistake it for a mirror.
 */


#include "gms_token_tool.h"


int
gms_tool_privileges_mirror(gms_tool_t *t, const struct gms_graphql_conf_s *gms,
    gms_tool_privileges_e mode, gms_tool_privileges_counts_t *counts)
{
    (void) gms;
    (void) counts;

    if (mode == GMS_TOOL_PRIVILEGES_OFF) {
        return GMS_TOOL_OK;
    }

    gms_tool_error(t, "--privileges: not built yet");

    return GMS_TOOL_USAGE;
}
