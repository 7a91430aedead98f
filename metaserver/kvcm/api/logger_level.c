/* updateLogger (reference kvcm.md §4.16): the server's log level at run time. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "log.h"

void admin_update_logger(struct call *c)
{
	const char *level = jd_str(&c->d, c->body, "log_level");
	char lower[16];
	enum log_level l;
	size_t i;

	jd_str(&c->d, c->body, "module_name"); /* the reference has one logger too: accepted, ignored */
	if (call_decode_failed(c))
		return;
	for (i = 0; level[i] && i + 1 < sizeof(lower); i++)
		lower[i] = (char)tolower((unsigned char)level[i]);
	lower[i] = '\0';
	if (level[i] || log_parse_level(lower, &l)) {
		call_fail(c, KC_INVALID_ARGUMENT, "log_level must be DEBUG, INFO, WARN or ERROR, not \"%.32s\"", level);
		return;
	}
	log_set_level(l);
	log_msg(LOG_WARN, "op=kvcm_update_logger level=%s", lower); /* at warn: seen whatever the new level */
	call_ok(c, "logger updated");
}
