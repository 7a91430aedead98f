/*
 * MMC_ASSERT(cond): an invariant the code relies on, checked in debug builds only. It is compiled out when NDEBUG
 * is defined, which meson does for --buildtype=release (b_ndebug=if-release); the default debugoptimized build, the
 * test suite and the ASan build check it. A failed check prints where and aborts: it marks a bug, never a condition
 * a client or a disk can cause (those are errors, returned). cond must have no side effects. Compiled out, cond is
 * still type-checked (inside sizeof, never evaluated), so it cannot rot and leaves no variable unused.
 */
#ifndef MMC_ASSERT_H
#define MMC_ASSERT_H

#ifdef NDEBUG
#define MMC_ASSERT(cond) ((void)sizeof(!(cond)))
#else
#include <stdio.h>
#include <stdlib.h>

#define MMC_ASSERT(cond)                                                                                               \
	((cond)                                                                                                        \
	     ? (void)0                                                                                                 \
	     : (fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", __FILE__, __LINE__, __func__, #cond), abort()))
#endif

#endif
