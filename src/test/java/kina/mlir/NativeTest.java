package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Map;
import kina.check.Checker;
import kina.eval.EvalError;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

/** The native engine's contract beyond the numbers: the build cache, carried state, checks before the call. */
class NativeTest {

    static Program program(String src) { return Checker.check(Parser.parse("n.kina", src)); }

    static final String SGD = """
            let w = tensor<F32, [2, 3], @host> in
            let g = tensor<F32, [2, 3], @host> in
            let lr = tensor<F32, [2, 3], @host> payload { 0.5, 0.5, 0.5, 0.5, 0.5, 0.5 } in
            let step = lr * g in
            let w2 = w - step in
            let s = w2.sum(axis=1, keepdims=false) in
            (w2, s)
            """;

    @Test void aSecondBuildOfTheSameModuleIsTakenFromTheCache() throws Exception {
        MlirTools.require();
        Emitter.Module m = Emitter.emit(program(SGD));
        Path a = Toolchain.build(m);
        FileTime t = Files.getLastModifiedTime(a);
        long t0 = System.nanoTime();
        Path b = Toolchain.build(m);
        assertThat(b).isEqualTo(a);
        assertThat(Files.getLastModifiedTime(b)).isEqualTo(t);
        assertThat(a.getParent()).isEqualTo(Toolchain.cacheDir());
        assertThat(a.getFileName().toString()).matches("[0-9a-f]{64}\\.so");
        assertThat(System.nanoTime() - t0).as("no rebuild").isLessThan(5_000_000_000L);
        Emitter.Module other = Emitter.emit(program(SGD.replace("0.5", "0.25")));
        assertThat(Toolchain.build(other)).isNotEqualTo(a);
    }

    @Test void carriedStateSwapsOutputsIntoInputs() {
        MlirTools.require();
        Native n = Native.compile(program(SGD));
        n.carry(Map.of("w", 0));
        n.set("w", Tensor.of(DType.F32, new long[] {2, 3}, 1, 2, 3, 4, 5, 6));
        Tensor g = Tensor.of(DType.F32, new long[] {2, 3}, 2, 2, 2, 2, 2, 2);
        List<Tensor> out = n.run(Map.of("g", g));
        assertThat(out).hasSize(1);
        assertThat(out.getFirst().floats()).containsExactly(0 + 1 + 2, 3 + 4 + 5);       // Σ (w − 1) per row
        out = n.run(Map.of("g", g));
        assertThat(out.getFirst().floats()).containsExactly(-1 + 0 + 1, 2 + 3 + 4);
        assertThat(n.get("w").floats()).containsExactly(-1, 0, 1, 2, 3, 4);
        assertThatThrownBy(() -> n.run(Map.of("g", g, "w", g))).isInstanceOf(MlirError.class).hasMessage("carry: w is carried; give it with set, not to run");
    }

    @Test void inputsAreCheckedBeforeTheCall() {
        MlirTools.require();
        Native n = Native.compile(program(SGD));
        Tensor w = Tensor.of(DType.F32, new long[] {2, 3}, 1, 2, 3, 4, 5, 6);
        assertThatThrownBy(() -> n.run(Map.of("w", w))).isInstanceOf(EvalError.class)
                .hasMessage("input: no payload supplied for g : tensor<F32, [2, 3], @host>");
        assertThatThrownBy(() -> n.run(Map.of("w", w, "g", Tensor.of(DType.F64, new long[] {2, 3}, 1, 2, 3, 4, 5, 6))))
                .isInstanceOf(EvalError.class).hasMessage("input g: expected tensor<F32, [2, 3], @host>, got tensor<F64, [2, 3], @host>");
    }

    @Test void indicesFromInputsAreCheckedInJavaSoTheProcessNeverAborts() throws Exception {
        MlirTools.require();
        Program p = program(Files.readString(Path.of("examples/nll_ad.kina")));
        Native n = Native.compile(p);
        Tensor logits = Tensor.ofFloats(kina.ir.TensorType.host(DType.F32, 1, 4, 8), new double[32]);
        Tensor bad = Tensor.of(DType.I64, new long[] {1, 4}, 0, 8, 1, 2);
        assertThatThrownBy(() -> n.run(Map.of("logits", logits, "targets", bad))).isInstanceOf(EvalError.class)
                .hasMessage("let picked: take_along_axis index out of bounds: input targets[0, 1] = 8, not in [0, 8)");
        Tensor neg = Tensor.of(DType.I64, new long[] {1, 4}, 0, 1, -1, 2);
        assertThatThrownBy(() -> n.run(Map.of("logits", logits, "targets", neg))).isInstanceOf(EvalError.class)
                .hasMessageContaining("input targets[0, 2] = -1, not in [0, 8)");
        assertThat(n.run(Map.of("logits", logits, "targets", Tensor.of(DType.I64, new long[] {1, 4}, 0, 7, 1, 2)))).hasSize(2);
    }

    @Test void constantIndicesAreCheckedWhenTheProgramIsCompiled() {
        String src = """
                let e = tensor<F32, [3, 2], @host> in
                let i = tensor<I64, [2], @host> payload { 1, 3 } in
                let y = e.gather(i) in
                y
                """;
        assertThatThrownBy(() -> Native.compile(program(src))).isInstanceOf(MlirError.class)
                .hasMessageContaining("let y: gather index out of bounds: the constant 3 is not in [0, 3)");
    }

    /**
     * The compiled code's stack use does not grow with the work: vector temporaries once lowered
     * into allocas inside the tile loops (about 1 MB for one 64×64 matmul, a crash of the whole JVM on
     * a thread with a default stack).
     */
    @Test void aCallRunsOnASmallThreadStack() throws Exception {
        MlirTools.require();
        Native n = Native.compile(program("""
                let a = tensor<F32, [128, 128], @host> in
                let b = tensor<F32, [128, 128], @host> in
                let c = a @ b in
                c
                """));
        double[] ones = new double[128 * 128];
        java.util.Arrays.fill(ones, 1);
        Tensor a = Tensor.ofFloats(kina.ir.TensorType.host(DType.F32, 128, 128), ones);
        Tensor[] out = new Tensor[1];
        Thread t = new Thread(null, () -> out[0] = n.run(Map.of("a", a, "b", a)).getFirst(), "small stack", 256 << 10);
        t.start();
        t.join();
        assertThat(out[0].floats()).containsOnly(128.0);
    }

    @Test void dtypesTheHostDoesNotKeepAreRefusedByName() {
        String src = "let x = tensor<BF16, [2], @host> in\nlet y = x.exp() in\ny\n";
        assertThatThrownBy(() -> Native.compile(program(src))).isInstanceOf(MlirError.class)
                .hasMessageContaining("the native engine runs F32, F64, I64 and I1 tensors, not BF16");
    }

    /**
     * The tiny train step's object calls no libm function (exp, log, tanh are polynomials inline,
     * vectorized with their loops) and no memrefCopy (the runtime's strided copy); the few whole-buffer
     * copies left (llvm.memcpy; bench/RESULTS.md names them) stay few.
     */
    @Test void theTinyStepCallsNoLibmAndCopiesLittle() {
        MlirTools.require();
        Program step = kina.plan.Plan.compile(kina.ad.TransformAd.transform(kina.model.StoryLm.trainStep(kina.model.Config.byName("tiny"), 2,
                new kina.model.Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0)))).program();
        String ir = Toolchain.llvmIr(Emitter.emitNative(step));
        List<String> calls = ir.lines().filter(l -> l.contains(" call ")).toList();
        assertThat(calls).noneMatch(l -> l.matches(".*@(expf|logf|tanhf|exp|log|tanh|memrefCopy|llvm\\.(exp|log|tanh)\\.[a-z0-9]+)\\(.*"));
        assertThat(calls.stream().filter(l -> l.contains("@llvm.memcpy")).count()).isLessThanOrEqualTo(12);
    }
}
