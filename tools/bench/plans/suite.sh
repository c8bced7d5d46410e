# device_call.sh plan (run 95): the whole GPU suite on the committed build (after a refactor of argmax.cu's
# warp reduction into one helper), nothing else.
$S $B info
$S $B test
