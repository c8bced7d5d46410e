# device_call.sh plan (run 106): the RoPE bit tests on their shared fixture, then the whole GPU suite on the
# session's last build.
$S $B info
TEST_FILTER="the fused GEMV's RoPE epilogue*" $S $B test
TEST_FILTER="the skinny kernel's QKV*" $S $B test
$S $B test
