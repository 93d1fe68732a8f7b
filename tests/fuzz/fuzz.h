/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The libFuzzer entry point each fuzz_<target>.c defines.  The same file
 * links either with libFuzzer (contrib/fuzz-run, clang) or with replay.c,
 * which runs it over a seed corpus in make check (any compiler).
 */
#ifndef SMCPROXYD_FUZZ_H
#define SMCPROXYD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Set by the target to the number of decoders that accepted the last
 * input; replay.c checks it against the corpus file's name (seed-ok-*
 * must decode, seed-bad-* must not).
 */
extern int fuzz_decoded;

#endif /* SMCPROXYD_FUZZ_H */
