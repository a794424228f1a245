package kina.plan;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Eager;
import kina.eval.Kernels;
import kina.kernels.Matmul;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.plan.PlanKernels.Binary;
import kina.plan.PlanKernels.Unary;

/**
 * Binds each planned step to its kernel over the arena's buffers: a native kernel of
 * {@link PlanKernels} (or {@link Matmul}) where one exists for the dtype, else the generic
 * the generic kernel ({@link #fallback}). One case per instruction, no default.
 */
final class Lower {
    private final List<Flatten.Slot> slots;
    private final Object[] buf;

    /** {@code buf[slot]}: the buffer of every slot (views share their root's). */
    Lower(List<Flatten.Slot> slots, Object[] buf) {
        this.slots = slots;
        this.buf = buf;
    }

    /** Whether {@link #bind} gives a native kernel (for the report), not the fallback. */
    static boolean isNative(Plan.Op op, List<Flatten.Slot> slots) {
        return new Lower(slots, null).nativeKernel(op);
    }

    private TensorType type(int slot) { return slots.get(slot).type(); }

    private boolean f32(int slot) { return type(slot).dtype() == DType.F32; }

    private boolean f64(int slot) { return type(slot).dtype() == DType.F64; }

    private float[] f(int slot) { return (float[]) buf[slot]; }

    private int n(int slot) { return (int) type(slot).shape().vol(); }

    Runnable bind(Plan.Op op) {
        if (op.group() != null) return Fusion.bind(op.group(), buf);
        if (op.pass() == Plan.RowPass.QK_SOFTMAX_GRAD) {
            Instr.AttnOpts o = ((Instr.AttentionProduct) op.qk().instr()).opts();
            PlanKernels.Attn g = attn(op.args()[1], op.args()[2], o);
            float[] p = f(op.args()[0]), gy = f(op.args()[1]), v = f(op.args()[2]), ds = op.outUnread() ? null : f(op.step().out());
            float[] x = null, d = null, dq = null, qx = null, dk = null, dv = null;
            for (Flatten.Step s : op.also()) {                  // what Plan.qkSoftmaxGrads merged in, told apart by their operands
                if (s.instr() instanceof Instr.Sum) d = f(s.out());
                else if (((Instr.AttentionProduct) s.instr()).form() == Instr.AttentionProduct.Form.PK) { dq = f(s.out()); x = f(s.args()[1]); }
                else if (s.args()[0] == op.args()[0]) dv = f(s.out());    // attention_pq(p, g)
                else { dk = f(s.out()); qx = f(s.args()[1]); }            // attention_pq(ds, q)
            }
            float[] dRow = d, dqOut = dq, xk = x, q = qx, dkOut = dk, dvOut = dv;
            boolean attendedOnly = op.attendedOnly();
            return () -> AttentionProducts.qkSoftmaxGrad(g, gy, v, p, ds, dRow, xk, dqOut, q, dkOut, dvOut, attendedOnly);
        }
        if (op.pass() == Plan.RowPass.SOFTMAX_GRAD) {
            Shape s = type(op.args()[0]).shape();
            int c = (int) s.dim(s.rank() - 1), rows = prod(s, 0, s.rank() - 1);
            float[] p = f(op.args()[0]), dp = f(op.args()[1]), ds = f(op.step().out());
            float[] d = op.also().isEmpty() ? null : f(op.also().getFirst().out());
            return () -> PlanKernels.softmaxGrad(p, dp, ds, d, rows, c);
        }
        if (!op.also().isEmpty() && !nativeKernel(op)) throw new IllegalStateException("shared outputs need a native kernel");
        if (!nativeKernel(op)) return fallback(op);
        Runnable r = nativeRunnable(op);
        return r;
    }

    /** Which (instruction, dtype) pairs have a native kernel. */
    private boolean nativeKernel(Plan.Op op) {
        if (op.group() != null || op.pass() != Plan.RowPass.NONE) return true;
        int[] a = op.args();
        return switch (op.step().instr()) {
            case Instr.Input _, Instr.Literal _, Instr.Fill _, Instr.Reshape _ -> false;
            case Instr.Neg _, Instr.Exp _, Instr.Log _, Instr.Sqrt _, Instr.Rsqrt _, Instr.Tanh _, Instr.Sigmoid _,
                 Instr.Reciprocal _, Instr.Silu _, Instr.Relu _ -> f32(a[0]);
            case Instr.Gelu _, Instr.Softcap _, Instr.ArgMax _, Instr.Clamp _, Instr.Requant _, Instr.Greater _,
                 Instr.Select _, Instr.LayerNorm _, Instr.L2Norm _, Instr.SetRows _ -> false;
            case Instr.AttentionProduct _ -> f32(a[0]);
            case Instr.Add _, Instr.Sub _, Instr.Mul _, Instr.Div _, Instr.Maximum _ -> f32(a[0]) || f64(a[0]);
            case Instr.Swiglu _ -> f32(a[0]);
            case Instr.Matmul _ -> f32(a[0]) || f64(a[0]);
            case Instr.Transpose _, Instr.Broadcast _ -> true;
            case Instr.Sum _ -> f32(a[0]) || f64(a[0]);
            case Instr.LogSoftmax _, Instr.Softmax _, Instr.RmsNorm _, Instr.Rope _, Instr.Attention _,
                 Instr.AttentionProbs _, Instr.TakeAlongAxis _, Instr.ScatterAdd _, Instr.ScatterAlongAxis _ -> f32(a[0]);
            case Instr.Gather _ -> true;
        };
    }

    private Runnable nativeRunnable(Plan.Op op) {
        int[] a = op.args();
        int out = op.step().out();
        TensorType ot = type(out);
        int n = n(out);
        return switch (op.step().instr()) {
            case Instr.Input _, Instr.Literal _, Instr.Fill _, Instr.Reshape _ ->
                    throw new IllegalStateException(op.step().instr().op() + " is not a step");
            case Instr.Neg _ -> unary(Unary.NEG, a[0], out, n, 1);
            case Instr.Exp _ -> unary(Unary.EXP, a[0], out, n, 20);
            case Instr.Log _ -> unary(Unary.LOG, a[0], out, n, 20);
            case Instr.Sqrt _ -> unary(Unary.SQRT, a[0], out, n, 4);
            case Instr.Rsqrt _ -> unary(Unary.RSQRT, a[0], out, n, 4);
            case Instr.Tanh _ -> unary(Unary.TANH, a[0], out, n, 20);
            case Instr.Sigmoid _ -> unary(Unary.SIGMOID, a[0], out, n, 20);
            case Instr.Reciprocal _ -> unary(Unary.RECIPROCAL, a[0], out, n, 2);
            case Instr.Silu _ -> unary(Unary.SILU, a[0], out, n, 20);
            case Instr.Relu _ -> unary(Unary.RELU, a[0], out, n, 1);
            case Instr.Gelu _, Instr.Softcap _, Instr.ArgMax _, Instr.Clamp _, Instr.Requant _, Instr.Greater _,
                 Instr.Select _, Instr.LayerNorm _, Instr.L2Norm _, Instr.SetRows _ -> fallback(op);
            case Instr.AttentionProduct(Var _, Var _, var o, var form) -> {
                float[] x = f(a[0]), w = f(a[1]), y = f(out);
                yield switch (form) {
                    case QK -> {
                        PlanKernels.Attn g = attn(a[0], a[1], o);
                        yield () -> AttentionProducts.qk(g, x, w, y);
                    }
                    case PK -> {
                        PlanKernels.Attn g = attnOfProbs(a[0], a[1], o, o.kvHeads());
                        yield () -> AttentionProducts.pk(g, x, w, y);
                    }
                    case PQ -> {
                        PlanKernels.Attn g = attnOfProbs(a[0], a[1], o, o.heads());
                        yield () -> AttentionProducts.pq(g, x, w, y);
                    }
                };
            }
            case Instr.Add _ -> binary(Binary.ADD, a, out, n);
            case Instr.Sub _ -> binary(Binary.SUB, a, out, n);
            case Instr.Mul _ -> binary(Binary.MUL, a, out, n);
            case Instr.Div _ -> binary(Binary.DIV, a, out, n);
            case Instr.Maximum _ -> binary(Binary.MAXIMUM, a, out, n);
            case Instr.Swiglu _ -> {
                if (op.also().isEmpty()) yield binary(Binary.SWIGLU, a, out, n);
                float[] g = f(a[0]), u = f(a[1]), z = f(out), sg = f(op.also().getFirst().out());   // its gate's sigmoid (Plan.sharedSigmoids)
                yield () -> PlanKernels.range(n, 1, (from, to) -> PlanKernels.swigluSigmoidRange(g, u, z, sg, from, to));
            }
            case Instr.Matmul _ -> matmul(op, a, out);
            case Instr.Transpose(Var _, var perm) -> {
                Shape s = type(a[0]).shape();
                long[] in = s.strides(), src = new long[s.rank()];
                for (int i = 0; i < s.rank(); i++) src[i] = in[perm.at(i)];
                yield strided(a[0], out, src);
            }
            case Instr.Broadcast(Var _, var to) -> {
                Shape s = type(a[0]).shape();
                int lead = to.rank() - s.rank();                 // new leading axes (NumPy's rank growth): stride 0
                long[] in = s.strides(), src = new long[to.rank()];
                for (int i = 0; i < s.rank(); i++) src[lead + i] = s.dim(i) == 1 ? 0 : in[i];
                yield strided(a[0], out, src);
            }
            case Instr.Sum(Var _, int axis, boolean _) -> {
                Shape s = type(a[0]).shape();
                int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
                Object x = buf[a[0]], y = buf[out];
                yield f32(a[0]) ? () -> PlanKernels.sum((float[]) x, (float[]) y, outer, c, inner)
                        : () -> PlanKernels.sum((double[]) x, (double[]) y, outer, c, inner);
            }
            case Instr.LogSoftmax(Var _, int axis) -> softmax(a[0], out, axis, true);
            case Instr.Softmax(Var _, int axis) -> softmax(a[0], out, axis, false);
            case Instr.RmsNorm(Var _, var w, var r, double eps) -> {
                int dd = (int) ot.shape().dim(ot.rank() - 1), rows = dd == 0 ? 0 : n / dd;
                float[] x = f(a[0]), y = f(out);
                float[] wb = w.isPresent() ? f(a[1]) : null;
                float[] rb = r.isPresent() ? f(a[w.isPresent() ? 2 : 1]) : null;
                float e = (float) eps;
                yield () -> PlanKernels.rmsnorm(x, wb, rb, y, rows, dd, e);
            }
            case Instr.Rope(Var _, Var _, Var _, int heads, int rotary, int start) -> {
                Shape s = ot.shape();
                int rk = s.rank(), t = (int) s.dim(rk - 2), w = (int) s.dim(rk - 1), hd = w / heads;
                int half = (rotary == 0 ? hd : rotary) / 2, batch = t == 0 || w == 0 ? 0 : n / (t * w);
                float[] x = f(a[0]), cs = f(a[1]), sn = f(a[2]), y = f(out);
                yield () -> PlanKernels.rope(x, cs, sn, y, batch, t, w, heads, hd, half, start);
            }
            case Instr.Attention(Var _, Var _, Var _, var sinks, var o) -> {
                PlanKernels.Attn g = attn(a[0], a[1], o);
                float[] q = f(a[0]), k = f(a[1]), v = f(a[2]), y = f(out), sk = sinks.isPresent() ? f(a[3]) : null;
                float[] probs = null, shares = null;                   // attention_probs steps it stands for (Plan.sharedProbs)
                for (Flatten.Step s : op.also())
                    if (((Instr.AttentionProbs) s.instr()).sinkColumn()) shares = f(s.out());
                    else probs = f(s.out());
                float[] pb = probs, sb = shares;
                boolean attendedOnly = op.attendedOnly();
                yield () -> PlanKernels.attention(g, q, k, v, sk, y, pb, sb, attendedOnly);
            }
            case Instr.AttentionProbs(Var _, Var _, var sinks, var o, boolean col) -> {
                PlanKernels.Attn g = attn(a[0], a[1], o);
                float[] q = f(a[0]), k = f(a[1]), y = f(out), sk = sinks.isPresent() ? f(a[2]) : null;
                yield () -> PlanKernels.attentionProbs(g, q, k, sk, col, y);
            }
            case Instr.TakeAlongAxis(Var _, Var _, int axis) -> {
                Shape s = type(a[0]).shape();
                int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
                float[] v = f(a[0]), y = f(out);
                long[] idx = (long[]) buf[a[1]];
                int ni = n(a[1]);
                Runnable trap = fallback(op);
                yield () -> {
                    if (!PlanKernels.inRange(idx, ni, c)) trap.run();
                    PlanKernels.takeAlongAxis(v, idx, y, outer, c, inner);
                };
            }
            case Instr.Gather _ -> {
                Shape s = type(a[0]).shape();
                long rowsV = s.dim(0);
                int dd = (int) s.dim(1), ni = n(a[1]);
                Object v = buf[a[0]], y = buf[out];
                long[] idx = (long[]) buf[a[1]];
                Runnable trap = fallback(op);
                yield () -> {
                    if (!PlanKernels.inRange(idx, ni, rowsV)) trap.run();
                    PlanKernels.gather(v, idx, ni, dd, y);
                };
            }
            case Instr.ScatterAdd(Var _, Var _, TensorType dest) -> {
                int dd = (int) dest.shape().dim(1), ni = n(a[1]);
                long rowsV = dest.shape().dim(0);
                float[] u = f(a[0]), y = f(out);
                long[] idx = (long[]) buf[a[1]];
                Runnable trap = fallback(op);
                yield () -> {
                    if (!PlanKernels.inRange(idx, ni, rowsV)) trap.run();
                    PlanKernels.scatterAdd(u, idx, ni, dd, y, n);
                };
            }
            case Instr.ScatterAlongAxis(int axis, Var _, Var _, TensorType dest) -> {
                Shape s = dest.shape();
                int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank()), ni = n(a[1]);
                float[] u = f(a[0]), y = f(out);
                long[] idx = (long[]) buf[a[1]];
                Runnable trap = fallback(op);
                yield () -> {
                    if (!PlanKernels.inRange(idx, ni, c)) trap.run();
                    PlanKernels.scatterAlongAxis(u, idx, y, outer, c, inner);
                };
            }
        };
    }

    private Runnable unary(Unary u, int x, int out, int n, int cost) {
        float[] a = f(x), y = f(out);
        return () -> PlanKernels.range(n, cost, (from, to) -> PlanKernels.unary(u, a, y, from, to));
    }

    private Runnable binary(Binary op, int[] args, int out, int n) {
        if (f32(args[0])) {
            float[] a = f(args[0]), b = f(args[1]), z = f(out);
            return () -> PlanKernels.range(n, 1, (from, to) -> PlanKernels.binary(op, a, b, z, from, to));
        }
        double[] a = (double[]) buf[args[0]], b = (double[]) buf[args[1]], z = (double[]) buf[out];
        return () -> PlanKernels.binary(op, a, b, z, 0, n);
    }

    private Runnable matmul(Plan.Op op, int[] args, int out) {
        Shape os = type(out).shape(), as = type(args[0]).shape();
        int r = os.rank(), batch = prod(os, 0, r - 2), m = (int) os.dim(r - 2), nn = (int) os.dim(r - 1);
        int k = (int) (op.transA() ? as.dim(r - 2) : as.dim(r - 1));
        boolean ta = op.transA(), tb = op.transB();
        if (!op.also().isEmpty()) {                      // Plan.sharedOperands: one A, a B and an output per product
            int nOut = args.length - 1;
            float[][] bs = new float[nOut][], ys = new float[nOut][];
            int[] ns = new int[nOut];
            for (int t = 0; t < nOut; t++) {
                int o = t == 0 ? out : op.also().get(t - 1).out();
                bs[t] = f(args[1 + t]);
                ys[t] = f(o);
                ns[t] = (int) type(o).shape().dim(r - 1);
            }
            float[] a = f(args[0]);
            return () -> Matmul.sgemmShared(a, ta, bs, tb, ys, m, k, ns);
        }
        if (f32(out)) {
            float[] a = f(args[0]), b = f(args[1]), y = f(out);
            return () -> Matmul.sgemm(a, ta, b, tb, y, batch, m, k, nn);
        }
        double[] a = (double[]) buf[args[0]], b = (double[]) buf[args[1]], y = (double[]) buf[out];
        return () -> Matmul.dgemm(a, ta, b, tb, y, batch, m, k, nn);
    }

    private Runnable strided(int x, int out, long[] srcStride) {
        Shape os = type(out).shape();
        if (os.vol() == 0) return () -> { };
        long[] dims = os.dims();
        int r = dims.length, w = r == 0 ? 1 : (int) dims[r - 1], s = r == 0 ? 0 : (int) srcStride[r - 1];
        int[] off = PlanKernels.rowOffsets(dims, srcStride);
        Object a = buf[x], y = buf[out];
        return () -> PlanKernels.strided(a, y, off, w, s);
    }

    private Runnable softmax(int x, int out, int axis, boolean log) {
        Shape s = type(x).shape();
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        float[] a = f(x), y = f(out);
        return () -> PlanKernels.softmax(a, y, outer, c, inner, log);
    }

    private PlanKernels.Attn attn(int q, int k, Instr.AttnOpts o) {
        Shape qs = type(q).shape(), ks = type(k).shape();
        int r = qs.rank(), rows = (int) qs.dim(r - 2), l = (int) ks.dim(r - 2), hd = (int) (qs.dim(r - 1) / o.heads());
        return new PlanKernels.Attn(prod(qs, 0, r - 2), rows, l, hd, o.heads(), o.kvHeads(), o.start(), o.window(), o.chunk(),
                (float) Kernels.attentionScale(DType.F32, o, hd), (float) o.softcap());
    }

    /** The geometry of a PK / PQ product: s σ++[H, rows, l], x with {@code xHeads} heads of hd in its last axis. */
    private PlanKernels.Attn attnOfProbs(int s, int x, Instr.AttnOpts o, int xHeads) {
        Shape ss = type(s).shape(), xs = type(x).shape();
        int r = xs.rank(), rows = (int) ss.dim(r - 1), l = (int) ss.dim(r), hd = (int) (xs.dim(r - 1) / xHeads);
        return new PlanKernels.Attn(prod(xs, 0, r - 2), rows, l, hd, o.heads(), o.kvHeads(), o.start(), o.window(), o.chunk(),
                (float) Kernels.attentionScale(DType.F32, o, hd), (float) o.softcap());
    }

    private static int prod(Shape s, int from, int to) {
        long p = 1;
        for (int i = from; i < to; i++) p *= s.dim(i);
        return (int) p;
    }

    // ---- the generic kernel --------------------------------------------------------------------

    /** The generic kernel: the operands wrapped as Tensors (copies), the reference kernel run (the interpreter's bits by construction), the result copied into the output buffer. */
    private Runnable fallback(Plan.Op op) {
        Instr ins = op.step().instr();
        List<Var> vars = ins.operands();
        int[] args = op.step().args();                     // the unfolded operands
        int out = op.step().out();
        TensorType ot = type(out);
        return () -> {
            Map<Var, Tensor> env = new HashMap<>();
            for (int i = 0; i < args.length; i++) env.put(vars.get(i), wrap(type(args[i]), buf[args[i]]));
            Tensor t = Eager.INSTANCE.apply(ins, env::get);
            if (!t.type().equals(ot)) throw new IllegalStateException(ins.op() + " computed " + t.type() + ", planned " + ot);
            unwrap(t, buf[out]);
        };
    }

    /** A Tensor holding a copy of the first vol(t) elements of {@code b}. */
    static Tensor wrap(TensorType t, Object b) {
        int n = (int) t.shape().vol();
        return switch (b) {
            case float[] f -> {
                double[] d = new double[n];
                for (int i = 0; i < n; i++) d[i] = f[i];
                yield Tensor.ofFloats(t, d);
            }
            case double[] d -> Tensor.ofFloats(t, java.util.Arrays.copyOf(d, n));
            case long[] l -> Tensor.ofInts(t, java.util.Arrays.copyOf(l, n));
            default -> throw new IllegalStateException("not a buffer: " + b);
        };
    }

    /** Copies a tensor's elements into the start of buffer {@code b}. */
    static void unwrap(Tensor t, Object b) {
        int n = t.size();
        switch (b) {
            case float[] f -> { double[] d = t.floats(); for (int i = 0; i < n; i++) f[i] = (float) d[i]; }
            case double[] d -> System.arraycopy(t.floats(), 0, d, 0, n);
            case long[] l -> System.arraycopy(t.ints(), 0, l, 0, n);
            default -> throw new IllegalStateException("not a buffer: " + b);
        }
    }
}
