#include "grpc_auth.h"

#include <stddef.h>

#include "http_auth.h"

int grpc_auth_check(struct kvcm *k, bool admin, const char *authorization, const char *path, int *log_bucket)
{
	switch (auth_check_value(k, authorization[0] ? authorization : NULL, admin, path, log_bucket)) {
	case 200:
		return 0;
	case 403:
		return GRPC_PERMISSION_DENIED;
	default:
		return GRPC_UNAUTHENTICATED;
	}
}
