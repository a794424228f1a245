package kina.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.io.AtomicFiles;
import kina.model.BpeTokenizer;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.HuggingFace;
import kina.model.Llama2c;
import kina.model.LlamaCpp;
import kina.model.StoryLm;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code kina export}: a checkpoint as llama2.c's model.bin + tokenizer.bin, in the Hugging Face Llama layout, or as llama.cpp's GGUF. */
@Command(name = "export", description = "Write a checkpoint's model for llama2.c (model.bin and tokenizer.bin), Hugging Face transformers "
        + "(model.safetensors, config.json, tokenizer.json) or llama.cpp and the tools built on it (one GGUF file).")
final class ExportCommand implements Callable<Integer> {
    @Option(names = "--checkpoint", paramLabel = "DIR", description = "A run directory or one of its step directories (default: ${DEFAULT-VALUE}).", defaultValue = "runs/latest")
    Path checkpoint;
    @Option(names = "--format", paramLabel = "llama2c|hf|gguf", required = true,
            description = "llama2c: llama2.c's legacy model.bin; hf: LlamaForCausalLM's safetensors, config.json and tokenizer.json; gguf: llama.cpp's GGUF v3.") String format;
    @Option(names = {"-o", "--output"}, paramLabel = "PATH", required = true,
            description = "llama2c: the model.bin to write (tokenizer.bin goes beside it); hf: the directory to write; gguf: the .gguf file to write.") Path output;
    @Option(names = "--dtype", paramLabel = "f32|f16", description = "gguf: how the matrices are stored (the norms stay f32) (default: f32).") String dtype;
    @Option(names = "--tokenizer-out", paramLabel = "FILE", description = "llama2c: where tokenizer.bin goes (default: beside the model).") Path tokenizerOut;
    @Mixin Main.Common common;
    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        Checkpoint.Loaded ck = Checkpoint.load(checkpoint, common.cap);
        Config c = ck.state().config();
        java.util.Map<String, kina.ir.TensorType> want = new java.util.LinkedHashMap<>();
        for (StoryLm.Weight w : StoryLm.weights(c)) want.put(w.name(), kina.ir.TensorType.host(kina.ir.DType.F32, w.shape()));
        ck.requireWeights(want);
        if (dtype != null && !format.equals("gguf")) throw new kina.ir.KinaException(null, "--dtype is for --format gguf; " + format + " writes f32");
        switch (format) {
            case "llama2c" -> {
                if (Files.isDirectory(output)) throw new kina.ir.KinaException(null, "-o " + output + ": is a directory; give the model.bin file to write");
                byte[] model = Llama2c.write(c, ck.weights());        // refuses what the format cannot hold, before writing
                Path tok = tokenizerOut != null ? tokenizerOut : sibling(output, "tokenizer.bin");
                AtomicFiles.write(output, model);
                AtomicFiles.write(tok, ck.tokenizer().toLlama2c());
                spec.commandLine().getOut().printf("wrote %s (%s, %,d bytes) and %s (%s tokenizer, %d ids)%n", output, c.name(), model.length, tok,
                        ck.tokenizer().kind(), ck.tokenizer().vocab());
            }
            case "hf" -> {
                if (Files.exists(output) && !Files.isDirectory(output)) throw new kina.ir.KinaException(null, "-o " + output + ": not a directory");
                HuggingFace.requireFits(c);
                try {
                    Files.createDirectories(output);
                } catch (java.io.IOException e) {
                    throw new kina.ir.KinaException(null, "-o " + output + ": cannot create the directory: " + e.getMessage());
                }
                HuggingFace.write(output, c, ck.weights(), ck.tokenizer());
                spec.commandLine().getOut().printf("wrote %s, %s and tokenizer.json (LlamaForCausalLM, %s, %s tokenizer)%n", output.resolve(HuggingFace.WEIGHTS),
                        output.resolve(HuggingFace.CONFIG), c.name(), ck.tokenizer().kind());
            }
            case "gguf" -> {
                if (Files.isDirectory(output)) throw new kina.ir.KinaException(null, "-o " + output + ": is a directory; give the .gguf file to write");
                String dt = dtype == null ? "f32" : dtype;
                if (!dt.equals("f32") && !dt.equals("f16")) throw new kina.ir.KinaException(null, "--dtype " + dtype + ": f32 or f16");
                byte[] file = LlamaCpp.write(c, ck.weights(), ck.tokenizer(), dt.equals("f16"));   // refuses before writing
                AtomicFiles.write(output, file);
                spec.commandLine().getOut().printf("wrote %s (GGUF v3, llama, %s, %s, %s tokenizer, %,d bytes)%n", output, c.name(), dt.toUpperCase(java.util.Locale.ROOT),
                        ck.tokenizer().kind(), file.length);
            }
            default -> throw new kina.ir.KinaException(null, "--format " + format + ": unknown (llama2c, hf or gguf)");
        }
        spec.commandLine().getOut().flush();
        return 0;
    }

    private static Path sibling(Path file, String name) {
        Path parent = file.toAbsolutePath().getParent();
        return parent == null ? Path.of(name) : parent.resolve(name);
    }
}
