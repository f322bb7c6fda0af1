# bench_compression is also a test: tests/integration/compression_bound.sh runs
# it with --check, so that the compression bounds issue 30 met stay met (built
# with the tests; the rule that links it is the Makefile's BENCH_BINS one).
TEST_EXTRA += $(B)/bench/bench_compression
