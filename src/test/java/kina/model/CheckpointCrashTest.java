package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.AtomicFiles;
import kina.io.AtomicFilesKnobs;
import kina.io.SafeTensors;
import kina.ir.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A checkpoint save that fails at any byte offset (an I/O error part way through one of its files,
 * as a full disk gives) leaves the previous checkpoint intact: {@code latest} still names it, and it
 * loads bit for bit. The half-written step directory, resumed by name, says so in one line.
 */
class CheckpointCrashTest {
    @TempDir Path root;

    /** A sink that writes the first {@code budget} bytes of all the writes together, then fails. */
    static final class FailingSink implements AtomicFiles.Sink {
        long budget;

        FailingSink(long budget) { this.budget = budget; }

        @Override public void write(java.nio.channels.FileChannel ch, ByteBuffer buf) throws IOException {
            while (buf.hasRemaining()) {
                if (budget <= 0) throw new IOException("No space left on device");
                ByteBuffer part = buf.slice(buf.position(), (int) Math.min(buf.remaining(), budget));
                int n = ch.write(part);
                buf.position(buf.position() + n);
                budget -= n;
            }
        }

        /** No fsync: the test simulates a failing write, not a power cut, and thousands of fsyncs are slow. */
        @Override public void force(java.nio.channels.FileChannel ch) {}
    }

    @Test void aSaveFailingAtEveryByteOffsetLeavesThePreviousCheckpoint() throws IOException {
        Map<String, Tensor> m = Map.of("m_embed", Tensor.of(DType.F32, new long[] {3}, 0.5, -0.0, 2));
        Checkpoint.save(root, CheckpointTest.state(1), CheckpointTest.weights(1), m);
        Checkpoint.Loaded before = Checkpoint.load(root);
        long total;
        FailingSink count = new FailingSink(Long.MAX_VALUE);
        try {
            AtomicFilesKnobs.sink(count);
            Checkpoint.save(root.resolve("probe"), CheckpointTest.state(2), CheckpointTest.weights(2), m);
        } finally {
            AtomicFilesKnobs.whole();
        }
        total = Long.MAX_VALUE - count.budget;
        assertThat(total).isGreaterThan(500);
        int failed = 0;
        for (long k = 0; k < total; k++) {
            try {
                AtomicFilesKnobs.sink(new FailingSink(k));
                long at = k;
                assertThatThrownBy(() -> Checkpoint.save(root, CheckpointTest.state(2), CheckpointTest.weights(2), m))
                        .as("a save failing at byte %d", at).isInstanceOf(CheckpointError.class)
                        .hasMessageContaining("No space left on device");
            } finally {
                AtomicFilesKnobs.whole();
            }
            Checkpoint.Loaded after = Checkpoint.load(root);
            assertThat(after.dir()).isEqualTo(before.dir());
            assertThat(after.state().step()).isEqualTo(1);
            for (var e : before.weights().entrySet())
                assertThat(after.weights().get(e.getKey()).floats()).as("weights after a failure at byte %d", k)
                        .isEqualTo(e.getValue().floats());
            failed++;
        }
        assertThat(failed).isEqualTo(total);
        try (var files = Files.list(root)) {
            assertThat(files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".tmp")).toList())
                    .as("no temp file is left behind").isEmpty();
        }
    }

    @Test void resumingAHalfWrittenStepDirectorySaysSoInOneLine() {
        Map<String, Tensor> m = Map.of();
        Checkpoint.save(root, CheckpointTest.state(1), CheckpointTest.weights(1), m);
        long model = SafeTensors.encode(CheckpointTest.weights(2), Map.of("format", "pt")).length;
        try {
            AtomicFilesKnobs.sink(new FailingSink(model + 10));       // the model file written, the optimizer's cut
            assertThatThrownBy(() -> Checkpoint.save(root, CheckpointTest.state(2), CheckpointTest.weights(2), m))
                    .isInstanceOf(CheckpointError.class);
        } finally {
            AtomicFilesKnobs.whole();
        }
        Path half = root.resolve("step-000002");
        assertThatThrownBy(() -> Checkpoint.load(half)).isInstanceOf(CheckpointError.class)
                .hasMessage(half + ": incomplete checkpoint (no state.json; its save did not finish)");
        assertThat(Checkpoint.load(root).state().step()).isEqualTo(1);
    }
}
