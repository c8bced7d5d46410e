# device_call.sh plan (run 107): the draft chain's later steps reading their own metadata and taking their
# tokens from the previous step's picks in the embedding, instead of a staging kernel before each step: the
# chain's bit test and the verify-window test, spec1 against the build before (.devcarry/old.txz's strata,
# d2547e2) alternated, three rounds; the whole suite last.
$S $B info
TEST_FILTER="a greedy chain fed on the device*" $S $B test
TEST_FILTER="a verify window of T = 1..16 rows*" $S $B test
mkdir -p /tmp/oldbin && tar xJf .devcarry/old.txz -C /tmp/oldbin && ln -sfn "$PWD/$B/lib" /tmp/oldbin/lib
for r in 1 2 3; do
  mkdir -p "$OUT/old_r$r" "$OUT/new_r$r"
  SPEC_ROUNDS=1 OUT="$OUT/old_r$r" $S /tmp/oldbin spec1 | sed "s/^/old /"
  SPEC_ROUNDS=1 OUT="$OUT/new_r$r" $S $B spec1 | sed "s/^/new /"
done
$S $B test
