package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.Program;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The C header {@code kina compile --header} writes: it compiles under {@code clang-19 -Wall
 * -Werror} (as the header itself, included by C and by C++, and several headers in one
 * translation unit), names the outputs by the result's lets, and offers an index check exactly when
 * the indices can be checked before a call. Needs no build; skipped without clang-19 (failed under CI=true).
 */
class CHeaderTest {

    static final String[] EXAMPLES = {"nll_ad", "ad_gather", "ad_matmul4", "ad_reshape", "nll_hvp", "storylm0_train_step", "storylm0_hvp"};

    static Program load(String name, String source) { return TransformAd.transform(Checker.check(Parser.parse(name, source))); }

    static String header(Program p, String prefix) {
        return CHeader.of(p, Emitter.emit(p).entry(), prefix, prefix + ".so", p.file());
    }

    /** The headers of the examples and of the tiny StoryLM train step, by prefix. */
    static Map<String, String> headers() throws IOException {
        Map<String, String> h = new LinkedHashMap<>();
        for (String e : EXAMPLES) {
            Path f = Path.of("examples", e + ".kina");
            h.put(e, header(load(f.toString(), Files.readString(f)), e));
        }
        h.put("step", header(TransformAd.transform(StoryLm.trainStep(Config.byName("tiny"), 2, adamw())), "step"));
        return h;
    }

    static Optimizer adamw() { return new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0); }

    @Test void everyHeaderCompilesUnderClangWallWerrorAsCAndCxxAndTogether(@TempDir Path dir) throws Exception {
        Toolchain.Tools t = MlirTools.require();
        Map<String, String> headers = headers();
        StringBuilder all = new StringBuilder();
        for (var e : headers.entrySet()) {
            Path h = Files.writeString(dir.resolve(e.getKey() + ".h"), e.getValue());
            clang(t, dir, List.of("-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic", "-std=c11", h.toString()));
            all.append("#include \"").append(e.getKey()).append(".h\"\n");
        }
        // Every header included twice, in C and in C++: the guards, the shared types, no clash between prefixes.
        String tu = all.toString() + all + "int main(void) { return step_args()[STEP_OUT_LOSS].is_output - 1 + STEP_IN_IDS; }\n";
        clang(t, dir, List.of("-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic", "-std=c11",
                Files.writeString(dir.resolve("all.c"), tu).toString()));
        clang(t, dir, List.of("-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic", "-std=c++17", "-x", "c++",
                Files.writeString(dir.resolve("all.cpp"), tu.replace("(void)", "()")).toString()));
    }

    @Test void theTrainStepsHeaderNamesItsInputsAndOutputsWithTheirShapes() throws Exception {
        String h = headers().get("step");
        assertThat(h).contains("#define STEP_INPUTS 70\n", "#define STEP_OUTPUTS 65\n", "#define STEP_ARGS 135\n",
                "#define STEP_IN_IDS 0\n#define STEP_IN_IDS_DTYPE KINA_I64\n#define STEP_IN_IDS_RANK 2\n#define STEP_IN_IDS_DIM0 2\n"
                        + "#define STEP_IN_IDS_DIM1 64\n#define STEP_IN_IDS_ELEMENTS 128\n",
                "#define STEP_OUT_NEW_EMB 70\n", "#define STEP_OUT_LOSS 133\n", "#define STEP_OUT_GRAD_NORM 134\n",
                "{\"new_v_lm_head\", 1, KINA_F32, 2, s132, 16384, 65536},",
                " *     65  lr                       F32  [1, 1]\n",
                " *   ids in [0, 256), read by gather at let x0 (",
                " *   targets in [0, 256), read by take_along_axis at let picked (",
                "static inline int step_check_indices(void *const *argv, kina_index_error *err) {");
        // one memref struct per rank the entry uses
        assertThat(h).contains("typedef struct kina_memref_1d {", "typedef struct kina_memref_2d {").doesNotContain("kina_memref_3d");
    }

    @Test void aHandlesResultIsNamedAsTheGradientFnNamesItAndTemporariesByPosition() {
        String g = header(load("g.kina", """
                let f = fn(ids: tensor<I64, [1, 4], @host>, emb: tensor<F32, [8, 4], @host>) -> tensor<F32, [1, 4, 4], @host> {
                  let y = emb.gather(ids) in
                  y
                } in
                let ids = tensor<I64, [1, 4], @host> in
                let emb = tensor<F32, [8, 4], @host> in
                handle f(ids, emb) with reverseMode
                """), "g");
        assertThat(g).contains(" *      2  y  ", " *      3  g_emb  ", "#define G_OUT_Y 2\n", "#define G_OUT_G_EMB 3\n");
        String t = header(load("t.kina", "let x = tensor<F32, [2], @host> in\n(x + x, x * x, x)\n"), "t");
        assertThat(t).contains("{\"out0\", 1,", "{\"out1\", 1,", "{\"x\", 1,", "#define T_OUT_X 3\n", "#define T_IN_X 0\n");
    }

    @Test void namesThatWouldCollideAsMacrosAreMadeUnique() {
        String h = header(load("c.kina", """
                let a = tensor<F32, [2], @host> in
                let a_rank = tensor<F32, [2], @host> in
                let A = tensor<F32, [3], @host> in
                (a + a_rank, A)
                """), "c");
        assertThat(h).contains("#define C_IN_A 0\n", "#define C_IN_A_RANK_1 1\n", "#define C_IN_A_2 2\n", "#define C_IN_A_2_DIM0 3\n");
    }

    @Test void computedIndicesGetNoCheckFunctionAndTheHeaderSaysWhy() {
        String h = header(load("am.kina", """
                let x = tensor<F32, [2, 4], @host> in
                let m = x.argmax(axis=1) in
                let e = tensor<F32, [4, 3], @host> in
                e.gather(m)
                """), "am");
        assertThat(h).contains(" * Index checks: none can be made before the call, so an index out of range aborts the process:\n",
                "they are computed by argmax (let m)").doesNotContain("am_check_indices(void", "am_call_checked(");
        String none = header(load("n.kina", "let x = tensor<F32, [2], @host> in\nx * x\n"), "n");
        assertThat(none).contains("none (the program reads no index); n_check_indices answers KINA_OK.",
                "static inline int n_check_indices(void *const *argv, kina_index_error *err) {\n    (void)argv;");
    }

    @Test void thePrefixIsACIdentifierMadeFromTheFileName() {
        assertThat(CHeader.prefix(Path.of("out/step.h"))).isEqualTo("step");
        assertThat(CHeader.prefix(Path.of("my-lib.v2.h"))).isEqualTo("my_lib_v2");
        assertThat(CHeader.prefix(Path.of("2.h"))).isEqualTo("k2");
        assertThat(CHeader.string("a\"b\\c?\u00e9")).isEqualTo("\"a\\\"b\\\\c\\077\\303\\251\"");
    }

    static void clang(Toolchain.Tools t, Path dir, List<String> args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(t.clang().toString()));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", cmd) + "\n" + out).isZero();
    }
}
