// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD: writev() and sendmsg(), the calls libiscsi sends a PDU's
 * data with, after a pause of SLOW_PAYLOAD_MS; send(), its header's call,
 * untouched. As when the client is preempted between the two.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static void pause_payload(void)
{
	const char *ms = getenv("SLOW_PAYLOAD_MS");

	if (ms)
		usleep(atoi(ms) * 1000);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);

	if (!real)
		real = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	pause_payload();
	return real(fd, iov, iovcnt);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);

	if (!real)
		real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	pause_payload();
	return real(fd, msg, flags);
}
