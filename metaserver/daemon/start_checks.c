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

static int check_leadership(const struct meta_settings *s, struct meta_err *e)
{
	return leadership_check(&s->kvcm, e->message, sizeof(e->message)) ? meta_err_fail(e, EXIT_CONFIG, NULL) : 0;
}

static int check_store_password(const struct meta_settings *s, struct meta_err *e)
{
	char password[256];
	int rc = store_password(&s->conf, password, sizeof(password), e->message, sizeof(e->message));

	explicit_bzero(password, sizeof(password));
	return rc ? meta_err_fail(e, EXIT_CONFIG, "ock.mmc.meta.store_password_file") : 0;
}

static int check_rpc_tls(const struct meta_settings *s, struct meta_err *e)
{
	return rpc_tls_check(&s->conf, e->message, sizeof(e->message)) ? meta_err_fail(e, EXIT_CONFIG, NULL) : 0;
}

static int check_kvcm(const struct meta_settings *s, struct meta_err *e)
{
	return kvcm_check(&s->kvcm, e) ? -1 : 0;
}

/* in the start's order */
static int (*const checks[START_CHECKS])(const struct meta_settings *s, struct meta_err *e) = {
    check_leadership, check_store_password, check_rpc_tls, check_kvcm};

int start_check(size_t i, const struct meta_settings *s, struct meta_err *e)
{
	meta_err_clear(e);
	return checks[i](s, e);
}

int start_checks(const struct meta_settings *s, struct meta_err *e)
{
	for (size_t i = 0; i < START_CHECKS; i++)
		if (start_check(i, s, e))
			return -1;
	return 0;
}
