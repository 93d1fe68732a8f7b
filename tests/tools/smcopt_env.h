/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * For tests: src/bpf/smc_opt.bpf.o loaded into the running kernel and
 * attached to a cgroup2 of the calling process alone (mounted for it and
 * removed again), the process moved in.  Root only.
 */
#ifndef SMCPROXYD_SMCOPT_ENV_H
#define SMCPROXYD_SMCOPT_ENV_H

#include <stdint.h>

#include <bpf/libbpf.h>

struct smcopt_env {
	struct bpf_object *obj;
	int prog_fd;
	int mark_fd;   /* smc_opt_mark */
	int echoed_fd; /* smc_opt_echoed */
	int cg_fd;
	char root[64]; /* the cgroup2 mount */
	char dir[80];  /* the cgroup in it */
};

const char *smcopt_env_setup(struct smcopt_env *e, const char *path);
void smcopt_env_teardown(struct smcopt_env *e);
int smcopt_env_skip(const char *why);
int smcopt_mark(struct smcopt_env *e, int fd, unsigned int mark);
int smcopt_echoed(struct smcopt_env *e, int fd);

/* for the tools that take a kernel SMC-R peer's first steps */
struct sockaddr_in;
int smcopt_clc_read(int fd, uint8_t *buf, uint8_t *type, uint32_t *decl);
int smcopt_addr4(const char *s, struct sockaddr_in *sin);

#endif /* SMCPROXYD_SMCOPT_ENV_H */
