/*
 * A failure of mmc-metaserver's start or reload, filled where it happens: the exit code a failed start ends with
 * (exit_code.h), the configuration key at fault, and the one-line message. main.c picks the exit code from it and
 * reload.c names the key from it; nothing reads the message to learn either.
 */
#ifndef MMC_META_ERR_H
#define MMC_META_ERR_H

#include <stdarg.h>
#include <stdio.h>

#include "exit_code.h"

#define META_ERR_KEY_SIZE     128
#define META_ERR_MESSAGE_SIZE 1280

struct meta_err {
	enum exit_code exit_code;            /* EXIT_OK until a failure is recorded */
	char key[META_ERR_KEY_SIZE];         /* the configuration key at fault; "" when the failure has none */
	char message[META_ERR_MESSAGE_SIZE]; /* NUL-terminated, without the key=value quoting of the log */
};

/* An empty record, before a call that may fail. */
static inline void meta_err_clear(struct meta_err *e)
{
	e->exit_code = EXIT_OK;
	e->key[0] = '\0';
	e->message[0] = '\0';
}

/*
 * Records what failed once e->message holds why (the caller, or a callee it passed e->message to, wrote it): the exit
 * code, and the key when key is not NULL (NULL keeps one recorded nearer the failure). Returns -1, for
 * `return meta_err_fail(...)`.
 */
static inline int meta_err_fail(struct meta_err *e, enum exit_code code, const char *key)
{
	e->exit_code = code;
	if (key)
		snprintf(e->key, sizeof(e->key), "%s", key);
	return -1;
}

/* Records a failure with its message, printf-style. Returns -1. */
__attribute__((format(printf, 4, 5))) static inline int meta_err_set(struct meta_err *e, enum exit_code code,
                                                                     const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return meta_err_fail(e, code, key);
}

#endif /* MMC_META_ERR_H */
