package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import kina.cli.CliTest.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each bad option value is one line naming that option, the value and its range; exit 1 (2 for --max-file-size's usage error). */
class CliOptionsTest {
    static void bad(Result r, String line) {
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo(line);
    }

    @Test void trainBenchAndModelOptionsOutOfRange(@TempDir Path dir) {
        bad(CliTest.kina("train", "--steps", "-5", "--out", dir.resolve("r").toString()),
                "error: --steps -5: must be a whole number >= 1 (optimizer steps)");
        bad(CliTest.kina("train", "--tokenizer", "bpe", "--vocab", "259", "--out", dir.resolve("r").toString()),
                "error: --vocab 259: must be a whole number in 260..1048576 (a byte-level BPE's ids: 3 specials, 256 bytes and the space, then its pieces)");
        bad(CliTest.kina("train", "--batch", "0", "--out", dir.resolve("r").toString()),
                "error: --batch 0: must be a whole number >= 1 (sequences per step)");
        bad(CliTest.kina("train", "--eval-batches", "-1", "--out", dir.resolve("r").toString()),
                "error: --eval-batches -1: must be a whole number >= 1 (validation batches)");
        bad(CliTest.kina("train", "--threads", "100000", "--out", dir.resolve("r").toString()),
                "error: --threads 100000: must be a whole number in 1..4096 (worker threads)");
        bad(CliTest.kina("bench", "--steps", "0"), "error: --steps 0: must be a whole number >= 1 (timed steps)");
        bad(CliTest.kina("bench", "--batch", "-2"), "error: --batch -2: must be a whole number >= 1 (sequences per step)");
        bad(CliTest.kina("model", "print", "--batch", "0"), "error: --batch 0: must be a whole number >= 1 (sequences per step)");
        assertThat(dir.resolve("r")).doesNotExist();
    }

    @Test void sampleOptionsOutOfRangeForTheModel(@TempDir Path dir) {
        Path run = dir.resolve("run");
        Result t = CliTest.kinaCapturingStdout("train", "--steps", "1", "--batch", "1", "--eval-batches", "1", "--no-progress", "--out", run.toString());
        assertThat(t.code()).as(t.err()).isZero();
        String ck = run.toString();
        bad(CliTest.kina("sample", "--checkpoint", ck, "--top-k", "-1"), "error: --top-k -1: must be a whole number >= 0 (the k most likely tokens; 0: all)");
        bad(CliTest.kina("sample", "--checkpoint", ck, "--top-k", "300"),
                "error: --top-k 300: must be a whole number in 0..256 (the k most likely tokens of the checkpoint's 256; 0: all)");
        bad(CliTest.kina("sample", "--checkpoint", ck, "--tokens", "-1"), "error: --tokens -1: must be a whole number >= 0 (tokens to generate)");
        bad(CliTest.kina("sample", "--checkpoint", ck, "--temperature", "-0.5"), "error: --temperature -0.5: must be a finite number >= 0 (the softmax temperature; 0: greedy)");
        bad(CliTest.kina("sample", "--checkpoint", ck, "--threads", "0"), "error: --threads 0: must be a whole number in 1..4096 (worker threads)");
    }

    @Test void maxFileSizeIsCheckedAndCapsEveryRead(@TempDir Path dir) throws Exception {
        Path src = dir.resolve("p.kina");
        Files.writeString(src, "let x = tensor<F32, [2], @host> in\nx.exp()\n");
        Result r = CliTest.kina("check", src.toString(), "--max-file-size", "-3");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).startsWith("error: --max-file-size -3: must be a size of at least 1 byte, e.g. 4G, 512M or 1000000\n");
        bad(CliTest.kina("check", src.toString(), "--max-file-size", "10"),
                "error: " + src + ": too large: " + Files.size(src) + " bytes, over the 10 bytes cap (raise it with --max-file-size)");
        assertThat(CliTest.kina("check", src.toString(), "--max-file-size", "1K").code()).isZero();
        assertThat(CliTest.kina("check", src.toString()).code()).as("the cap holds for one command line").isZero();
    }

    @Test void randomInputsOfANarrowFloatAreRefusedInOneLine(@TempDir Path dir) throws Exception {
        for (String dt : new String[] {"BF16", "F16", "F8E4M3", "F8E5M2"}) {
            Path src = dir.resolve(dt + ".kina");
            Files.writeString(src, "let x = tensor<" + dt + ", [2, 3], @host> in\nx.exp()\n");
            bad(CliTest.kina("run", src.toString(), "--random-inputs", "1"),
                    "error: --random-inputs: input x is tensor<" + dt + ", [2, 3], @host>, and the host interpreter runs F32, F64, I64 and I1 only; "
                            + dt + " programs type-check, print and plan, but run them on the host written in F32 or F64");
        }
    }
}
