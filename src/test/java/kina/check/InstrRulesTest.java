package kina.check;

import static kina.check.Ir.dev;
import static kina.check.Ir.f32;
import static kina.check.Ir.i64;
import static kina.check.Ir.sh;
import static kina.check.Ir.t;
import static kina.check.Ir.v;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.ir.Var;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** Every instruction's type rule, accepted and rejected, through the checker (messages name let c). */
class InstrRulesTest {
    static final Var A = v("a"), B = v("b");
    static final Instr.AttnOpts OPTS = new Instr.AttnOpts(1, 1, Double.NaN, 0, 0, 0, 0);

    /** {@code let a = input; let b = input; let c = ins in c}. */
    static Program prog(Instr ins, TensorType... operands) {
        Ir ir = new Ir();
        String[] names = {"a", "b"};
        for (int i = 0; i < operands.length; i++) ir.input(names[i], operands[i]);
        return ir.let("c", ins).program("c");
    }

    static TensorType ok(Instr ins, TensorType... operands) {
        return Checker.check(prog(ins, operands)).body().lets().getLast().tensorType();
    }

    /** The TypeError message; asserts it names let c and the op, at let c's line. */
    static String err(Instr ins, TensorType... operands) {
        TypeError e = assertThrows(TypeError.class, () -> Checker.check(prog(ins, operands)));
        assertThat(e.getMessage()).startsWith("let c: " + ins.op() + ": ");
        assertThat(e.pos().line()).isEqualTo(operands.length + 1);
        assertThat(e.oneLine()).startsWith("t.kina:" + (operands.length + 1) + ":1: error: let c: ");
        return e.getMessage();
    }

    // ---- constants

    @Test void inputIsItsWrittenType() {
        assertThat(ok(new Instr.Input(dev(t(DType.BF16, 2, 3))))).isEqualTo(dev(t(DType.BF16, 2, 3)));
    }

    @Test void literalPayloadMustMatchTheVolume() {
        assertThat(ok(new Instr.Literal(f32(2, 2), new Payload(1, 2, 3, 4)))).isEqualTo(f32(2, 2));
        assertThat(ok(new Instr.Literal(f32(), new Payload(7)))).isEqualTo(f32());
        assertThat(err(new Instr.Literal(f32(2, 3), new Payload(1, 2, 3, 4, 5))))
                .contains("payload has 5 values", "tensor<F32, [2, 3], @host>", "needs 6");
    }

    @Test void discreteLiteralsHoldIntegers() {
        assertThat(ok(new Instr.Literal(i64(3), new Payload(0, -4, 9)))).isEqualTo(i64(3));
        assertThat(err(new Instr.Literal(i64(3), new Payload(0, 1.5, 2)))).contains("1.5", "index 1", "I64");
        assertThat(err(new Instr.Literal(i64(1), new Payload(Double.NaN)))).contains("NaN", "not an integer");
        assertThat(ok(new Instr.Literal(t(DType.I1, 2), new Payload(0, 1)))).isEqualTo(t(DType.I1, 2));
        assertThat(err(new Instr.Literal(t(DType.I1, 2), new Payload(0, 2)))).contains("2", "I1");
        assertThat(ok(new Instr.Literal(f32(2), new Payload(0.5, -1.25)))).isEqualTo(f32(2));
    }

    @Test void fillIsItsWrittenType() {
        assertThat(ok(new Instr.Fill(f32(2, 3), 1.0))).isEqualTo(f32(2, 3));
        assertThat(ok(new Instr.Fill(i64(4), 3))).isEqualTo(i64(4));
        assertThat(err(new Instr.Fill(i64(4), 0.5))).contains("fill value 0.5", "I64");
    }

    // ---- unary

    @Test void unaryKeepsTheFloatingType() {
        for (Instr u : List.<Instr>of(new Instr.Neg(A), new Instr.Exp(A), new Instr.Log(A))) {
            assertThat(ok(u, dev(t(DType.F64, 2, 3)))).isEqualTo(dev(t(DType.F64, 2, 3)));
            assertThat(err(u, i64(2, 3))).contains("floating", "tensor<I64, [2, 3], @host>");
        }
    }

    // ---- binary

    @Test void binaryNeedsIdenticalFloatingTypes() {
        for (Instr bin : List.<Instr>of(new Instr.Add(A, B), new Instr.Sub(A, B), new Instr.Mul(A, B), new Instr.Div(A, B))) {
            assertThat(ok(bin, f32(2, 3), f32(2, 3))).isEqualTo(f32(2, 3));
            assertThat(err(bin, f32(2, 3), f32(3, 2))).contains("tensor<F32, [2, 3], @host>", "tensor<F32, [3, 2], @host>");
            assertThat(err(bin, f32(2, 3), t(DType.F64, 2, 3))).contains("F32", "F64", "[2, 3]");
            assertThat(err(bin, f32(2, 3), dev(f32(2, 3)))).contains("@host", "@device");
            assertThat(err(bin, f32(1), f32(1, 1))).contains("[1]", "[1, 1]");  // no implicit broadcast
            assertThat(err(bin, i64(2), i64(2))).contains("floating", "tensor<I64, [2], @host>");
        }
    }

    // ---- matmul

    @Test void matmulContractsTheLastTwoAxes() {
        assertThat(ok(new Instr.Matmul(A, B), f32(2, 3), f32(3, 5))).isEqualTo(f32(2, 5));
        assertThat(ok(new Instr.Matmul(A, B), f32(1, 2, 4, 2), f32(1, 2, 2, 4))).isEqualTo(f32(1, 2, 4, 4));
        assertThat(ok(new Instr.Matmul(A, B), dev(t(DType.BF16, 7, 2, 3)), dev(t(DType.BF16, 7, 3, 1))))
                .isEqualTo(dev(t(DType.BF16, 7, 2, 1)));
    }

    @Test void matmulInnerDimsMessageIsTheDocumentedOne() {
        assertThat(err(new Instr.Matmul(A, B), f32(2, 3), f32(4, 5))).isEqualTo(
                "let c: matmul: inner dims differ: tensor<F32, [2, 3], @host> @ tensor<F32, [4, 5], @host> (K = 3 vs 4)");
    }

    @Test void matmulRejects() {
        Instr mm = new Instr.Matmul(A, B);
        assertThat(err(mm, f32(3), f32(3, 2))).contains("rank >= 2", "[3]", "[3, 2]");
        assertThat(err(mm, f32(2, 2, 3), f32(3, 2))).contains("ranks differ", "[2, 2, 3]", "[3, 2]", "3 vs 2");
        assertThat(err(mm, f32(2, 2, 3), f32(1, 3, 2))).contains("batch dims differ", "[2] vs [1]");
        assertThat(err(mm, f32(2, 3), t(DType.F64, 3, 2))).contains("dtypes differ", "F32", "F64");
        assertThat(err(mm, f32(2, 3), dev(f32(3, 2)))).contains("placements differ", "@device");
        assertThat(err(mm, i64(2, 3), i64(3, 2))).contains("floating", "I64");
    }

    // ---- shape

    @Test void reshapeKeepsTheVolume() {
        assertThat(ok(new Instr.Reshape(A, sh(3, 2)), f32(2, 3))).isEqualTo(f32(3, 2));
        assertThat(ok(new Instr.Reshape(A, sh(1, 4)), i64(4))).isEqualTo(i64(1, 4));
        assertThat(err(new Instr.Reshape(A, sh(4, 2)), f32(2, 3))).contains("volumes differ", "[2, 3]", "[4, 2]", "6 vs 8");
    }

    @Test void transposeNeedsAPermutationOfTheRank() {
        assertThat(ok(new Instr.Transpose(A, Perm.of(0, 2, 1)), f32(2, 3, 4))).isEqualTo(f32(2, 4, 3));
        assertThat(ok(new Instr.Transpose(A, Perm.of(1, 0)), dev(i64(2, 5)))).isEqualTo(dev(i64(5, 2)));
        assertThat(err(new Instr.Transpose(A, Perm.of(0, 0)), f32(2, 3))).contains("[0, 0]", "rank 2", "[2, 3]");
        assertThat(err(new Instr.Transpose(A, Perm.of(1, 0)), f32(2, 3, 4))).contains("[1, 0]", "rank 3");
        assertThat(ok(new Instr.Transpose(A, Perm.of(-1, 0)), f32(2, 3))).isEqualTo(f32(3, 2));     // NumPy: -1 the last axis
        assertThat(ok(new Instr.Transpose(A, Perm.of(0, -1, -2)), f32(2, 3, 4))).isEqualTo(f32(2, 4, 3));
        assertThat(err(new Instr.Transpose(A, Perm.of(-3, 0)), f32(2, 3))).contains("[-3, 0]", "rank 2");
        assertThat(err(new Instr.Transpose(A, Perm.of(-1, 1)), f32(2, 3))).contains("[1, 1]", "rank 2");
    }

    @Test void broadcastExpandsOnesAndAddsLeadingAxesAsNumPyDoes() {
        assertThat(ok(new Instr.Broadcast(A, sh(8, 4)), f32(1, 1))).isEqualTo(f32(8, 4));
        assertThat(ok(new Instr.Broadcast(A, sh(1, 2, 4, 4)), f32(1, 1, 4, 4))).isEqualTo(f32(1, 2, 4, 4));
        assertThat(ok(new Instr.Broadcast(A, sh(8, 4)), f32(4))).isEqualTo(f32(8, 4));
        assertThat(ok(new Instr.Broadcast(A, sh(3, 5, 4)), f32(5, 4))).isEqualTo(f32(3, 5, 4));
        assertThat(ok(new Instr.Broadcast(A, sh(2, 3, 5, 4)), f32(1, 4))).isEqualTo(f32(2, 3, 5, 4));
        assertThat(ok(new Instr.Broadcast(A, sh(2, 3)), f32())).isEqualTo(f32(2, 3));
        assertThat(err(new Instr.Broadcast(A, sh(4)), f32(2, 4))).contains("cannot drop axes", "[2, 4]", "[4]");
        assertThat(err(new Instr.Broadcast(A, sh(3, 5, 4)), f32(3, 4))).contains("axis 0", "[3, 4]", "is 3, neither 1 nor 5", "axis 1 it meets");
        assertThat(err(new Instr.Broadcast(A, sh(8, 4)), f32(2, 4))).contains("axis 0", "[2, 4]", "[8, 4]");
        assertThat(err(new Instr.Broadcast(A, sh(8, 4)), f32(8, 3))).contains("axis 1", "[8, 3]");
    }

    // ---- reduction, fused

    @Test void sumDropsOrKeepsTheAxis() {
        assertThat(ok(new Instr.Sum(A, 1, false), f32(2, 3, 4))).isEqualTo(f32(2, 4));
        assertThat(ok(new Instr.Sum(A, 1, true), f32(2, 3, 4))).isEqualTo(f32(2, 1, 4));
        assertThat(ok(new Instr.Sum(A, 0, false), f32(5))).isEqualTo(f32());
        assertThat(err(new Instr.Sum(A, 2, false), f32(2, 3))).contains("axis 2", "rank 2", "[2, 3]");
        assertThat(ok(new Instr.Sum(A, -1, true), f32(2, 3))).isEqualTo(f32(2, 1));
        assertThat(ok(new Instr.Sum(A, -2, false), f32(2, 3))).isEqualTo(f32(3));
        assertThat(err(new Instr.Sum(A, -3, true), f32(2, 3))).contains("axis -3", "[2, 3]", "-2..-1");
        assertThat(err(new Instr.Sum(A, 0, true), f32())).contains("axis 0", "rank 0");
    }

    @Test void softmaxesKeepTheFloatingType() {
        for (int axis = 0; axis < 3; axis++)
            for (Instr s : List.<Instr>of(new Instr.Softmax(A, axis), new Instr.LogSoftmax(A, axis)))
                assertThat(ok(s, f32(1, 4, 8))).isEqualTo(f32(1, 4, 8));
        for (Instr s : List.<Instr>of(new Instr.Softmax(A, -1), new Instr.LogSoftmax(A, -3)))
            assertThat(ok(s, f32(1, 4, 8))).isEqualTo(f32(1, 4, 8));
        for (Instr s : List.<Instr>of(new Instr.Softmax(A, 3), new Instr.LogSoftmax(A, -4)))
            assertThat(err(s, f32(1, 4, 8))).contains("axis", "[1, 4, 8]", "rank 3");
        assertThat(err(new Instr.LogSoftmax(A, 0), i64(4))).contains("floating", "I64");
    }

    // ---- indexing

    @Test void takeAlongAxisDropsTheAxis() {
        assertThat(ok(new Instr.TakeAlongAxis(A, B, 2), f32(1, 4, 8), i64(1, 4))).isEqualTo(f32(1, 4));
        assertThat(ok(new Instr.TakeAlongAxis(A, B, 0), t(DType.F64, 3, 5), i64(5))).isEqualTo(t(DType.F64, 5));
        assertThat(ok(new Instr.TakeAlongAxis(A, B, 0), f32(3), i64())).isEqualTo(f32());
        assertThat(ok(new Instr.TakeAlongAxis(A, B, -1), f32(1, 4, 8), i64(1, 4))).isEqualTo(f32(1, 4));
    }

    @Test void takeAlongAxisRejects() {
        assertThat(err(new Instr.TakeAlongAxis(A, B, 2), f32(1, 4, 8), i64(1, 8))).contains("[1, 4]", "[1, 4, 8]", "[1, 8]");
        assertThat(err(new Instr.TakeAlongAxis(A, B, 2), f32(1, 4, 8), f32(1, 4))).contains("I64", "tensor<F32, [1, 4], @host>");
        assertThat(err(new Instr.TakeAlongAxis(A, B, 1), i64(2, 3), i64(2))).contains("floating", "I64");
        assertThat(err(new Instr.TakeAlongAxis(A, B, 3), f32(1, 4, 8), i64(1, 4))).contains("axis 3", "rank 3");
        assertThat(err(new Instr.TakeAlongAxis(A, B, -4), f32(1, 4, 8), i64(1, 4))).contains("axis -4");
        assertThat(err(new Instr.TakeAlongAxis(A, B, 0), f32(), i64())).contains("axis 0", "rank 0");
        assertThat(err(new Instr.TakeAlongAxis(A, B, 1), f32(2, 3), dev(i64(2)))).contains("placements differ", "@device");
    }

    @Test void gatherLooksUpRows() {
        assertThat(ok(new Instr.Gather(A, B), f32(8, 4), i64(1, 4))).isEqualTo(f32(1, 4, 4));
        assertThat(ok(new Instr.Gather(A, B), dev(f32(8, 4)), dev(i64(3)))).isEqualTo(dev(f32(3, 4)));
        assertThat(err(new Instr.Gather(A, B), f32(2, 8, 4), i64(1, 4))).contains("rank 2", "[2, 8, 4]");
        assertThat(err(new Instr.Gather(A, B), i64(8, 4), i64(1, 4))).contains("floating", "[8, 4]");
        assertThat(err(new Instr.Gather(A, B), f32(8, 4), f32(1, 4))).contains("I64", "[1, 4]");
        assertThat(err(new Instr.Gather(A, B), f32(8, 4), i64())).contains("rank >= 1", "tensor<I64, [], @host>");
        assertThat(err(new Instr.Gather(A, B), f32(8, 4), dev(i64(4)))).contains("placements differ", "[8, 4]", "@device");
    }

    @Test void scatterAddFollowsSection14() {
        assertThat(ok(new Instr.ScatterAdd(A, B, f32(8, 4)), f32(1, 4, 4), i64(1, 4))).isEqualTo(f32(8, 4));
        assertThat(ok(new Instr.ScatterAdd(A, B, f32(8, 4)), f32(3, 4), i64(3))).isEqualTo(f32(8, 4));
        String[] ops = {"updates", "indices", "dest"};
        assertThat(err(new Instr.ScatterAdd(A, B, f32(8, 4)), f32(4), i64())).contains("rank >= 1");
        assertThat(err(new Instr.ScatterAdd(A, B, f32(8, 4)), f32(1, 5, 4), i64(1, 4))).contains(ops).contains("[1, 5, 4]", "[1, 4]");
        assertThat(err(new Instr.ScatterAdd(A, B, f32(8, 4)), f32(1, 4, 4), f32(1, 4))).contains("I64");
        assertThat(err(new Instr.ScatterAdd(A, B, f32(8, 3)), f32(1, 4, 4), i64(1, 4))).contains("[V, 4]", "[8, 3]");
        assertThat(err(new Instr.ScatterAdd(A, B, f32(2, 8, 4)), f32(1, 4, 4), i64(1, 4))).contains("[V, 4]", "[2, 8, 4]");
        assertThat(err(new Instr.ScatterAdd(A, B, t(DType.F64, 8, 4)), f32(1, 4, 4), i64(1, 4))).contains("dtype", "F64");
        assertThat(err(new Instr.ScatterAdd(A, B, dev(f32(8, 4))), f32(1, 4, 4), i64(1, 4))).contains("placements differ");
        assertThat(err(new Instr.ScatterAdd(A, B, dev(f32(8, 4))), dev(f32(1, 4, 4)), dev(i64(1, 4))))
                .isEqualTo("let c: scatter_add: checked device lowering is not available");
    }

    @Test void scatterAlongAxisFollowsSection10() {
        assertThat(ok(new Instr.ScatterAlongAxis(2, A, B, f32(1, 4, 8)), f32(1, 4), i64(1, 4))).isEqualTo(f32(1, 4, 8));
        assertThat(ok(new Instr.ScatterAlongAxis(0, A, B, f32(3, 5)), f32(5), i64(5))).isEqualTo(f32(3, 5));
        assertThat(ok(new Instr.ScatterAlongAxis(0, A, B, f32(8)), f32(), i64())).isEqualTo(f32(8));   // take_along_axis of rank 1
        assertThat(ok(new Instr.ScatterAlongAxis(-1, A, B, f32(1, 4, 8)), f32(1, 4), i64(1, 4))).isEqualTo(f32(1, 4, 8));
        assertThat(err(new Instr.ScatterAlongAxis(0, A, B, f32()), f32(), i64())).contains("axis 0", "rank 0", "no axes");
        assertThat(err(new Instr.ScatterAlongAxis(3, A, B, f32(1, 4, 8)), f32(1, 4), i64(1, 4))).contains("axis 3", "rank 3");
        assertThat(err(new Instr.ScatterAlongAxis(-4, A, B, f32(1, 4, 8)), f32(1, 4), i64(1, 4))).contains("axis -4");
        assertThat(err(new Instr.ScatterAlongAxis(2, A, B, f32(1, 4, 8)), f32(1, 8), i64(1, 8))).contains("[1, 4]", "[1, 8]");
        assertThat(err(new Instr.ScatterAlongAxis(2, A, B, f32(1, 4, 8)), f32(1, 4), i64(1, 8))).contains("[1, 4]", "[1, 8]");
        assertThat(err(new Instr.ScatterAlongAxis(2, A, B, f32(1, 4, 8)), f32(1, 4), f32(1, 4))).contains("I64");
        assertThat(err(new Instr.ScatterAlongAxis(2, A, B, t(DType.F64, 1, 4, 8)), f32(1, 4), i64(1, 4))).contains("dtype", "F64");
        assertThat(err(new Instr.ScatterAlongAxis(2, A, B, f32(1, 4, 8)), f32(1, 4), dev(i64(1, 4)))).contains("placements differ");
        assertThat(err(new Instr.ScatterAlongAxis(2, A, B, dev(f32(1, 4, 8))), dev(f32(1, 4)), dev(i64(1, 4))))
                .isEqualTo("let c: scatter_along_axis: checked device lowering is not available");
    }

    // ---- attention's adjoint products (IR-internal)

    static final Instr.AttnOpts GQA = new Instr.AttnOpts(4, 2, Double.NaN, 0, 2, 0, 1);
    static final Instr.AttentionProduct.Form QK = Instr.AttentionProduct.Form.QK, PK = Instr.AttentionProduct.Form.PK,
            PQ = Instr.AttentionProduct.Form.PQ;

    static Instr product(Instr.AttentionProduct.Form form, Instr.AttnOpts o) { return new Instr.AttentionProduct(A, B, o, form); }

    /** T = 3 rows, L = 5 keys, H = 4 heads on KV = 2 kv heads of width 2, batch prefix [2]: each form's shapes. */
    @Test void attentionProductsFollowTheirForms() {
        TensorType rows = f32(2, 3, 8), keys = f32(2, 5, 4), probs = f32(2, 4, 3, 5);
        assertThat(ok(product(QK, GQA), rows, keys)).isEqualTo(probs);
        assertThat(ok(product(PK, GQA), probs, keys)).isEqualTo(rows);
        assertThat(ok(product(PQ, GQA), probs, rows)).isEqualTo(keys);
        assertThat(ok(product(QK, OPTS), t(DType.F64, 3, 2), t(DType.F64, 5, 2))).isEqualTo(t(DType.F64, 1, 3, 5));
        assertThat(ok(product(PK, OPTS), dev(t(DType.BF16, 1, 3, 5)), dev(t(DType.BF16, 5, 2)))).isEqualTo(dev(t(DType.BF16, 3, 2)));
        assertThat(ok(product(PQ, OPTS), f32(1, 3, 5), f32(3, 2))).isEqualTo(f32(5, 2));
        // the scale and softcap are not the products' business (rules apply α themselves)
        var capped = new Instr.AttnOpts(4, 2, 0.5, 30, 0, 2, 0);
        assertThat(ok(product(PQ, capped), probs, rows)).isEqualTo(keys);
    }

    @Test void attentionProductsRejectShapesThatDoNotFit() {
        TensorType rows = f32(2, 3, 8), keys = f32(2, 5, 4), probs = f32(2, 4, 3, 5);
        String pkWant = "let c: attention_pk: a must be σ++[4, T, L] and b σ++[L, KV·hd] of one dtype and σ: a ";
        String pqWant = "let c: attention_pq: a must be σ++[4, T, L] and b σ++[T, H·hd] of one dtype and σ: a ";
        // the key count of b is not a's L, the rows of b are not a's T, the batch prefixes differ
        assertThat(err(product(PK, GQA), probs, f32(2, 6, 4))).isEqualTo(pkWant + probs + ", b " + f32(2, 6, 4));
        assertThat(err(product(PQ, GQA), probs, f32(2, 4, 8))).isEqualTo(pqWant + probs + ", b " + f32(2, 4, 8));
        assertThat(err(product(PK, GQA), f32(3, 4, 3, 5), keys)).isEqualTo(pkWant + f32(3, 4, 3, 5) + ", b " + keys);
        assertThat(err(product(PQ, GQA), f32(4, 3, 5), rows)).isEqualTo(pqWant + f32(4, 3, 5) + ", b " + rows);
        assertThat(err(product(QK, GQA), rows, f32(3, 5, 4))).contains("attention_qk: b must be F32 σ++[L, 2·2] with a's σ [2]",
                "[2, 3, 8]", "[3, 5, 4]");
        // head widths: b's width is not a multiple of the heads it holds, or q's and k's hd differ
        assertThat(err(product(PK, GQA), probs, f32(2, 5, 5)))
                .isEqualTo("let c: attention_pk: b width 5 is not a positive multiple of 2 heads: " + f32(2, 5, 5));
        assertThat(err(product(PQ, GQA), probs, f32(2, 3, 6)))
                .isEqualTo("let c: attention_pq: b width 6 is not a positive multiple of 4 heads: " + f32(2, 3, 6));
        assertThat(err(product(QK, GQA), rows, f32(2, 5, 6))).contains("b must be", "σ++[L, 2·2]");
        assertThat(err(product(QK, GQA), f32(8), keys)).contains("a needs rank >= 2", "[8]");
    }

    @Test void attentionProductsRejectHeadsThatAreNotAsHAxis() {
        TensorType keys = f32(2, 5, 4), rows = f32(2, 3, 8);
        var two = new Instr.AttnOpts(2, 2, Double.NaN, 0, 0, 0, 0);
        assertThat(err(product(PK, GQA), f32(2, 2, 3, 5), keys))
                .isEqualTo("let c: attention_pk: a must be σ++[4, T, L] and b σ++[L, KV·hd] of one dtype and σ: a "
                        + f32(2, 2, 3, 5) + ", b " + keys);
        assertThat(err(product(PQ, two), f32(2, 4, 3, 5), rows))
                .isEqualTo("let c: attention_pq: a must be σ++[2, T, L] and b σ++[T, H·hd] of one dtype and σ: a "
                        + f32(2, 4, 3, 5) + ", b " + rows);
        var three = new Instr.AttnOpts(4, 3, Double.NaN, 0, 0, 0, 0);
        for (var form : List.of(PK, PQ))
            assertThat(err(product(form, three), f32(2, 4, 3, 5), form == PK ? keys : rows))
                    .isEqualTo("let c: " + form.op() + ": kv_heads 3 must divide heads 4");
        assertThat(err(product(QK, three), rows, keys)).isEqualTo("let c: attention_qk: kv_heads 3 must divide heads 4");
    }

    @Test void attentionProductsRejectDtypesAndPlacementsThatDiffer() {
        TensorType probs = f32(2, 4, 3, 5), keys = f32(2, 5, 4), rows = f32(2, 3, 8);
        assertThat(err(product(PK, GQA), probs, t(DType.F64, 2, 5, 4))).contains("of one dtype", "F32", "F64");
        assertThat(err(product(PQ, GQA), t(DType.F64, 2, 4, 3, 5), rows)).contains("of one dtype", "F64", "F32");
        assertThat(err(product(PQ, GQA), probs, dev(rows))).contains("of one dtype", "@device");
        assertThat(err(product(QK, GQA), rows, t(DType.F64, 2, 5, 4))).contains("b must be F32", "F64");
        assertThat(err(product(PK, GQA), t(DType.I64, 2, 4, 3, 5), i64(2, 5, 4))).contains("floating", "I64");
        assertThat(err(product(QK, GQA), i64(2, 3, 8), keys)).contains("floating", "I64");
    }

    @Test void attentionProductsRejectBadMasks() {
        TensorType probs = f32(2, 4, 3, 5), keys = f32(2, 5, 4), rows = f32(2, 3, 8);
        var both = new Instr.AttnOpts(4, 2, Double.NaN, 0, 2, 2, 0);
        var negative = new Instr.AttnOpts(4, 2, Double.NaN, 0, 0, 0, -1);
        assertThat(err(product(PK, both), probs, keys)).isEqualTo("let c: attention_pk: window and chunk exclude each other");
        assertThat(err(product(PQ, both), probs, rows)).isEqualTo("let c: attention_pq: window and chunk exclude each other");
        assertThat(err(product(QK, both), rows, keys)).isEqualTo("let c: attention_qk: window and chunk exclude each other");
        assertThat(err(product(PQ, negative), probs, rows)).isEqualTo("let c: attention_pq: window, chunk and start must be >= 0");
        assertThat(err(product(QK, negative), rows, keys)).isEqualTo("let c: attention_qk: window, chunk and start must be >= 0");
    }

    // ---- TypeRules directly (the kina.ad entry point)

    @Test void inferIsPositionFree() {
        Map<Var, TensorType> types = Map.of(A, f32(2, 3), B, f32(4, 5));
        var m = assertThrows(TypeRules.Mismatch.class, () -> TypeRules.infer(new Instr.Matmul(A, B), types::get));
        assertThat(m.op()).isEqualTo("matmul");
        assertThat(m.getMessage()).startsWith("inner dims differ: ").contains("[2, 3]", "[4, 5]", "(K = 3 vs 4)");
        assertThat(TypeRules.infer(new Instr.Transpose(A, Perm.lastTwo(2)), types::get)).isEqualTo(f32(3, 2));
        Map<Var, TensorType> dev = Map.of(A, dev(f32(1, 4, 4)), B, dev(i64(1, 4)));
        assertThatThrownBy(() -> TypeRules.infer(new Instr.ScatterAdd(A, B, dev(f32(8, 4))), dev::get))
                .isInstanceOfSatisfying(TypeRules.Mismatch.class, e ->
                        assertThat(e.describe()).isEqualTo("scatter_add: checked device lowering is not available"));
    }

    @Test void everyInstructionHasAnAcceptedSample() {
        List<Instr> samples = List.of(new Instr.Input(f32(1)), new Instr.Literal(f32(1), new Payload(1)),
                new Instr.Fill(f32(1), 0), new Instr.Neg(A), new Instr.Exp(A), new Instr.Log(A), new Instr.Add(A, A),
                new Instr.Sub(A, A), new Instr.Mul(A, A), new Instr.Div(A, A), new Instr.Matmul(A, A),
                new Instr.Reshape(A, sh(4)), new Instr.Transpose(A, Perm.of(1, 0)), new Instr.Broadcast(A, sh(2, 2)),
                new Instr.Sum(A, 0, false), new Instr.LogSoftmax(A, 1), new Instr.Softmax(A, 0),
                new Instr.TakeAlongAxis(A, B, 1), new Instr.Gather(A, B), new Instr.ScatterAdd(A, B, f32(3, 2)),
                new Instr.ScatterAlongAxis(1, v("u"), B, f32(2, 2)),
                new Instr.Sqrt(A), new Instr.Rsqrt(A), new Instr.Tanh(A), new Instr.Sigmoid(A), new Instr.Reciprocal(A),
                new Instr.Silu(A), new Instr.Gelu(A), new Instr.Relu(A), new Instr.Softcap(A, 30), new Instr.ArgMax(A, 1),
                new Instr.Clamp(B, 0, 1), new Instr.Requant(B, 1), new Instr.Maximum(A, A), new Instr.Greater(A, A),
                new Instr.Select(v("m"), A, A), new Instr.Swiglu(A, A),
                new Instr.RmsNorm(A, Optional.of(v("u")), Optional.of(A), 1e-5),
                new Instr.LayerNorm(A, Optional.of(v("u")), Optional.of(v("u")), 1e-5), new Instr.L2Norm(A, 1e-6),
                new Instr.Rope(A, v("cs"), v("cs"), 1, 0, 0), new Instr.Attention(A, A, A, Optional.of(v("sk")), OPTS),
                new Instr.SetRows(A, v("i1"), v("row")), new Instr.AttentionLse(A, A, Optional.of(v("sk")), OPTS),
                new Instr.AttentionExp(A, A, v("lh"), OPTS),
                new Instr.AttentionGrad(A, A, A, A, v("lh"), v("lh"), OPTS, Instr.AttentionGrad.Wrt.Q),
                new Instr.AttentionGrad(A, A, A, A, v("lh"), v("lh"), OPTS, Instr.AttentionGrad.Wrt.K),
                new Instr.AttentionGrad(A, A, A, A, v("lh"), v("lh"), OPTS, Instr.AttentionGrad.Wrt.V),
                new Instr.AttentionProduct(A, A, OPTS, QK), new Instr.AttentionProduct(v("p"), A, OPTS, PK),
                new Instr.AttentionProduct(v("p"), A, OPTS, PQ),
                new Instr.Slice(A, 1, 1, 1), new Instr.Concat(A, A, 0), new Instr.Pad(A, 0, 1, 2),
                new Instr.RandomUniform(B, f32(3)), new Instr.RandomNormal(B, f32(2, 2)), new Instr.Dropout(A, B, 0.5),
                // the plan's fusions
                new Instr.MatmulT(A, A, true, false), new Instr.MatmulShared(A, List.of(A, A), false, true),
                new Instr.SoftmaxGrad(A, A, true), new Instr.SwigluSigmoid(A, A),
                new Instr.AttentionWithLse(A, A, A, Optional.of(v("sk")), OPTS),
                new Instr.AttentionBackward(A, A, A, A, v("lh"), v("lh"), OPTS, true, false, true),
                new Instr.Elementwise(List.of(A, A), new kina.ir.Rhs.Fn(
                        List.of(new kina.ir.Rhs.Param(v("x"), f32(2, 2), kina.ir.Pos.NONE), new kina.ir.Rhs.Param(v("y"), f32(2, 2), kina.ir.Pos.NONE)),
                        f32(2, 2), new kina.ir.Block(List.of(kina.ir.Let.of(v("z"), new Instr.Mul(v("x"), v("y")), kina.ir.Pos.NONE)), v("z"), kina.ir.Pos.NONE))));
        Map<Var, TensorType> types = Map.of(A, f32(2, 2), B, i64(2), v("u"), f32(2), v("m"), t(DType.I1, 2, 2),
                v("cs"), f32(2, 1), v("sk"), f32(1), v("i1"), i64(1), v("row"), f32(1, 2),
                v("p"), f32(1, 2, 2), v("lh"), f32(2, 1));
        for (Class<?> k : kina.ir.Instrs.records())
            assertThat(samples).as(k.getSimpleName()).anyMatch(k::isInstance);
        for (Instr s : samples)            // each is accepted, with as many values as it makes
            assertThat(TypeRules.results(s, types::get)).as(s.op()).hasSize(s instanceof Instr.Fused f ? f.results() : 1);
        for (var form : Instr.AttentionProduct.Form.values())
            assertThat(samples).as(form.op()).anyMatch(s -> s instanceof Instr.AttentionProduct p && p.form() == form);
        for (var wrt : Instr.AttentionGrad.Wrt.values())
            assertThat(samples).as(wrt.op()).anyMatch(s -> s instanceof Instr.AttentionGrad p && p.wrt() == wrt);
    }

    // ---- properties

    @Property void transposeThenInverseIsTheIdentity(@ForAll @Size(min = 1, max = 5) List<@IntRange(min = 1, max = 6) Integer> dims,
                                                    @ForAll long seed) {
        long[] d = dims.stream().mapToLong(Integer::longValue).toArray();
        int[] p = java.util.stream.IntStream.range(0, d.length).toArray();
        var rnd = new java.util.Random(seed);
        for (int i = p.length - 1; i > 0; i--) { int j = rnd.nextInt(i + 1); int x = p[i]; p[i] = p[j]; p[j] = x; }
        Perm perm = Perm.of(p);
        TensorType t = f32(d);
        TensorType once = TypeRules.infer(new Instr.Transpose(A, perm), Map.of(A, t)::get);
        TensorType back = TypeRules.infer(new Instr.Transpose(A, perm.inverse()), Map.of(A, once)::get);
        assertThat(back).isEqualTo(t);
    }

    @Property void sumKeepdimsThenBroadcastRestoresTheType(@ForAll @Size(min = 1, max = 5) List<@IntRange(min = 1, max = 6) Integer> dims,
                                                           @ForAll @IntRange(min = 0, max = 4) int axis) {
        long[] d = dims.stream().mapToLong(Integer::longValue).toArray();
        int ax = axis % d.length;
        TensorType t = f32(d);
        TensorType s = TypeRules.infer(new Instr.Sum(A, ax, true), Map.of(A, t)::get);
        assertThat(s.shape().dim(ax)).isEqualTo(1);
        assertThat(TypeRules.infer(new Instr.Broadcast(A, t.shape()), Map.of(A, s)::get)).isEqualTo(t);
    }
}
