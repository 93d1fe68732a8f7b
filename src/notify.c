// SPDX-License-Identifier: BSD-2-Clause
/*
 * The systemd readiness protocol (sd_notify): one datagram with
 * "READY=1", "RELOADING=1", "STOPPING=1" to $NOTIFY_SOCKET.  A dozen lines
 * of protocol do not justify linking libsystemd.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smcproxyd.h"

/* Send state to the service manager; silently nothing when not under one. */
void
notify_send(const char *state)
{
	struct sockaddr_un sun;
	const char *path = getenv("NOTIFY_SOCKET");
	socklen_t len;
	size_t plen;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@'))
		return;
	plen = strlen(path);
	if (plen >= sizeof(sun.sun_path)) {
		log_warnx("%s: NOTIFY_SOCKET path too long", __func__);
		return;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, plen);
	if (sun.sun_path[0] == '@')
		sun.sun_path[0] = '\0'; /* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		log_warn("%s: socket", __func__);
		return;
	}
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (struct sockaddr *)&sun, len) == -1)
		log_warn("%s: sendto %s", __func__, path);
	close(fd);
}
