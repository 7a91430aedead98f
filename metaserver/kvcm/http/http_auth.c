#include "http_auth.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <string.h>
#include <strings.h>

#include "account.h"
#include "kvcm_state.h"
#include "log.h"
#include "metrics.h"

#define CRED_MAX 2048 /* decoded "user:password" */

/* The decoded credentials of an Authorization: Basic value h into out; false when there is none or it is bad. */
static bool basic_credentials(const char *h, char out[CRED_MAX])
{
	size_t len;
	int n;

	if (!h || strncasecmp(h, "Basic ", 6) != 0)
		return false;
	h += 6;
	h += strspn(h, " ");
	len = strcspn(h, " \t");
	if (!len || len % 4 || len / 4 * 3 >= CRED_MAX)
		return false;
	n = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)h, (int)len);
	if (n < 0)
		return false;
	/* EVP_DecodeBlock counts the padding as zero bytes */
	n -= (h[len - 1] == '=') + (h[len - 2] == '=');
	out[n] = '\0';
	return strlen(out) == (size_t)n && strchr(out, ':');
}

/* The status for these credentials (200, 401 or 403); cred gets the user name named, for the log. */
static int judge(struct kvcm *k, const char *authorization, bool admin_port, char cred[CRED_MAX])
{
	char *colon;
	int role = -1;

	cred[0] = '\0';
	if (admin_port ? !accounts_admin_enforced(k) : !accounts_enforced(k))
		return 200;
	if (authorization && basic_credentials(authorization, cred)) {
		colon = strchr(cred, ':');
		*colon = '\0';
		role = account_check(k, cred, colon + 1);
		OPENSSL_cleanse(colon + 1, strlen(colon + 1));
	}
	if (role < 0)
		return 401;
	return admin_port && role != ROLE_ADMIN ? 403 : 200;
}

int auth_report(struct kvcm *k, int status, const char *authorization, const char *what, int *log_bucket)
{
	char cred[CRED_MAX], *colon;

	if (status == 200)
		return status;
	if (authorization && basic_credentials(authorization, cred)) {
		colon = strchr(cred, ':');
		OPENSSL_cleanse(colon, strlen(colon));
	} else {
		cred[0] = '\0';
	}
	metrics_auth_refused(k->metrics, status == 403);
	log_ratelimited(log_bucket, LOG_WARN, "op=kvcm_auth result=%s user=\"%.128s\" path=\"%.128s\"",
	                status == 403 ? "forbidden" : "denied", cred, what);
	return status;
}

int auth_check_value(struct kvcm *k, const char *authorization, bool admin_port, const char *what, int *log_bucket)
{
	return auth_report(k, auth_status(k, authorization, admin_port), authorization, what, log_bucket);
}

int auth_status(struct kvcm *k, const char *authorization, bool admin_port)
{
	char cred[CRED_MAX];

	return judge(k, authorization, admin_port, cred);
}

int auth_check(struct kvcm *k, struct evhttp_request *req, bool admin_port, int *log_bucket)
{
	return auth_check_value(k, evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"),
	                        admin_port, evhttp_request_get_uri(req), log_bucket);
}
