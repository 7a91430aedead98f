/*
 * logfmt formatting for both logs (mmc-metaserver's lines and the messages libmmc hands its log handler), so a
 * parser never splits a field: printf-style formatting in which a %s that is a field value comes out quoted and
 * escaped. Pure; thread-safe.
 *
 *  - %s inside a quoted span of the format (`err=\"cannot open %s\"`): the argument's `"` and `\` become `\"` and
 *    `\\`, control characters `\n`, `\r`, `\t` or `\xNN`.
 *  - %s right after `=` outside quotes (`reason=%s`): quoted as above when it is empty or holds a space, `"`, `=`,
 *    `\` or a control character; bare otherwise.
 *  - everything else (numbers, %s in prose, %s with a width) exactly as vsnprintf formats it.
 *  - in every %s argument, the password of any URI is masked first (uri_mask.h): no log line shows one.
 */
#ifndef MMC_LOGFMT_H
#define MMC_LOGFMT_H

#include <stdarg.h>
#include <stddef.h>

#define MMC_LOGFMT_ARG_MAX 4096 /* a %s argument is masked into a buffer of this size: longer ones are cut */

/* Formats into buf (always NUL-terminated when len > 0, truncated to fit). Returns the length written. */
size_t logfmt_vformat(char *buf, size_t len, const char *fmt, va_list ap);
size_t logfmt_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
