
/*
 * The Redis contract, the C twin of docs/redis-contract.md: the keys
 * gms-token writes and the module reads, under the prefix of
 * gms_token_key_prefix (gms-token's --prefix), the invalidation channel,
 * the follower's health hash, the token id and what an entry may hold.
 * A change here is a change of the contract: change the document with it.
 */


#ifndef _GMS_CONTRACT_H_INCLUDED_
#define _GMS_CONTRACT_H_INCLUDED_


/*
 * <prefix>token:<id>, a hash: actor, expiresAt (ms since the epoch, ""
 * or 0: never), type, createdAt; <prefix>actor:<urn>, a set: the user's
 * privileges
 */
#define GMS_KEY_TOKEN          "token:"
#define GMS_KEY_ACTOR          "actor:"

/*
 * <prefix>invalidate: the channel every edge subscribes to.  A message is
 * a token id (drop that token), a user URN (drop every token of the user:
 * its privileges changed) or "*" (drop everything).
 */
#define GMS_KEY_INVALIDATE     "invalidate"
#define GMS_INVALIDATE_ALL     "*"

/*
 * <prefix>sync: the hash gms-token follow keeps its health in: at (ms
 * since the epoch of the last complete sync), tokens, users, interval
 * (ms), error (the last failure, "" after a success), error_at, failures
 * (in a row, 0 after a success).
 */
#define GMS_KEY_SYNC           "sync"

/*
 * <prefix>inactive, a set: the URNs of the users gms-token found inactive
 * in DataHub (suspended, removed or deleted: ActorContext.isActive); no
 * token of theirs is kept in the cache (DataHub 1.2+ refuses them), unless
 * gms-token marks them (--inactive mark): the lookup reads the set, and
 * the edge answers by gms_datahub_version.
 */
#define GMS_KEY_INACTIVE       "inactive"

/*
 * <prefix>deleted, a set: the members of <prefix>inactive who are inactive
 * only for having no corpUserKey (hard-deleted), whom GMS 0.15 to 1.1
 * still serves (OperationContext.asSession checks no existence)
 */
#define GMS_KEY_DELETED        "deleted"

/*
 * <prefix>lease, a string: which gms-token follow works (host:pid:nonce),
 * set with NX and PX, renewed at each cycle; the others stand by.
 */
#define GMS_KEY_LEASE          "lease"

/* the token id: standard base64, with padding, of a 32-byte SHA-256 digest */
#define GMS_TOKEN_ID_LEN       44

/*
 * What a cache entry may hold, checked by gms-token when it writes and by
 * the module when it reads: an actor goes into a request header to GMS,
 * privileges into $gms_token_privileges and the privilege checks.
 */
#define GMS_ACTOR_MAX          512
#define GMS_PRIVILEGE_MAX      128
#define GMS_PRIVILEGES_MAX     256


#endif /* _GMS_CONTRACT_H_INCLUDED_ */
