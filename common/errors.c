#include "mmc/mmc.h"

#include <stddef.h>

static const struct {
	int code;
	const char *text;
} errors[] = {
    {MMC_OK, "MMC_OK: success"},
    {MMC_ERROR, "MMC_ERROR: generic error"},
    {MMC_INVALID_PARAM, "MMC_INVALID_PARAM: invalid parameter"},
    {MMC_MALLOC_FAILED, "MMC_MALLOC_FAILED: memory allocation failed"},
    {MMC_NEW_OBJECT_FAILED, "MMC_NEW_OBJECT_FAILED: object creation failed"},
    {MMC_NOT_STARTED, "MMC_NOT_STARTED: service not started"},
    {MMC_TIMEOUT, "MMC_TIMEOUT: operation timed out"},
    {MMC_REPEAT_CALL, "MMC_REPEAT_CALL: repeated call"},
    {MMC_DUPLICATED_OBJECT, "MMC_DUPLICATED_OBJECT: object already exists"},
    {MMC_OBJECT_NOT_EXISTS, "MMC_OBJECT_NOT_EXISTS: object does not exist"},
    {MMC_NOT_INITIALIZED, "MMC_NOT_INITIALIZED: not initialized"},
    {MMC_NET_SEQ_DUP, "MMC_NET_SEQ_DUP: duplicate network sequence number"},
    {MMC_NET_SEQ_NOT_FOUND, "MMC_NET_SEQ_NOT_FOUND: network sequence number not found"},
    {MMC_ALREADY_NOTIFIED, "MMC_ALREADY_NOTIFIED: already notified"},
    {MMC_INTERNAL_ERROR, "MMC_INTERNAL_ERROR: internal error"},
    {MMC_EXCEED_CAPACITY, "MMC_EXCEED_CAPACITY: capacity limit exceeded"},
    {MMC_LINK_NOT_FOUND, "MMC_LINK_NOT_FOUND: link not found"},
    {MMC_NET_REQ_HANDLE_NOT_FOUND, "MMC_NET_REQ_HANDLE_NOT_FOUND: network request handle not found"},
    {MMC_NOT_ENOUGH_MEMORY, "MMC_NOT_ENOUGH_MEMORY: not enough memory in the pool"},
    {MMC_NOT_CONNECTED_META, "MMC_NOT_CONNECTED_META: not connected to the meta server"},
    {MMC_NOT_CONNECTED_LOCAL, "MMC_NOT_CONNECTED_LOCAL: not connected to the local service"},
    {MMC_CLIENT_NOT_INIT, "MMC_CLIENT_NOT_INIT: client not initialized"},
    {MMC_UNMATCHED_STATE, "MMC_UNMATCHED_STATE: state mismatch"},
    {MMC_UNMATCHED_KEY, "MMC_UNMATCHED_KEY: key mismatch"},
    {MMC_UNMATCHED_RET, "MMC_UNMATCHED_RET: return value mismatch"},
    {MMC_LEASE_NOT_EXPIRED, "MMC_LEASE_NOT_EXPIRED: lease not expired"},
    {MMC_META_BACKUP_ERROR, "MMC_META_BACKUP_ERROR: metadata backup failed"},
    {MMC_LEASE_EXPIRED, "MMC_LEASE_EXPIRED: the lease expired before the copy finished"},
    {MMC_NOT_LEADER, "MMC_NOT_LEADER: the meta server stands by (leader election); ask the leader"},
    {MMC_CHECKSUM_MISMATCH, "MMC_CHECKSUM_MISMATCH: the bytes read differ from the object's checksum"},
    {MMC_NOT_AUTHORIZED, "MMC_NOT_AUTHORIZED: the meta server refused this process's credentials"},
};

const char *mmc_strerror(int code)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == code)
			return errors[i].text;
	return "unknown error";
}

const char *mmc_version(void)
{
	return MMC_VERSION_STRING;
}
