#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: a short soak (contrib/soak-vm.sh, RXE_SOAK_SECONDS, 120 s by
# default; contrib/soak runs the long one): bulk, request/response, short
# connections and client aborts at once over a two-link group, every run
# verified, no memory trend over the minute after the first minute's
# warm-up, descriptors and buffers back, nothing logged at warning level.
RXE_SOAK_SECONDS=${RXE_SOAK_SECONDS:-120}
RXE_SOAK_SAMPLE=${RXE_SOAK_SAMPLE:-5}
export RXE_SOAK_SECONDS RXE_SOAK_SAMPLE
exec sh "$abs_top_srcdir/contrib/soak-vm.sh"
