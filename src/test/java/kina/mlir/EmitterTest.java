package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The emitted MLIR: accepted by mlir-opt-19 for every example and every model config's train step,
 * and the seeds' structural checks on the text (Section 10 §7.3, Section 14 §7.3 and §9).
 */
class EmitterTest {

    static Stream<Path> examples() throws IOException { return NativeExamplesTest.examples(); }

    static Program load(String file) throws IOException {
        return Checker.check(Parser.parse(file, Files.readString(Path.of(file))));
    }

    static String emit(String file) throws IOException { return Emitter.emit(load(file)).text(); }

    @ParameterizedTest @MethodSource("examples")
    void mlirOptAcceptsEveryExample(Path file) throws IOException {
        MlirTools.assertAccepted(emit(file.toString()), file.toString());
    }

    @ParameterizedTest @ValueSource(strings = {"tiny", "small", "medium"})
    void mlirOptAcceptsEveryConfigsTrainStep(String name) {
        Config c = Config.byName(name);
        Program p = StoryLm.trainStep(c, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0));
        MlirTools.assertAccepted(Emitter.emit(p).text(), name + " train step");
    }

    @Test void mlirOptAcceptsTheToyTrainStep() {
        Program p = StoryLm.toyTrainStep(Config.byName("storylm0"));
        MlirTools.assertAccepted(Emitter.emit(p).text(), "storylm0 train step");
    }

    @Test void theGatherVjpIsAScatterAddWithAReductionIteratorAndItsBoundsCheck() throws IOException {
        String text = emit("examples/ad_gather.kina");
        assertThat(text).contains("cf.assert", "\"scatter_add index out of bounds\"");
        String scatter = text.lines().filter(l -> l.contains("%g_emb = linalg.generic")).findFirst().orElseThrow();
        assertThat(scatter).contains("iterator_types = [\"parallel\", \"parallel\", \"reduction\"]");
        // the gather VJP is ScatterAdd, not ScatterAlongAxis, in the IR and in the text
        List<Instr> recorded = instructions(TransformAd.transform(load("examples/ad_gather.kina")).body());
        assertThat(recorded).anyMatch(i -> i instanceof Instr.ScatterAdd).noneMatch(i -> i instanceof Instr.ScatterAlongAxis);
        assertThat(text).doesNotContain("scatter_along_axis");
        // the I64 index parameter has no cotangent: f_grad returns (y, g_emb) only
        assertThat(text).contains("func.func private @f_grad(%ids: tensor<1x4xi64>, %emb: tensor<8x4xf32>) -> (tensor<1x4x4xf32>, tensor<8x4xf32>)");
    }

    @Test void theTakeAlongAxisVjpIsAChecedSelectOverTheDestination() throws IOException {
        String text = emit("examples/nll_ad.kina");
        assertThat(text).contains("\"scatter_along_axis index out of bounds\"", "\"take_along_axis index out of bounds\"");
    }

    @Test void theStepFunctionReturnsTheUpdatedEmbedding() throws IOException {
        String text = emit("examples/storylm0_ad_step.kina");
        assertThat(text).containsPattern("func\\.func private @main\\([^)]*\\) -> tensor<8x4xf32> \\{");
        assertThat(text).contains("linalg.batch_matmul", "tensor.expand_shape", "linalg.transpose");
    }

    @Test void reverseModeTuplesAreMultiResultReturns() throws IOException {
        String text = emit("examples/ad_matmul4.kina");
        assertThat(text).contains("-> (tensor<1x2x4x4xf32>, tensor<1x2x4x2xf32>, tensor<1x2x2x4xf32>)");
        assertThat(text).contains("tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x4x2xf32> into tensor<2x4x2xf32>");
    }

    /**
     * The plan's fusions lower to one loop nest each: every %elementwise of the tiny train step (as
     * the plan rewrites it) is one linalg.generic with a result per value, every %swiglu_sigmoid one
     * generic with two results, every %softmax_grad a row-sum generic and a row pass.
     */
    @Test void theTinyStepsFusionsAreOneGenericEach() {
        Program p = kina.plan.Plan.compile(TransformAd.transform(StoryLm.trainStep(Config.byName("tiny"), 2,
                new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0)))).program();
        int chains = 0, values = 0, swiglu = 0;
        for (Let l : p.body().lets()) {
            if (l.rhs() instanceof Instr.Elementwise e) { chains++; values += e.results(); }
            if (l.rhs() instanceof Instr.SwigluSigmoid) swiglu++;
        }
        String text = Emitter.emitNative(p).text();
        List<String> generics = text.lines().filter(x -> x.contains(" = linalg.generic")).toList();
        List<String> ew = generics.stream().filter(x -> x.trim().startsWith("%ew.")).toList();
        assertThat(chains).isGreaterThan(20);
        assertThat(ew).hasSize(chains);
        assertThat(ew.stream().mapToInt(EmitterTest::results).sum()).isEqualTo(values);
        assertThat(generics.stream().filter(x -> x.trim().startsWith("%swiglu.") && results(x) == 2)).hasSize(swiglu);
        assertThat(text).doesNotContain("%fused");
    }

    /** The results of a generic line {@code %x:N = linalg.generic …} (1 without {@code :N}). */
    private static int results(String generic) {
        String lhs = generic.trim().split(" ")[0];
        return lhs.contains(":") ? Integer.parseInt(lhs.substring(lhs.indexOf(':') + 1)) : 1;
    }

    @Test void deviceScattersAreRefusedWithTheSeedsMessages() {
        TensorType upd = new TensorType(DType.F32, Shape.of(1, 4, 4), Placement.DEVICE);
        TensorType ids = new TensorType(DType.I64, Shape.of(1, 4), Placement.DEVICE);
        TensorType dest = new TensorType(DType.F32, Shape.of(8, 4), Placement.DEVICE);
        Program sa = program(List.of(Let.typed(new Var("u"), new Instr.Input(upd), upd), Let.typed(new Var("i"), new Instr.Input(ids), ids),
                Let.typed(new Var("y"), new Instr.ScatterAdd(new Var("u"), new Var("i"), dest), dest)), "y");
        assertThatThrownBy(() -> Emitter.emit(sa)).isInstanceOf(MlirError.class)
                .hasMessage("let y: scatter_add: checked device lowering is not available");
        TensorType u2 = new TensorType(DType.F32, Shape.of(1, 4), Placement.DEVICE);
        TensorType d2 = new TensorType(DType.F32, Shape.of(1, 4, 8), Placement.DEVICE);
        Program saa = program(List.of(Let.typed(new Var("u"), new Instr.Input(u2), u2), Let.typed(new Var("i"), new Instr.Input(ids), ids),
                Let.typed(new Var("y"), new Instr.ScatterAlongAxis(2, new Var("u"), new Var("i"), d2), d2)), "y");
        assertThatThrownBy(() -> Emitter.emit(saa)).isInstanceOf(MlirError.class)
                .hasMessage("let y: scatter_along_axis: checked device lowering is not available");
    }

    @Test void deviceValuesAreRefusedByName() {
        String src = """
                let f = fn(emb: tensor<F32, [8, 4], @device>, ids: tensor<I64, [1, 4], @device>) -> tensor<F32, [1, 4, 4], @device> {
                  let y = emb.gather(ids) in
                  y
                } in
                let emb = tensor<F32, [8, 4], @device> in
                let ids = tensor<I64, [1, 4], @device> in
                f(emb, ids)
                """;
        assertThatThrownBy(() -> Emitter.emit(Checker.check(Parser.parse("d.kina", src)))).isInstanceOf(MlirError.class)
                .hasMessage("let y: gather: checked device lowering is not available");
        String add = "let a = tensor<F32, [2], @device> in\nlet b = a + a in\nb\n";
        assertThatThrownBy(() -> Emitter.emit(Checker.check(Parser.parse("a.kina", add)))).isInstanceOf(MlirError.class)
                .hasMessageContaining("let b: add: device lowering is not available");
    }

    @Test void inputsInsideAFnBodyBecomeArgumentsOfItAndOfItsCallers() throws IOException {
        Emitter.Module m = Emitter.emit(load("examples/nll_ad.kina"));
        assertThat(m.entry().inputs()).extracting(Emitter.Arg::name).containsExactly("logits", "targets");
        assertThat(m.text()).contains("func.func private @nll(%logits: tensor<1x4x8xf32>, %in.targets: tensor<1x4xi64>)");
    }

    private static Program program(List<Let> lets, String result) {
        return new Program("ir", new Block(lets, new Var(result), Pos.NONE));
    }

    static List<Instr> instructions(Block b) {
        List<Instr> out = new ArrayList<>();
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr i) out.add(i);
            if (l.rhs() instanceof Rhs.Fn fn) out.addAll(instructions(fn.body()));
        }
        return out;
    }
}
