package kina.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.KinaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java API: the README's example runs as written, and errors are the CLI's one-line exceptions. */
class KinaTest {

    @Test void theReadmeExample() {
        // README:begin
        String source = """
                let nll = fn(logits: tensor<F64, [1, 4], @host>) -> tensor<F64, [1], @host> {
                  let target = tensor<I64, [1], @host> in
                  let lp = logits.log_softmax(axis=-1) in
                  let picked = lp.take_along_axis(target, axis=-1) in
                  let loss = -picked in
                  loss
                } in
                let logits = tensor<F64, [1, 4], @host> in
                nll(logits)
                """;
        Kina program = Kina.parse("nll.kina", source).check();
        Map<String, Tensor> inputs = Map.of(
                "logits", Tensor.of(DType.F64, new long[] {1, 4}, 1.0, 2.0, 0.5, -1.0),
                "target", Tensor.of(DType.I64, new long[] {1}, 1));
        List<Tensor> loss = program.run(inputs);                         // [−log softmax(logits)[1]]

        Kina grad = program.grad("nll");                                 // handle nll(logits) with reverseMode
        List<Tensor> out = grad.run(inputs);                             // (loss, softmax(logits) − onehot(1))
        String printed = grad.transform().toString();                    // the gradient program, as kina source
        List<Tensor> planned = grad.compile().run(inputs);               // the same bits from the compiled plan

        Kina jvp = program.jvp("nll");                                   // inputs logits, target and dot_logits
        Map<String, Tensor> withTangent = new java.util.HashMap<>(inputs);
        withTangent.put("dot_logits", Tensor.of(DType.F64, new long[] {1, 4}, 0.0, 1.0, 0.0, 0.0));
        List<Tensor> jt = jvp.run(withTangent);                          // (loss, d loss / d logits[0, 1])
        // README:end

        double[] z = {1.0, 2.0, 0.5, -1.0};
        double sum = 0;
        for (double x : z) sum += StrictMath.exp(x);
        assertThat(loss.getFirst().floats()[0]).isCloseTo(StrictMath.log(sum) - 2.0, org.assertj.core.data.Offset.offset(1e-15));
        for (int c = 0; c < 4; c++)
            assertThat(out.get(1).floats()[c]).isCloseTo(StrictMath.exp(z[c]) / sum - (c == 1 ? 1 : 0), org.assertj.core.data.Offset.offset(1e-15));
        assertThat(out.getFirst().bitEquals(loss.getFirst())).isTrue();
        for (int i = 0; i < out.size(); i++) assertThat(planned.get(i).bitEquals(out.get(i))).isTrue();
        assertThat(printed).contains("let nll_grad = fn(logits: tensor<F64, [1, 4], @host>)", "%scatter_along_axis(", "axis=1");
        assertThat(Kina.parse("again.kina", printed).run(inputs).get(1).bitEquals(out.get(1))).isTrue();
        assertThat(jt.get(1).floats()[0]).isCloseTo(out.get(1).floats()[1], org.assertj.core.data.Offset.offset(1e-15));
        assertThat(grad.runOracle(inputs).get(1).bitEquals(out.get(1))).isTrue();
        assertThat(grad.inputs().keySet()).containsExactly("target", "logits");
        List<Tensor> jtPlanned = jvp.compile().run(withTangent);
        for (int i = 0; i < jt.size(); i++) assertThat(jtPlanned.get(i).bitEquals(jt.get(i))).isTrue();
    }

    /** The README's Java block is the example above, line for line. */
    @Test void theReadmeShowsTheExample() throws Exception {
        String test = Files.readString(Path.of("src/test/java/kina/api/KinaTest.java"));
        String body = test.substring(test.indexOf("// README:begin\n") + 16, test.indexOf("        // README:end"));
        String readme = Files.readString(Path.of("README.md"));
        String indented = body.lines().map(l -> l.length() >= 8 ? l.substring(8) : l.strip()).reduce("", (a, l) -> a + l + "\n");
        assertThat(readme).contains(indented);
        String imports = "import java.util.List;\nimport java.util.Map;\nimport kina.api.Kina;\nimport kina.eval.Tensor;\nimport kina.ir.DType;\n";
        assertThat(readme).as("the README's snippet starts with its imports").contains("```java\n" + imports + "\n" + indented.lines().findFirst().orElseThrow());
    }

    @Test void secondOrderThroughTheApi() {
        String source = """
                let f = fn(x: tensor<F64, [3], @host>) -> tensor<F64, [3], @host> {
                  let y = x.exp() in
                  y
                } in
                let dot = fn(x: tensor<F64, [3], @host>, v: tensor<F64, [3], @host>) -> tensor<F64, [3], @host> {
                  let (y, g) = handle f(x) with reverseMode in
                  let d = g * v in
                  d
                } in
                let x = tensor<F64, [3], @host> in
                x
                """;
        Kina hvp = Kina.parse(source).grad("dot");
        Map<String, Tensor> in = Map.of("x", Tensor.of(DType.F64, new long[] {3}, 0.5, 1.0, -1.0),
                "v", Tensor.of(DType.F64, new long[] {3}, 2.0, -1.0, 3.0));
        List<Tensor> out = hvp.run(in);                                  // (d, H v, g)
        assertThat(out.get(1).floats()).containsExactly(StrictMath.exp(0.5) * 2.0, StrictMath.exp(1.0) * -1.0, StrictMath.exp(-1.0) * 3.0);
        List<Tensor> oracle = hvp.runOracle(in), planned = hvp.compile().run(in);
        for (int i = 0; i < out.size(); i++) {
            assertThat(oracle.get(i).bitEquals(out.get(i))).isTrue();
            assertThat(planned.get(i).bitEquals(out.get(i))).isTrue();
        }
    }

    @Test void programsPrintAsKinaSource() {
        Kina p = Kina.parse("t.kina", "let x = tensor<F32, [2], @host> in\nlet y = x.exp().sum(axis=-1) in\ny\n");
        assertThat(p.toString()).isEqualTo("let x = tensor<F32, [2], @host> in\nlet y = x.exp().sum(axis=-1, keepdims=false) in\ny\n");
        assertThat(p.check().program().toString()).isEqualTo("let x = tensor<F32, [2], @host> in\nlet y = x.exp().sum(axis=0, keepdims=false) in\ny\n");
    }

    /** Each stage's error is the line the kina command prints for the same file. */
    @Test void errorsAreTheCommandsOneLineExceptions(@TempDir Path dir) throws Exception {
        Map<String, String> bad = Map.of(
                "syntax.kina", "let x = tensor<F32, [2], @host> in\nlet y = x.exp( in\ny\n",
                "type.kina", "let x = tensor<F32, [2], @host> in\nlet y = x.sum(axis=3) in\ny\n",
                "ad.kina", "let f = fn(x: tensor<F32, [2], @host>) -> tensor<F32, [2], @host> {\n  let y = x.exp().log() in\n  y\n} in\n"
                        + "let x = tensor<F32, [2], @host> in\nhandle f(x) with reverseMode\n");
        for (var e : bad.entrySet()) {
            Path f = dir.resolve(e.getKey());
            Files.writeString(f, e.getValue());
            KinaException k = catchThrowableOfType(KinaException.class, () -> Kina.load(f).check().transform());
            StringWriter err = new StringWriter();
            int code = kina.cli.Main.run(new String[] {"grad", f.toString()}, new PrintWriter(new StringWriter()), new PrintWriter(err));
            assertThat(code).isEqualTo(1);
            assertThat(err.toString().strip()).as(e.getKey()).isEqualTo(k.oneLine());
        }
        KinaException missing = catchThrowableOfType(KinaException.class, () -> Kina.parse("m.kina",
                "let x = tensor<F32, [2], @host> in\nlet y = x.exp() in\ny\n").run(Map.of()));
        assertThat(missing.oneLine()).isEqualTo("error: inputs not given: x : tensor<F32, [2], @host> (pass a tensor for each, by name)");
        assertThatThrownBy(() -> Kina.parse("let x = tensor<F32, [2], @host> in\nx\n").grad("f"))
                .isInstanceOf(KinaException.class).hasMessage("grad: <source> has no fn f at the top level");
    }
}
