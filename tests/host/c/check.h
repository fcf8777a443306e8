/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host C tests' one assertion: CHECK(cond) counts every check and
 * reports a failed one with its place, so that a program runs all of its
 * checks and prints "N checks, M failures" once.
 */
#ifndef CXE_TEST_CHECK_H
#define CXE_TEST_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n",		\
			__FILE__, __LINE__, #cond);			\
	}								\
} while (0)

#endif /* CXE_TEST_CHECK_H */
