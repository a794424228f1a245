package kina.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import kina.io.FileCap;
import kina.io.HfDirectory;
import kina.ir.KinaException;
import kina.model.BpeTokenizer;
import kina.model.ByteTokenizer;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.HuggingFace;
import kina.model.ImportedModel;
import kina.model.Llama2c;
import kina.model.LlamaCpp;
import kina.model.Tokenizer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kina import}: another tool's model as a kina checkpoint (weights, config, tokenizer; no
 * optimizer moments), ready for sample, train --resume (fresh moments) and export: llama2.c's
 * model.bin, a Hugging Face LlamaForCausalLM directory, or a GGUF file.
 */
@Command(name = "import", description = "Read a model into a kina checkpoint: llama2.c's model.bin (legacy format; its tokenizer.bin beside it or --tokenizer), "
        + "a Hugging Face LlamaForCausalLM directory (config.json, safetensors, tokenizer.json) or a GGUF file (F32/F16/BF16).")
final class ImportCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "MODEL", description = "llama2.c's model.bin, a Hugging Face model directory, or a .gguf file.") Path model;
    @Option(names = "--format", paramLabel = "llama2c|hf|gguf", description = "What MODEL is (default: hf for a directory, gguf for a file that starts with \"GGUF\", else llama2c).")
    String format;
    @Option(names = "--out", paramLabel = "DIR", required = true, description = "The checkpoint directory to write (as train --out).") Path out;
    @Option(names = "--tokenizer", paramLabel = "FILE", description = "llama2c: llama2.c's tokenizer.bin (default: tokenizer.bin beside the model, if there is one; none: bytes, for vocab 256).") Path tokenizer;
    @Option(names = "--seq", paramLabel = "N", description = "hf, gguf: the window to train and sample with (default: the model's context length, at most " + Config.MAX_SEQ + ").") Integer seq;
    @Option(names = "--name", description = "The config's name (default: the file or directory name).") String name;
    @Mixin Main.Common common;
    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        String fmt = format != null ? format : inferred(model);
        if (!fmt.equals("llama2c") && tokenizer != null) throw new KinaException(null, "--tokenizer is for --format llama2c; " + fmt + " holds its own tokenizer");
        if (fmt.equals("llama2c") && seq != null) throw new KinaException(null, "--seq is for --format hf and gguf; llama2.c's model.bin holds its seq_len");
        if (Files.exists(out) && !Files.isDirectory(out)) throw new KinaException(null, "--out " + out + ": not a directory");
        String stem = model.toAbsolutePath().normalize().getFileName() == null ? "model" : model.toAbsolutePath().normalize().getFileName().toString();
        ImportedModel m;
        String digest;
        switch (fmt) {
            case "llama2c" -> {
                byte[] b = read(model, common.cap);
                digest = Checkpoint.sha256(b);
                m = llama2c(b, name != null ? name : stem.replaceFirst("\\.bin$", ""));
            }
            case "hf" -> {
                m = HuggingFace.read(model, name, seq, common.cap);
                digest = Checkpoint.sha256(HfDirectory.bytes(model.resolve(HfDirectory.CONFIG), common.cap));
            }
            case "gguf" -> {
                byte[] b = read(model, common.cap);
                digest = Checkpoint.sha256(b);
                m = LlamaCpp.read(model.toString(), b, name, stem.replaceFirst("\\.gguf$", ""), seq);
            }
            default -> throw new KinaException(null, "--format " + fmt + ": unknown (llama2c, hf or gguf)");
        }
        String notes = m.notes().isEmpty() ? "" : " (" + String.join("; ", m.notes()) + ")";
        Checkpoint.State st = new Checkpoint.State(m.config(), "none", Map.of(), 0, 0, model.toString(), digest,
                java.util.List.of(), java.util.List.of(), Map.of("imported", m.kind() + notes));
        Path dir = Checkpoint.save(out, st, m.weights(), Map.of(), m.tokenizer());
        var c = m.config();
        var o = spec.commandLine().getOut();
        o.printf("imported %s (%s): dim %d, hidden %d, %d layers, %d heads (%d kv), vocab %d (%s tokenizer), seq %d -> %s%n",
                model, m.kind(), c.dModel(), c.mlpHidden(), c.layers(), c.heads(), c.kvHeads(), c.vocab(), m.tokenizer().kind(), c.seq(), dir);
        for (String n : m.notes()) o.printf("note: %s%n", n);
        o.flush();
        return 0;
    }

    /** hf for a directory, gguf for a file that starts with the GGUF magic, else llama2c (as before the other formats). */
    static String inferred(Path model) {
        if (Files.isDirectory(model)) return "hf";
        try (var in = Files.newInputStream(model)) {
            byte[] magic = in.readNBytes(4);
            if (java.util.Arrays.equals(magic, "GGUF".getBytes(java.nio.charset.StandardCharsets.US_ASCII))) return "gguf";
        } catch (IOException e) {
            // unreadable or missing: the llama2.c reader says so in its own words
        }
        return "llama2c";
    }

    private ImportedModel llama2c(byte[] file, String configName) {
        Llama2c.Model m = Llama2c.read(model.toString(), file, configName);
        Path tokFile = tokenizer != null ? tokenizer : model.toAbsolutePath().resolveSibling("tokenizer.bin");
        Tokenizer tok;
        if (tokenizer == null && !Files.exists(tokFile)) {
            if (m.config().vocab() != ByteTokenizer.VOCAB)
                throw new KinaException(null, model + ": vocab " + m.config().vocab() + " needs its tokenizer.bin (--tokenizer FILE)");
            tok = new ByteTokenizer();
        } else {
            tok = tokenizer(tokFile, m.config().vocab(), common.cap);
        }
        return new ImportedModel(m.config(), m.weights(), tok, "llama2.c model.bin", m.sharedClassifier() ? java.util.List.of("shared classifier") : java.util.List.of());
    }

    /** A byte-level tokenizer.bin (256 pieces, each standing for its own byte) is bytes; anything else must be a byte-level BPE. */
    static Tokenizer tokenizer(Path file, int vocab, FileCap cap) {
        byte[] b = read(file, cap);
        if (vocab == ByteTokenizer.VOCAB && java.util.Arrays.equals(b, new ByteTokenizer().toLlama2c())) return new ByteTokenizer();
        return BpeTokenizer.fromLlama2c(file.toString(), b, vocab);
    }

    static byte[] read(Path f, FileCap cap) {
        try {
            if (Files.isDirectory(f)) throw new KinaException(null, f + ": is a directory, not a file");
            String big = cap.tooLarge(Files.size(f));
            if (big != null) throw new KinaException(null, f + ": " + big);
            return Files.readAllBytes(f);
        } catch (NoSuchFileException e) {
            throw new KinaException(null, f + ": file not found");
        } catch (IOException e) {
            throw new KinaException(null, f + ": cannot read: " + e.getMessage());
        }
    }
}
