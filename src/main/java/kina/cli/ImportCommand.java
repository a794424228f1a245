package kina.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import kina.io.FileCap;
import kina.model.BpeTokenizer;
import kina.model.ByteTokenizer;
import kina.model.Checkpoint;
import kina.model.Llama2c;
import kina.model.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kina import}: a llama2.c model.bin (and tokenizer.bin) as a kina checkpoint, ready for sample, train --resume and export. */
@Command(name = "import", description = "Read a llama2.c model.bin (legacy format; its tokenizer.bin beside it or --tokenizer) into a kina checkpoint.")
final class ImportCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MODEL.bin", description = "llama2.c's legacy model.bin.") Path model;
    @Option(names = "--out", paramLabel = "DIR", required = true, description = "The checkpoint directory to write (as train --out).") Path out;
    @Option(names = "--tokenizer", paramLabel = "FILE", description = "llama2.c's tokenizer.bin (default: tokenizer.bin beside the model, if there is one; none: bytes, for vocab 256).") Path tokenizer;
    @Option(names = "--name", description = "The config's name (default: the file name without .bin).") String name;
    @Mixin Main.Common common;
    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        String stem = model.getFileName().toString().replaceFirst("\\.bin$", "");
        Llama2c.Model m = Llama2c.read(model.toString(), read(model, common.cap), name != null ? name : stem);
        Path tokFile = tokenizer != null ? tokenizer : model.toAbsolutePath().resolveSibling("tokenizer.bin");
        Tokenizer tok;
        if (tokenizer == null && !Files.exists(tokFile)) {
            if (m.config().vocab() != ByteTokenizer.VOCAB)
                throw new kina.ir.KinaException(null, model + ": vocab " + m.config().vocab() + " needs its tokenizer.bin (--tokenizer FILE)");
            tok = new ByteTokenizer();
        } else {
            tok = tokenizer(tokFile, m.config().vocab(), common.cap);
        }
        if (Files.exists(out) && !Files.isDirectory(out)) throw new kina.ir.KinaException(null, "--out " + out + ": not a directory");
        Checkpoint.State st = new Checkpoint.State(m.config(), "none", Map.of(), 0, 0, model.toString(), Checkpoint.sha256(read(model, common.cap)),
                java.util.List.of(), java.util.List.of(), Map.of("imported", "llama2.c model.bin" + (m.sharedClassifier() ? " (shared classifier)" : "")));
        Path dir = Checkpoint.save(out, st, m.weights(), Map.of(), tok);
        var c = m.config();
        spec.commandLine().getOut().printf("imported %s: dim %d, hidden %d, %d layers, %d heads (%d kv), vocab %d (%s tokenizer), seq %d -> %s%n",
                model, c.dModel(), c.mlpHidden(), c.layers(), c.heads(), c.kvHeads(), c.vocab(), tok.kind(), c.seq(), dir);
        spec.commandLine().getOut().flush();
        return 0;
    }

    /** A byte-level tokenizer.bin (256 pieces, each standing for its own byte) is bytes; anything else must be a byte-level BPE. */
    static Tokenizer tokenizer(Path file, int vocab, FileCap cap) {
        byte[] b = read(file, cap);
        if (vocab == ByteTokenizer.VOCAB && java.util.Arrays.equals(b, new ByteTokenizer().toLlama2c())) return new ByteTokenizer();
        return BpeTokenizer.fromLlama2c(file.toString(), b, vocab);
    }

    static byte[] read(Path f, FileCap cap) {
        try {
            if (Files.isDirectory(f)) throw new kina.ir.KinaException(null, f + ": is a directory, not a file");
            String big = cap.tooLarge(Files.size(f));
            if (big != null) throw new kina.ir.KinaException(null, f + ": " + big);
            return Files.readAllBytes(f);
        } catch (NoSuchFileException e) {
            throw new kina.ir.KinaException(null, f + ": file not found");
        } catch (IOException e) {
            throw new kina.ir.KinaException(null, f + ": cannot read: " + e.getMessage());
        }
    }
}
