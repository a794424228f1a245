package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kina.mlir.MlirTools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** emit-mlir, compile and run --engine native end to end: results, files, one-line errors. */
class MlirCommandsTest {

    @Test void emitMlirPrintsTheModuleOrWritesIt(@TempDir Path dir) throws Exception {
        CliTest.Result r = CliTest.kina("emit-mlir", "examples/ad_gather.kina");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).isEqualTo(Files.readString(Path.of("examples/ad_gather.mlir")));
        Path out = dir.resolve("g.mlir");
        CliTest.Result w = CliTest.kina("emit-mlir", "examples/ad_gather.kina", "-o", out.toString());
        assertThat(w.code()).as(w.err()).isZero();
        assertThat(w.out()).isEqualTo("wrote " + out + "\n");
        assertThat(out).hasContent(r.out().stripTrailing());
    }

    /** The README's promise: the dtypes the host does not keep are refused by name, by emit-mlir and compile alike. */
    @Test void bf16F16AndF8AreRefusedByNameBeforeAnythingIsEmitted(@TempDir Path dir) throws Exception {
        for (String dtype : new String[] {"BF16", "F16", "F8E4M3", "F8E5M2"}) {
            Path src = Files.writeString(dir.resolve(dtype + ".kina"), "let x = tensor<F32, [2], @host> in\nlet y = x * x in\n"
                    + "let z = tensor<" + dtype + ", [2], @host> in\nlet w = z * z in\n(y, w)\n");
            Path so = dir.resolve(dtype + ".so");
            for (String[] cmd : new String[][] {{"emit-mlir", src.toString()}, {"compile", src.toString(), "-o", so.toString()}}) {
                CliTest.Result r = CliTest.kina(cmd);
                assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
                assertThat(r.out()).isEmpty();
                assertThat(r.err()).isEqualTo(src + ":3:1: error: let z: the native engine runs F32, F64, I64 and I1 tensors, not " + dtype
                        + " (write the program in F32 or F64)\n");
            }
            assertThat(so).doesNotExist();
        }
    }

    /** A build (tens of seconds for a train step) says that it starts and where its result is cached; a cached object says nothing. */
    @Test void aBuildSaysSoAndACachedObjectDoesNot(@TempDir Path dir) throws Exception {
        MlirTools.require();
        // a constant no earlier run has used: the module is new to the cache
        double fresh = 1 + (System.nanoTime() % 1_000_000) / 1e7;
        Path src = Files.writeString(dir.resolve("fresh.kina"), "let x = tensor<F32, [2], @host> in\nlet y = x * fill(tensor<F32, [2], @host>, "
                + fresh + ") in\ny\n");
        CliTest.Result first = CliTest.kina("compile", src.toString(), "-o", dir.resolve("a.so").toString());
        assertThat(first.code()).as(first.err()).isZero();
        List<String> lines = first.err().lines().toList();
        assertThat(lines).hasSize(2);
        assertThat(lines.getFirst()).startsWith("kina: building native code with mlir-opt-19, mlir-translate-19 and clang-19 (")
                .endsWith("); the result is cached in " + kina.mlir.Toolchain.cacheDir() + ", so the same program starts at once next time");
        assertThat(lines.getLast()).matches("kina: native code built in \\d+\\.\\d s");
        CliTest.Result again = CliTest.kina("compile", src.toString(), "-o", dir.resolve("b.so").toString());
        assertThat(again.code()).as(again.err()).isZero();
        assertThat(again.err()).isEmpty();
    }

    @Test void compileWritesASharedObject(@TempDir Path dir) throws Exception {
        MlirTools.require();
        Path so = dir.resolve("lib.so");
        CliTest.Result r = CliTest.kina("compile", "examples/ad_gather.kina", "-o", so.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("wrote " + so, "2 inputs (ids tensor<I64, [1, 4], @host>, emb tensor<F32, [8, 4], @host>)", "2 outputs");
        byte[] head = Files.readAllBytes(so);
        assertThat(head).startsWith(0x7f, 'E', 'L', 'F');
    }

    @Test void runNativePrintsWhatTheInterpreterPrints() {
        MlirTools.require();
        CliTest.Result i = CliTest.kina("run", "examples/ad_gather.kina", "--random-inputs", "5");
        CliTest.Result n = CliTest.kina("run", "examples/ad_gather.kina", "--random-inputs", "5", "--engine", "native");
        assertThat(n.code()).as(n.err()).isZero();
        assertThat(n.out()).isEqualTo(i.out()).contains("result_1 : tensor<F32, [8, 4], @host>");
    }

    @Test void anIndexOutOfBoundsIsOneLineBeforeTheCall(@TempDir Path dir) throws Exception {
        MlirTools.require();
        Path ids = dir.resolve("ids.json"), emb = dir.resolve("emb.json");
        Files.writeString(ids, "{\"dtype\": \"I64\", \"shape\": [1, 4], \"data\": [1, 2, 9, 3]}");
        Files.writeString(emb, "{\"dtype\": \"F32\", \"shape\": [8, 4], \"data\": [" + "0.5, ".repeat(31) + "0.5]}");
        CliTest.Result r = CliTest.kina("run", "examples/ad_gather.kina", "--engine", "native", "--input", "ids=" + ids, "--input", "emb=" + emb);
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().lines().filter(l -> !l.startsWith("kina: ")))                // a first build's two lines, then the error
                .containsExactly("examples/ad_gather.kina:6:3: error: let y: gather index out of bounds: input ids[0, 2] = 9, not in [0, 8)");
    }

    @Test void anUnknownEngineIsRefused() {
        CliTest.Result r = CliTest.kina("run", "examples/ad_gather.kina", "--random-inputs", "1", "--engine", "gpu");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).isEqualTo("error: --engine gpu: unknown (interpreter or native)\n");
    }
}
