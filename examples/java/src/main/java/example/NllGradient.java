package example;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import kina.api.Kina;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.KinaException;

/**
 * kina from Java: the negative log-likelihood of two rows of logits, differentiated by reverse
 * mode, run on the interpreter and on the compiled plan, and the values read back.
 */
public final class NllGradient {
    private NllGradient() {}

    static final String SOURCE = """
            let nll = fn(logits: tensor<F32, [2, 4], @host>) -> tensor<F32, [2], @host> {
              let targets = tensor<I64, [2], @host> in
              let log_probs = logits.log_softmax(axis=-1) in
              let picked = log_probs.take_along_axis(targets, axis=-1) in
              let loss = -picked in
              loss
            } in
            let logits = tensor<F32, [2, 4], @host> in
            nll(logits)
            """;

    public static void main(String[] args) {
        try {
            Kina program = Kina.parse("nll.kina", SOURCE).check();
            Map<String, Tensor> inputs = Map.of(
                    "logits", Tensor.of(DType.F32, new long[] {2, 4}, 1.0, 2.0, 0.5, -1.0, 0.0, 0.0, 3.0, 1.0),
                    "targets", Tensor.of(DType.I64, new long[] {2}, 1, 2));

            Kina grad = program.grad("nll");                  // handle nll(logits) with reverseMode
            List<Tensor> out = grad.run(inputs);              // (loss, g_logits): g = softmax(logits) - onehot(targets)
            Tensor loss = out.get(0), gLogits = out.get(1);

            System.out.println("inputs: " + grad.inputs().keySet());
            System.out.println("loss " + loss.type() + ": " + format(loss.floats()));
            long[] dims = gLogits.shape().dims();             // [2, 4], row-major
            for (int row = 0; row < dims[0]; row++) {
                double[] g = Arrays.copyOfRange(gLogits.floats(), (int) (row * dims[1]), (int) ((row + 1) * dims[1]));
                System.out.println("g_logits[" + row + "]: " + format(g));
            }

            Kina.Compiled plan = grad.compile();              // compile once, run as often as needed
            List<Tensor> planned = plan.run(inputs);
            System.out.println("plan equals interpreter bit for bit: "
                    + (planned.get(0).bitEquals(loss) && planned.get(1).bitEquals(gLogits)));
        } catch (KinaException e) {
            System.err.println(e.oneLine());                  // file:line:col: error: let x: op: what
            System.exit(1);
        }
    }

    private static String format(double[] values) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) b.append(i == 0 ? "" : ", ").append(String.format(java.util.Locale.ROOT, "%.4f", values[i]));
        return b.append(']').toString();
    }
}
