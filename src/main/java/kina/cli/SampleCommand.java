package kina.cli;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import kina.kernels.Parallel;
import kina.model.Checkpoint;
import kina.model.Sampler;
import kina.model.StoryLm;
import kina.model.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code kina sample}: generate text from a checkpoint. */
@Command(name = "sample", description = "Generate text from a trained checkpoint (KV-cache decoding; the speed goes to stderr).")
final class SampleCommand implements Callable<Integer> {
    @Option(names = "--checkpoint", paramLabel = "DIR", description = "A run directory or one of its step directories (default: ${DEFAULT-VALUE}).", defaultValue = "runs/latest")
    Path checkpoint;
    @Option(names = "--prompt", description = "The text to continue; empty: start as after a line break (default: '${DEFAULT-VALUE}').", defaultValue = "The ") String prompt;
    @Option(names = "--tokens", description = "Tokens to generate (bytes, for a byte-level model) (default: ${DEFAULT-VALUE}).", defaultValue = "200") int tokens;
    @Option(names = "--temperature", description = "Softmax temperature; 0 is greedy, the most likely token every time, as --top-k 1 is (default: ${DEFAULT-VALUE}).", defaultValue = "0.8") double temperature;
    @Option(names = "--top-k", description = "Draw from the k most likely tokens, 0 for all; 1 is greedy (default: ${DEFAULT-VALUE}).", defaultValue = "40") int topK;
    @Option(names = "--seed", description = "Seed of the sampler (default: ${DEFAULT-VALUE}).", defaultValue = "1") long seed;
    @Option(names = "--threads", description = "Worker threads (default: the number of processors).") Integer threads;
    @Option(names = "--full-window", description = "Rerun the whole window for every token instead of decoding against the KV cache (the same tokens within the window; slower).")
    boolean fullWindow;
    @Mixin Main.Common common;
    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        OptionRange.nonNegative("--temperature", temperature, OptionRange.typed(spec, "--temperature"), "the softmax temperature; 0: greedy");
        OptionRange.atLeast("--tokens", tokens, 0, "tokens to generate");
        OptionRange.atLeast("--top-k", topK, 0, "the k most likely tokens; 0: all");
        if (threads != null) OptionRange.within("--threads", threads, 1, 4096, "worker threads");
        int th = threads != null ? threads : Runtime.getRuntime().availableProcessors();
        Parallel.setThreads(th);
        Checkpoint.Loaded ck = Checkpoint.load(checkpoint, common.cap);
        var c = ck.state().config();
        OptionRange.within("--top-k", topK, 0, c.vocab(), "the k most likely tokens of the checkpoint's " + c.vocab() + "; 0: all");
        java.util.Map<String, kina.ir.TensorType> want = new java.util.LinkedHashMap<>();
        for (StoryLm.Weight w : StoryLm.weights(c)) want.put(w.name(), kina.ir.TensorType.host(kina.ir.DType.F32, w.shape()));
        ck.requireWeights(want);
        Tokenizer tok = ck.tokenizer();
        long t0 = System.nanoTime();
        Sampler s = new Sampler(c, ck.weights(), fullWindow ? Sampler.Mode.FULL_WINDOW : Sampler.Mode.KV_CACHE);
        long t1 = System.nanoTime();
        // An empty prompt starts as after a line break (the corpus's own boundary), not from a uniform
        // draw over the vocabulary, which mostly gave a stray non-ASCII byte first.
        int[] ids = tok.encode(prompt.isEmpty() ? "\n" : prompt);
        if (ids.length == 0) ids = tok.encode("\n");
        PrintStream out = System.out;
        out.print(prompt);
        Utf8Stream text = new Utf8Stream(out);
        long[] first = {0};
        s.generate(ids, tokens, temperature, topK, seed, id -> {
            if (first[0] == 0) first[0] = System.nanoTime();
            text.write(tok.bytes(id));
        });
        long t2 = System.nanoTime();
        text.finish();
        out.println();
        out.flush();
        // like run.c, the rate leaves out the first token (it pays the prefill)
        double secs = (t2 - first[0]) / 1e9;
        System.err.printf(Locale.ROOT, "kina sample: %d tokens in %.2f s, %s tokens/s (%s, %d thread%s; plans compiled in %.1f s)%n",
                tokens, (t2 - t1) / 1e9, tokens > 1 && secs > 0 ? String.format(Locale.ROOT, "%.0f", (tokens - 1) / secs) : "-",
                fullWindow ? "full window" : "KV cache", th, th == 1 ? "" : "s", (t1 - t0) / 1e9);
        return 0;
    }

    /**
     * Prints UTF-8 as it comes, holding back an incomplete character until its last byte arrives
     * (a character's bytes can come from several draws); invalid bytes print as U+FFFD.
     */
    static final class Utf8Stream {
        private final PrintStream out;
        private final java.nio.charset.CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(java.nio.charset.CodingErrorAction.REPLACE)
                .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPLACE);
        private java.nio.ByteBuffer in = java.nio.ByteBuffer.allocate(64);
        private final java.nio.CharBuffer chars = java.nio.CharBuffer.allocate(256);

        Utf8Stream(PrintStream out) { this.out = out; }

        void write(byte[] b) {
            if (in.remaining() < b.length) {
                java.nio.ByteBuffer bigger = java.nio.ByteBuffer.allocate(in.capacity() + b.length + 64);
                in.flip();
                bigger.put(in);
                in = bigger;
            }
            in.put(b);
            drain(false);
        }

        void finish() {
            drain(true);
            dec.flush(chars);
            emit();
        }

        private void drain(boolean end) {
            in.flip();
            while (true) {
                var r = dec.decode(in, chars, end);
                emit();
                if (!r.isOverflow()) break;
            }
            in.compact();
        }

        private void emit() {
            chars.flip();
            if (chars.hasRemaining()) {
                out.print(chars);
                out.flush();
            }
            chars.clear();
        }
    }
}
