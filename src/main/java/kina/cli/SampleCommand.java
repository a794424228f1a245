package kina.cli;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.model.ByteTokenizer;
import kina.model.Checkpoint;
import kina.model.Sampler;
import kina.model.StoryLm;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code kina sample}: generate text from a checkpoint. */
@Command(name = "sample", description = "Generate text from a trained checkpoint.")
final class SampleCommand implements Callable<Integer> {
    @Option(names = "--checkpoint", paramLabel = "DIR", description = "A run directory or one of its step directories (default: ${DEFAULT-VALUE}).", defaultValue = "runs/latest")
    Path checkpoint;
    @Option(names = "--prompt", description = "The text to continue; empty: start as after a line break (default: '${DEFAULT-VALUE}').", defaultValue = "The ") String prompt;
    @Option(names = "--tokens", description = "Bytes to generate (default: ${DEFAULT-VALUE}).", defaultValue = "200") int tokens;
    @Option(names = "--temperature", description = "Softmax temperature > 0 (default: ${DEFAULT-VALUE}).", defaultValue = "0.8") double temperature;
    @Option(names = "--top-k", description = "Draw from the k most likely bytes, 0 for all (default: ${DEFAULT-VALUE}).", defaultValue = "40") int topK;
    @Option(names = "--seed", description = "Seed of the sampler (default: ${DEFAULT-VALUE}).", defaultValue = "1") long seed;
    @Mixin Main.Common common;

    @Override public Integer call() {
        if (!(temperature > 0)) throw new kina.ir.KinaException(null, "--temperature must be > 0, got " + temperature);
        if (tokens < 0) throw new kina.ir.KinaException(null, "--tokens must be >= 0, got " + tokens);
        Checkpoint.Loaded ck = Checkpoint.load(checkpoint);
        var c = ck.state().config();
        java.util.Map<String, kina.ir.TensorType> want = new java.util.LinkedHashMap<>();
        for (StoryLm.Weight w : StoryLm.weights(c)) want.put(w.name(), kina.ir.TensorType.host(kina.ir.DType.F32, w.shape()));
        ck.requireWeights(want);
        Sampler s = new Sampler(c, ck.weights());
        byte[] p = prompt.getBytes(StandardCharsets.UTF_8);
        // An empty prompt starts as after a line break (the corpus's own boundary), not from a uniform
        // draw over all 256 bytes, which mostly gave a stray non-ASCII byte first.
        int[] ids = p.length == 0 ? new int[] {'\n'} : ByteTokenizer.ids(p);
        System.out.print(prompt);
        java.io.ByteArrayOutputStream pending = new java.io.ByteArrayOutputStream();
        s.generate(ids, tokens, temperature, topK, seed, b -> {
            pending.write(b);
            // print whole UTF-8 characters only
            byte[] bs = pending.toByteArray();
            if (complete(bs)) {
                System.out.print(new String(bs, StandardCharsets.UTF_8));
                System.out.flush();
                pending.reset();
            }
        });
        if (pending.size() > 0) System.out.print(new String(pending.toByteArray(), StandardCharsets.UTF_8));
        System.out.println();
        return 0;
    }

    private static boolean complete(byte[] b) {
        int i = 0;
        while (i < b.length) {
            int x = b[i] & 0xff, len = x < 0x80 ? 1 : x >= 0xf0 ? 4 : x >= 0xe0 ? 3 : x >= 0xc0 ? 2 : 1;
            if (i + len > b.length) return false;
            i += len;
        }
        return true;
    }
}
