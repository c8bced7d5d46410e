#!/usr/bin/env bash
# One GPU-machine call around gpu_session.sh: unpacks what pack_device.sh put in .devcarry/, runs a plan (a
# bash file of gpu_session.sh steps) under a time limit, and packs every log into $OUT/out.tgz. One archive
# because a call brings back at most 8 files; the limit because a command killed by the call's own timeout
# brings back nothing it meant to pack.
#
#   tools/bench/device_call.sh LIMIT_S PLAN      e.g. tools/bench/device_call.sh 540 tools/bench/plans/decode_ab.sh
#
# The plan runs with $S (gpu_session.sh), $B (the unpacked binaries), OUT (a scratch folder whose contents
# end up in out.tgz) and BACK (the call's own $OUT: files too big for out.tgz, such as a trained model's
# archive, at most 7 of 16 MiB) set, from the repository root; the first step that fails stops it. Give
# LIMIT_S about a minute less than the call's timeout_s, and order the plan's steps by what matters most.
set -uo pipefail
limit=${1:?usage: device_call.sh LIMIT_S PLAN}
plan=${2:?usage: device_call.sh LIMIT_S PLAN}
cd "$(dirname "$0")/../.."
: "${OUT:?device_call.sh packs its logs into \$OUT}"
final=$OUT
work=$(mktemp -d)
[ -f .devcarry/bin.txz ] && tar xJf .devcarry/bin.txz -C .devcarry
[ -f .devcarry/models.txz ] && [ ! -f models/strata-tiny/config.json ] && tar xJf .devcarry/models.txz
S=tools/bench/gpu_session.sh B=.devcarry/bin OUT=$work BACK=$final timeout "$limit" bash -e "$plan" 2>&1 | tee "$work/call.log"
echo "device_call.sh: plan exited ${PIPESTATUS[0]} after ${SECONDS}s" | tee -a "$work/call.log"
tar czf "$final/out.tgz" -C "$work" .
