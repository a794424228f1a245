package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The bench's warm-up rule ({@link Bench#warmUpOver}): time, then a quiet JIT, within the caps. */
class BenchWarmUpTest {
    private static final long S = 1_000_000_000L;

    @Test
    void twoStepsComeFirstWhateverTheTime() {
        assertThat(Bench.warmUpOver(1, 100 * S, 100 * S, 0, true)).isFalse();
        assertThat(Bench.warmUpOver(2, 0, 0, 0, true)).isTrue();       // --warmup-seconds 0: two steps, no JIT rule
    }

    @Test
    void theCallersTimeThenAQuietSecondOfJit() {
        assertThat(Bench.warmUpOver(10, 4 * S, 4 * S, 5 * S, true)).isFalse();       // time not yet up
        assertThat(Bench.warmUpOver(10, 6 * S, S / 2, 5 * S, true)).isFalse();       // the JIT compiled half a second ago
        assertThat(Bench.warmUpOver(10, 6 * S, S - 1, 5 * S, true)).isFalse();      // a nanosecond short of a quiet second
        assertThat(Bench.warmUpOver(10, 6 * S, S, 5 * S, true)).isTrue();            // quiet for a second
        assertThat(Bench.warmUpOver(10, 6 * S, 0, 5 * S, false)).isTrue();           // no JIT time reported: the time alone
    }

    @Test
    void theCapsEndABusyJitsWarmUp() {
        assertThat(Bench.warmUpOver(Bench.MAX_WARMUP - 1, 20 * S, 0, 5 * S, true)).isFalse();
        assertThat(Bench.warmUpOver(Bench.MAX_WARMUP, 20 * S, 0, 5 * S, true)).isTrue();
        assertThat(Bench.warmUpOver(50, 5 * S + Bench.MAX_WARMUP_NANOS - 1, 0, 5 * S, true)).isFalse();
        assertThat(Bench.warmUpOver(50, 5 * S + Bench.MAX_WARMUP_NANOS, 0, 5 * S, true)).isTrue();
        // the time cap counts past the caller's time, not from the start
        assertThat(Bench.warmUpOver(50, 100 * S + Bench.MAX_WARMUP_NANOS - 1, 0, 100 * S, true)).isFalse();
        // a huge warm-up time: only the step cap ends it, nothing overflows
        assertThat(Bench.warmUpOver(50, 100 * S, 0, Long.MAX_VALUE, true)).isFalse();
        assertThat(Bench.warmUpOver(Bench.MAX_WARMUP, 100 * S, 0, Long.MAX_VALUE, true)).isTrue();
    }
}
