#include "start_checks.h"

#include <string.h>

#include "kvcm.h"
#include "leadership.h"
#include "meta_conf.h"
#include "meta_err.h"
#include "secret_file.h"
#include "tls.h"

int store_password(const struct meta_conf *c, char *password, size_t cap, char *err, size_t errlen)
{
	password[0] = '\0';
	return c->store_password_file[0] && secret_file_read("ock.mmc.meta.store_password_file", c->store_password_file,
	                                                     password, cap, err, errlen)
	           ? -1
	           : 0;
}

int start_checks(const struct meta_settings *s, struct meta_err *e)
{
	char password[256];
	int rc;

	meta_err_clear(e);
	if (leadership_check(&s->kvcm, e->message, sizeof(e->message)))
		return meta_err_fail(e, EXIT_CONFIG, NULL);
	rc = store_password(&s->conf, password, sizeof(password), e->message, sizeof(e->message));
	explicit_bzero(password, sizeof(password));
	if (rc)
		return meta_err_fail(e, EXIT_CONFIG, "ock.mmc.meta.store_password_file");
	if (rpc_tls_check(&s->conf, e->message, sizeof(e->message)))
		return meta_err_fail(e, EXIT_CONFIG, NULL);
	return kvcm_check(&s->kvcm, e) ? -1 : 0;
}
