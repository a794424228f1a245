package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import kina.check.Checker;
import kina.io.Npy;
import kina.eval.Tensor;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kina command end to end: results, files written, and one-line errors with exit 1. */
class CliTest {
    record Result(int code, String out, String err) {}

    static Result kina(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        int code = Main.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Result(code, out.toString(), err.toString());
    }

    static final String[] NLL_INPUTS = {"--input", "logits=examples/inputs/nll/logits.npy", "--input", "targets=examples/inputs/nll/targets.npy"};

    @Test void runsTheNllExampleWithItsBundledInputs() {
        Result r = kina(concat(new String[] {"run", "examples/nll.kina"}, NLL_INPUTS));
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("result_0 : tensor<F32, [1, 4], @host>")
                .contains("[[1.528892, 2.197689, 1.7837839, 2.0354364]]")
                .contains("result_1 : tensor<F32, [1, 4, 8], @host>");
    }

    @Test void oracleAndRecordedPrintTheSame() {
        Result a = kina(concat(new String[] {"run", "examples/storylm0_ad_step.kina", "--random-inputs", "3"}));
        Result b = kina(concat(new String[] {"run", "examples/storylm0_ad_step.kina", "--random-inputs", "3", "--oracle"}));
        assertThat(a.code()).as(a.err()).isZero();
        assertThat(a.out()).isEqualTo(b.out()).contains("result : tensor<F32, [8, 4], @host>");
    }

    /** The Hessian-vector product examples run, by the recorded program and by the oracle, to the same output; grad prints what reads back. */
    @Test void theHessianVectorProductExamplesRun(@TempDir Path dir) throws Exception {
        for (String ex : new String[] {"nll_hvp", "storylm0_hvp"}) {
            Result a = kina("run", "examples/" + ex + ".kina", "--random-inputs", "5");
            Result b = kina("run", "examples/" + ex + ".kina", "--random-inputs", "5", "--oracle");
            assertThat(a.code()).as(a.err()).isZero();
            assertThat(a.out()).isEqualTo(b.out()).startsWith("result_0 : tensor<F32, ").doesNotContain("NaN");
            Result g = kina("grad", "examples/" + ex + ".kina");
            assertThat(g.code()).as(g.err()).isZero();
            Path printed = dir.resolve(ex + "_grad.kina");
            Files.writeString(printed, g.out());
            Result again = kina("run", printed.toString(), "--random-inputs", "5");
            assertThat(again.out()).as(again.err()).isEqualTo(a.out());
        }
        Result nll = kina("run", "examples/nll_hvp.kina", "--input", "logits=examples/inputs/nll/logits.npy",
                "--input", "targets=examples/inputs/nll/targets.npy", "--input", "v=examples/inputs/nll/v.npy");
        assertThat(nll.code()).as(nll.err()).isZero();
        assertThat(nll.out()).contains("result_0 : tensor<F32, [1, 4, 8], @host>", "result_1 : tensor<F32, [1, 4, 8], @host>");
    }

    @Test void randomInputsGiveFiniteResultsOfTheRightShapes() {
        Result r = kina("run", "examples/storylm0_forward.kina", "--random-inputs", "1");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("result : tensor<F32, [1, 4, 8], @host>").doesNotContain("NaN").doesNotContain("Infinity");
        Result n = kina("run", "examples/nll.kina", "--random-inputs", "1");
        assertThat(n.code()).as(n.err()).isZero();
        assertThat(n.out()).contains("result_0 : tensor<F32, [1, 4], @host>").doesNotContain("NaN");
    }

    @Test void outWritesOneNpyPerResult(@TempDir Path dir) {
        Result r = kina(concat(new String[] {"run", "examples/nll.kina", "--out", dir.toString()}, NLL_INPUTS));
        assertThat(r.code()).as(r.err()).isZero();
        Tensor loss = Npy.read(dir.resolve("result_0.npy"));
        Tensor g = Npy.read(dir.resolve("result_1.npy"));
        assertThat(loss.shape().dims()).containsExactly(1, 4);
        assertThat(g.shape().dims()).containsExactly(1, 4, 8);
        Result single = kina("run", "examples/storylm0_ad_step.kina", "--random-inputs", "1", "--out", dir.toString());
        assertThat(single.code()).as(single.err()).isZero();
        assertThat(Files.exists(dir.resolve("result.npy"))).isTrue();
    }

    @Test void anOutThatIsAFileIsOneLineAndLeftAlone(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("notes.txt"), "keep\n");
        Result r = kina("run", "examples/nll.kina", "--random-inputs", "1", "--out", file.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: --out " + file + ": is not a directory (the results are written into --out as .npy files)");
        assertThat(r.out()).isEmpty();
        Path under = file.resolve("sub");
        Result below = kina("run", "examples/nll.kina", "--random-inputs", "1", "--out", under.toString());
        assertThat(below.code()).isEqualTo(1);
        assertThat(below.err().strip()).isEqualTo("error: --out " + under + ": " + file.toAbsolutePath().normalize()
                + " is not a directory (the results are written into --out as .npy files)");
        assertThat(below.out()).isEmpty();
        assertThat(Files.readString(file)).isEqualTo("keep\n");
    }

    static final String DESTRUCTURED = """
            let f = fn(x: tensor<F32, [2], @host>, y: tensor<F32, [2], @host>) -> tensor<F32, [2], @host> {
              let z = x * y in
              z
            } in
            let x = tensor<F32, [2], @host> in
            let y = tensor<F32, [2], @host> in
            let (r, g_x, g_y) = handle f(x, y) with reverseMode in
            let s = g_x * r in
            g_y
            """;

    @Test void checkPrintsTheTypeOfADestructuredResult(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("d.kina"), DESTRUCTURED);
        Result r = kina("check", f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).endsWith("=> g_y : tensor<F32, [2], @host>\n");
    }

    @Test void dotDrawsADestructuringLetAsOneNode(@TempDir Path dir) throws Exception {
        Path f = Files.writeString(dir.resolve("d.kina"), DESTRUCTURED), dot = dir.resolve("d.dot");
        Result r = kina("grad", f.toString(), "--dot", dot.toString());
        assertThat(r.code()).as(r.err()).isZero();
        String g = Files.readString(dot);
        assertThat(g.lines().filter(l -> l.contains("[label=\"") && l.contains("f_grad(x, y)")).count()).isEqualTo(1);
        assertThat(g).contains("\"top/(r, g_x, g_y)\" [label=\"(r, g_x, g_y) = f_grad(x, y)\"]")
                .contains("\"top/(r, g_x, g_y)\" -> \"top/s\" [label=\"g_x\"]")
                .contains("\"top/(r, g_x, g_y)\" -> \"top/s\" [label=\"r\"]");
    }

    @Test void gradPrintsAProgramThatChecksOnceTheInternalFormIsAbsent() throws Exception {
        Result r = kina("grad", "examples/storylm0_ad_step.kina");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("let storylm0_fwd_grad = fn(").contains("let g_logits = ones(tensor<F32, [1, 4, 8], @host>) in")
                .contains("%scatter_add(");
        // The reshape example has no internal node: its printed gradient program re-parses and checks.
        Result reshape = kina("grad", "examples/ad_reshape.kina");
        Checker.check(Parser.parse("grad.kina", reshape.out()));
    }

    @Test void gradDotWritesAGraph(@TempDir Path dir) throws Exception {
        Path dot = dir.resolve("g.dot");
        Result r = kina("grad", "examples/ad_gather.kina", "--dot", dot.toString());
        assertThat(r.code()).as(r.err()).isZero();
        String text = Files.readString(dot);
        assertThat(text).startsWith("digraph kina {").contains("scatter_add").contains("fillcolor");
    }

    /** A file into a folder that is not there: the error names the folder, not the temporary file the write would use. */
    @Test void writingIntoAMissingFolderNamesTheFolder(@TempDir Path dir) throws Exception {
        Path missing = dir.resolve("no-such-folder");
        Path dot = missing.resolve("g.dot"), mlir = missing.resolve("g.mlir");
        exactLine(kina("grad", "examples/ad_gather.kina", "--dot", dot.toString()),
                "error: " + dot + ": cannot write: the folder " + missing + " does not exist (create it first)");
        exactLine(kina("emit-mlir", "examples/ad_gather.kina", "-o", mlir.toString()),
                "error: " + mlir + ": cannot write: the folder " + missing + " does not exist (create it first)");
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        exactLine(kina("grad", "examples/ad_gather.kina", "--dot", file.resolve("g.dot").toString()),
                "error: " + file.resolve("g.dot") + ": cannot write: " + file + " is not a directory");
        assertThat(missing).doesNotExist();
    }

    private static void exactLine(Result r, String line) {
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err()).isEqualTo(line + "\n");
    }

    @Test void checkPrintsEveryLetsType() {
        Result r = kina("check", "examples/nll.kina");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("log_probs : tensor<F32, [1, 4, 8], @host>").contains("targets : tensor<I64, [1, 4], @host>");
    }

    @Test void badInputIsOneLineWithAPositionAndExitOne(@TempDir Path dir) throws Exception {
        Path trunc = dir.resolve("trunc.kina");
        Files.writeString(trunc, Files.readString(Path.of("examples/nll.kina")).substring(0, 200));
        assertOneLine(kina("check", trunc.toString()), trunc + ":", "expected");

        Path meth = dir.resolve("meth.kina");
        Files.writeString(meth, Files.readString(Path.of("examples/nll.kina")).replace("log_softmax(axis=2)", "logsoftmax(axis=2)"));
        assertOneLine(kina("check", meth.toString()), meth + ":", "unknown method 'logsoftmax'");

        Path mm = dir.resolve("mm.kina");
        Files.writeString(mm, "let a = tensor<F32, [2, 3], @host> in\nlet b = tensor<F32, [4, 5], @host> in\nlet c = a @ b in\nc\n");
        assertOneLine(kina("run", mm.toString(), "--random-inputs", "1"), mm + ":3:1:", "let c: matmul: inner dims differ");

        Path ids = dir.resolve("ids.npy");
        Npy.write(ids, Tensor.of(kina.ir.DType.I64, new long[] {1, 4}, 3, 1, 8, 7));
        assertOneLine(kina("run", "examples/ad_gather.kina", "--input", "ids=" + ids, "--random-inputs", "2"),
                "examples/ad_gather.kina:6:3:", "let y: gather index out of bounds: indices[0, 2] = 8, not in [0, 8)");

        assertOneLine(kina("run", dir.resolve("missing.kina").toString()), "error:", "no such file");

        Path wide = dir.resolve("wide.kina");       // saved as "Unicode" by a Windows editor
        byte[] le = Files.readString(Path.of("examples/nll.kina")).getBytes(java.nio.charset.StandardCharsets.UTF_16LE);
        byte[] bom = java.util.Arrays.copyOf(new byte[] {(byte) 0xFF, (byte) 0xFE}, 2 + le.length);
        System.arraycopy(le, 0, bom, 2, le.length);
        Files.write(wide, bom);
        assertOneLine(kina("check", wide.toString()), "error: " + wide + ": UTF-16 text (little-endian, with a byte-order mark), not UTF-8: ",
                "save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8 " + wide);
        assertOneLine(kina("run", "examples/nll.kina"), "error:", "inputs not given: targets : tensor<I64, [1, 4], @host>, logits");
        assertOneLine(kina("run", "examples/nll.kina", "--input", "nope=x.npy"), "error:", "no input or parameter named nope");
    }

    @Test void badTrainingInputIsOneLineAndLeavesNoCheckpoint(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("run");
        Path empty = Files.writeString(dir.resolve("empty.txt"), "");
        Path binary = Files.write(dir.resolve("bin.txt"), new byte[] {'a', 0, 'b', 0, 1, 2, 3});
        Path latin1 = Files.write(dir.resolve("latin1.txt"), "caf\u00e9 au lait ".repeat(400).getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        Path config = Files.writeString(dir.resolve("bad.json"), "{\"name\": \"bad\", \"vocab\": 256, \"d_model\": 64, \"heads\": 3, \"seq\": 64, \"layers\": 1, \"mlp_hidden\": 64}");
        assertOneLine(kina("train", "--data", dir.resolve("none.txt").toString(), "--out", out.toString()), "error:", "none.txt");
        assertOneLine(kina("train", "--data", empty.toString(), "--out", out.toString()), "error:", "empty");
        assertOneLine(kina("train", "--data", binary.toString(), "--out", out.toString()), "error:", "bin.txt");
        assertOneLine(kina("train", "--data", latin1.toString(), "--out", out.toString()), "error:", "UTF-8");
        assertOneLine(kina("train", "--config", config.toString(), "--out", out.toString()), "error:", "heads 3 does not divide d_model 64");
        assertThat(Files.exists(out)).isFalse();
    }

    /** Runs kina with System.out captured (sample and train print there), as UTF-8. */
    static Result kinaCapturingStdout(String... args) {
        java.io.PrintStream saved = System.out;
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try {
            System.setOut(new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8));
            Result r = kina(args);
            System.out.flush();
            return new Result(r.code(), bytes.toString(java.nio.charset.StandardCharsets.UTF_8) + r.out(), r.err());
        } finally {
            System.setOut(saved);
        }
    }

    @Test void sampleContinuesThePromptAndAnEmptyPromptStartsAfterALineBreak(@TempDir Path dir) {
        Path run = dir.resolve("run");
        Result t = kinaCapturingStdout("train", "--steps", "2", "--batch", "1", "--eval-batches", "1", "--no-progress", "--out", run.toString());
        assertThat(t.code()).as(t.err()).isZero();
        Result a = kinaCapturingStdout("sample", "--checkpoint", run.toString(), "--prompt", "The ", "--tokens", "12", "--seed", "3");
        assertThat(a.code()).as(a.err()).isZero();
        assertThat(a.out()).startsWith("The ").endsWith("\n");
        assertThat(kinaCapturingStdout("sample", "--checkpoint", run.toString(), "--prompt", "The ", "--tokens", "12", "--seed", "3").out())
                .isEqualTo(a.out());                                  // one seed, one text
        Result empty = kinaCapturingStdout("sample", "--checkpoint", run.toString(), "--prompt", "", "--tokens", "12", "--seed", "3");
        Result afterBreak = kinaCapturingStdout("sample", "--checkpoint", run.toString(), "--prompt", "\n", "--tokens", "12", "--seed", "3");
        assertThat(empty.code()).as(empty.err()).isZero();
        assertThat("\n" + empty.out()).isEqualTo(afterBreak.out());
    }

    @Test void temperatureZeroSamplesGreedilyAsTopKOne(@TempDir Path dir) {
        Path run = dir.resolve("run");
        Result t = kinaCapturingStdout("train", "--steps", "2", "--batch", "1", "--eval-batches", "1", "--no-progress", "--out", run.toString());
        assertThat(t.code()).as(t.err()).isZero();
        Result greedy = kinaCapturingStdout("sample", "--checkpoint", run.toString(), "--tokens", "16", "--top-k", "1", "--seed", "5");
        Result cold = kinaCapturingStdout("sample", "--checkpoint", run.toString(), "--tokens", "16", "--temperature", "0", "--seed", "6");
        assertThat(cold.code()).as(cold.err()).isZero();
        assertThat(cold.out()).isEqualTo(greedy.out()).startsWith("The ");
    }

    @Test void badCheckpointsAreOneLine(@TempDir Path dir) throws Exception {
        assertOneLine(kina("sample", "--checkpoint", dir.resolve("none").toString()), "error:", "none");
        Path foreign = Files.createDirectories(dir.resolve("foreign/step-000001"));
        Files.writeString(foreign.resolve("state.json"), "not json at all");
        assertOneLine(kina("sample", "--checkpoint", foreign.toString()), "error:", "state.json");
    }

    @Test void debugShowsTheStackTrace(@TempDir Path dir) throws Exception {
        Path mm = dir.resolve("mm.kina");
        Files.writeString(mm, "let a = tensor<F32, [2, 3], @host> in\nlet b = tensor<F32, [4, 5], @host> in\nlet c = a @ b in\nc\n");
        Result r = kina("check", mm.toString(), "--debug");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).contains("at kina.");
    }

    static void assertOneLine(Result r, String prefix, String text) {
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err().strip()).doesNotContain("\n").startsWith(prefix).contains(text).doesNotContain("Exception");
    }

    static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
