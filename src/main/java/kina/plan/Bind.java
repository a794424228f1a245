package kina.plan;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.eval.AttentionKernels;
import kina.eval.Eager;
import kina.eval.Kernels;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.kernels.AttentionProducts;
import kina.kernels.FlashAttention;
import kina.kernels.Fusion;
import kina.kernels.Matmul;
import kina.kernels.PlanKernels;
import kina.kernels.PlanKernels.Binary;
import kina.kernels.PlanKernels.Unary;

/**
 * Binds each step of the schedule to its kernel over the arena's buffers: one switch over the
 * instructions, each case answering its native kernel ({@link PlanKernels}, {@link Matmul},
 * {@link AttentionProducts}, {@link Fusion}) for the dtypes it has one, or null, for which the
 * generic kernel runs the reference kernel (the interpreter's bits by construction).
 */
final class Bind {

    /** A native kernel not yet given its buffers. */
    @FunctionalInterface
    interface Binder {
        /** The kernel over {@code buf[slot]} (views share their root's buffer). */
        Runnable to(Object[] buf);
    }

    /** What the schedule knows of a step that its kernel may use: {@code unread[slot]}, nothing reads the slot (so the kernel need not store it). */
    record Facts(boolean[] unread) {}

    private final Slots ir;

    Bind(Slots ir) { this.ir = ir; }

    private TensorType type(int slot) { return ir.type(slot); }

    private boolean f32(int slot) { return type(slot).dtype() == DType.F32; }

    private boolean f64(int slot) { return type(slot).dtype() == DType.F64; }

    private int n(int slot) { return (int) type(slot).shape().vol(); }

    private static float[] f(Object[] buf, int slot) { return (float[]) buf[slot]; }

    /** Whether step s has a native kernel (reports, and whether it may throw: the generic one may). */
    boolean isNative(Slots.Step s, Facts facts) { return nativeKernel(s, facts) != null; }

    /** The kernel of step s over {@code buf}: its native one, else the generic one. */
    Runnable kernel(Slots.Step s, Facts facts, Object[] buf) {
        Binder b = nativeKernel(s, facts);
        return b != null ? b.to(buf) : fallback(s, buf);
    }

    /** The native kernel of step s, or null when the generic kernel runs it. One case per instruction. */
    private Binder nativeKernel(Slots.Step s, Facts facts) {
        int[] a = s.args();
        int out = s.out(), n = n(out);
        TensorType ot = type(out);
        return switch (s.instr()) {
            case Instr.Constant _, Reshape _ -> throw new IllegalStateException(s.instr().op() + " is a slot of the plan, not a step");
            // unary
            case Neg _ -> f32(a[0]) ? unary(Unary.NEG, a[0], out, n, 1) : null;
            case Exp _ -> f32(a[0]) ? unary(Unary.EXP, a[0], out, n, 20) : null;
            case Log _ -> f32(a[0]) ? unary(Unary.LOG, a[0], out, n, 20) : null;
            case Sqrt _ -> f32(a[0]) ? unary(Unary.SQRT, a[0], out, n, 4) : null;
            case Rsqrt _ -> f32(a[0]) ? unary(Unary.RSQRT, a[0], out, n, 4) : null;
            case Tanh _ -> f32(a[0]) ? unary(Unary.TANH, a[0], out, n, 20) : null;
            case Sigmoid _ -> f32(a[0]) ? unary(Unary.SIGMOID, a[0], out, n, 20) : null;
            case Reciprocal _ -> f32(a[0]) ? unary(Unary.RECIPROCAL, a[0], out, n, 2) : null;
            case Silu _ -> f32(a[0]) ? unary(Unary.SILU, a[0], out, n, 20) : null;
            case Relu _ -> f32(a[0]) ? unary(Unary.RELU, a[0], out, n, 1) : null;
            case Gelu _, Softcap _ -> null;
            case Instr.Discrete _ -> null;
            // binary
            case Add _ -> binary(Binary.ADD, a, out, n);
            case Sub _ -> binary(Binary.SUB, a, out, n);
            case Mul _ -> binary(Binary.MUL, a, out, n);
            case Div _ -> binary(Binary.DIV, a, out, n);
            case Maximum _ -> binary(Binary.MAXIMUM, a, out, n);
            case Greater _, Select _ -> null;
            case Swiglu _ -> f32(a[0]) ? binary(Binary.SWIGLU, a, out, n) : null;
            // contraction
            case Instr.Matmul _ -> matmul(a[0], a[1], out, false, false);
            // layout
            case Transpose(Var _, var perm) -> {
                Shape sh = type(a[0]).shape();
                long[] in = sh.strides(), src = new long[sh.rank()];
                for (int i = 0; i < sh.rank(); i++) src[i] = in[perm.at(i)];
                yield strided(a[0], out, src);
            }
            case Broadcast(Var _, var to) -> {
                Shape sh = type(a[0]).shape();
                int lead = to.rank() - sh.rank();                 // new leading axes (NumPy's rank growth): stride 0
                long[] in = sh.strides(), src = new long[to.rank()];
                for (int i = 0; i < sh.rank(); i++) src[lead + i] = sh.dim(i) == 1 ? 0 : in[i];
                yield strided(a[0], out, src);
            }
            case Slice _, Concat _, Pad _ -> null;
            // reduction
            case Sum(Var _, int axis, boolean _) -> {
                if (!f32(a[0]) && !f64(a[0])) yield null;
                Shape sh = type(a[0]).shape();
                int outer = prod(sh, 0, axis), c = (int) sh.dim(axis), inner = prod(sh, axis + 1, sh.rank());
                boolean single = f32(a[0]);
                int x = a[0];
                yield buf -> single ? () -> PlanKernels.sum(f(buf, x), f(buf, out), outer, c, inner)
                        : () -> PlanKernels.sum((double[]) buf[x], (double[]) buf[out], outer, c, inner);
            }
            // row-wise
            case LogSoftmax(Var _, int axis) -> f32(a[0]) ? softmax(a[0], out, axis, true) : null;
            case Softmax(Var _, int axis) -> f32(a[0]) ? softmax(a[0], out, axis, false) : null;
            case RmsNorm(Var _, var w, var r, double eps) -> {
                if (!f32(a[0])) yield null;
                int dd = (int) ot.shape().dim(ot.rank() - 1), rows = dd == 0 ? 0 : n / dd;
                int x = a[0], wi = w.isPresent() ? a[1] : -1, ri = r.isPresent() ? a[w.isPresent() ? 2 : 1] : -1;
                float e = (float) eps;
                yield buf -> {
                    float[] xb = f(buf, x), y = f(buf, out), wb = wi < 0 ? null : f(buf, wi), rb = ri < 0 ? null : f(buf, ri);
                    return () -> PlanKernels.rmsnorm(xb, wb, rb, y, rows, dd, e);
                };
            }
            case LayerNorm _, L2Norm _ -> null;
            case Rope(Var _, Var _, Var _, int heads, int rotary, int start) -> {
                if (!f32(a[0])) yield null;
                Shape sh = ot.shape();
                int rk = sh.rank(), t = (int) sh.dim(rk - 2), w = (int) sh.dim(rk - 1), hd = w / heads;
                int half = (rotary == 0 ? hd : rotary) / 2, batch = t == 0 || w == 0 ? 0 : n / (t * w);
                yield buf -> {
                    float[] x = f(buf, a[0]), cs = f(buf, a[1]), sn = f(buf, a[2]), y = f(buf, out);
                    return () -> PlanKernels.rope(x, cs, sn, y, batch, t, w, heads, hd, half, start);
                };
            }
            // attention
            case Attention(Var _, Var _, Var _, var sinks, var o) -> forward(a, sinks.isPresent(), o, out, -1);
            case AttentionLse(Var _, Var _, var sinks, var o) -> forward(a, sinks.isPresent(), o, -1, out);
            case AttentionExp _ -> null;
            case AttentionGrad(Var _, Var _, Var _, Var _, Var _, Var _, var o, var wrt) -> backward(a, o,
                    wrt == AttentionGrad.Wrt.Q ? out : -1, wrt == AttentionGrad.Wrt.K ? out : -1, wrt == AttentionGrad.Wrt.V ? out : -1);
            case AttentionProduct(Var _, Var _, var o, var form) -> {
                if (!f32(a[0])) yield null;
                PlanKernels.Attn g = switch (form) {
                    case QK -> attn(a[0], a[1], o);
                    case PK -> attnOfProbs(a[0], a[1], o, o.kvHeads());
                    case PQ -> attnOfProbs(a[0], a[1], o, o.heads());
                };
                yield buf -> {
                    float[] x = f(buf, a[0]), w = f(buf, a[1]), y = f(buf, out);
                    return switch (form) {
                        case QK -> () -> AttentionProducts.qk(g, x, w, y);
                        case PK -> () -> AttentionProducts.pk(g, x, w, y);
                        case PQ -> () -> AttentionProducts.pq(g, x, w, y);
                    };
                };
            }
            // indexing: a range check first; on a bad index the generic kernel raises the interpreter's trap
            case TakeAlongAxis(Var _, Var _, int axis) -> {
                if (!f32(a[0])) yield null;
                Shape sh = type(a[0]).shape();
                int outer = prod(sh, 0, axis), c = (int) sh.dim(axis), inner = prod(sh, axis + 1, sh.rank()), ni = n(a[1]);
                yield buf -> {
                    float[] v = f(buf, a[0]), y = f(buf, out);
                    long[] idx = (long[]) buf[a[1]];
                    Runnable trap = fallback(s, buf);
                    return () -> {
                        if (!PlanKernels.inRange(idx, ni, c)) trap.run();
                        PlanKernels.takeAlongAxis(v, idx, y, outer, c, inner);
                    };
                };
            }
            case Gather _ -> {
                Shape sh = type(a[0]).shape();
                long rowsV = sh.dim(0);
                int dd = (int) sh.dim(1), ni = n(a[1]);
                yield buf -> {
                    Object v = buf[a[0]], y = buf[out];
                    long[] idx = (long[]) buf[a[1]];
                    Runnable trap = fallback(s, buf);
                    return () -> {
                        if (!PlanKernels.inRange(idx, ni, rowsV)) trap.run();
                        PlanKernels.gather(v, idx, ni, dd, y);
                    };
                };
            }
            case SetRows _ -> null;
            case ScatterAdd(Var _, Var _, TensorType dest) -> {
                if (!f32(a[0])) yield null;
                int dd = (int) dest.shape().dim(1), ni = n(a[1]);
                long rowsV = dest.shape().dim(0);
                yield buf -> {
                    float[] u = f(buf, a[0]), y = f(buf, out);
                    long[] idx = (long[]) buf[a[1]];
                    Runnable trap = fallback(s, buf);
                    return () -> {
                        if (!PlanKernels.inRange(idx, ni, rowsV)) trap.run();
                        PlanKernels.scatterAdd(u, idx, ni, dd, y, n);
                    };
                };
            }
            case ScatterAlongAxis(int axis, Var _, Var _, TensorType dest) -> {
                if (!f32(a[0])) yield null;
                Shape sh = dest.shape();
                int outer = prod(sh, 0, axis), c = (int) sh.dim(axis), inner = prod(sh, axis + 1, sh.rank()), ni = n(a[1]);
                yield buf -> {
                    float[] u = f(buf, a[0]), y = f(buf, out);
                    long[] idx = (long[]) buf[a[1]];
                    Runnable trap = fallback(s, buf);
                    return () -> {
                        if (!PlanKernels.inRange(idx, ni, c)) trap.run();
                        PlanKernels.scatterAlongAxis(u, idx, y, outer, c, inner);
                    };
                };
            }
            // random: the generic kernel (a pure function of key and position)
            case RandomUniform _, RandomNormal _, Dropout _ -> null;
            // the plan's fusions
            case MatmulT(Var _, Var _, boolean ta, boolean tb) -> matmul(a[0], a[1], out, ta, tb);
            case MatmulShared(Var _, var bs, boolean ta, boolean tb) -> {
                if (!f32(out)) yield null;
                Shape os = type(out).shape(), as = type(a[0]).shape();
                int r = os.rank(), m = (int) os.dim(r - 2), k = (int) (ta ? as.dim(r - 2) : as.dim(r - 1));
                int[] ns = new int[bs.size()];
                for (int t = 0; t < ns.length; t++) ns[t] = (int) type(s.outs()[t]).shape().dim(r - 1);
                yield buf -> {
                    float[][] b = new float[ns.length][], y = new float[ns.length][];
                    for (int t = 0; t < ns.length; t++) { b[t] = f(buf, a[1 + t]); y[t] = f(buf, s.outs()[t]); }
                    float[] x = f(buf, a[0]);
                    return () -> Matmul.sgemmShared(x, ta, b, tb, y, m, k, ns);
                };
            }
            case SoftmaxGrad(Var _, Var _, boolean rowSums) -> {
                if (!f32(a[0])) yield null;
                Shape sh = type(a[0]).shape();
                int c = (int) sh.dim(sh.rank() - 1), rows = prod(sh, 0, sh.rank() - 1);
                yield buf -> {
                    float[] p = f(buf, a[0]), dp = f(buf, a[1]), ds = f(buf, out), d = rowSums ? f(buf, s.outs()[1]) : null;
                    return () -> PlanKernels.softmaxGrad(p, dp, ds, d, rows, c);
                };
            }
            case AttentionWithLse(Var _, Var _, Var _, var sinks, var o) -> forward(a, sinks.isPresent(), o, out, s.outs()[1]);
            case AttentionBackward(Var _, Var _, Var _, Var _, Var _, Var _, var o, boolean dq, boolean dk, boolean dv) -> {
                int at = 0;
                int q = dq ? s.outs()[at++] : -1, k = dk ? s.outs()[at++] : -1, v = dv ? s.outs()[at] : -1;
                yield backward(a, o, q, k, v);
            }
            case SwigluSigmoid _ -> !f32(a[0]) ? null : buf -> {
                float[] g = f(buf, a[0]), u = f(buf, a[1]), z = f(buf, out), sg = f(buf, s.outs()[1]);
                return () -> PlanKernels.range(n, 1, (from, to) -> PlanKernels.swigluSigmoidRange(g, u, z, sg, from, to));
            };
            case Elementwise _ -> {
                Fusion.Group grp = FusedGroups.of(s, ir);
                yield buf -> Fusion.bind(grp, buf);
            }
        };
    }

    private static float[] opt(Object[] buf, int slot) { return slot < 0 ? null : f(buf, slot); }

    private Binder unary(Unary u, int x, int out, int n, int cost) {
        return buf -> {
            float[] a = f(buf, x), y = f(buf, out);
            return () -> PlanKernels.range(n, cost, (from, to) -> PlanKernels.unary(u, a, y, from, to));
        };
    }

    private Binder binary(Binary op, int[] args, int out, int n) {
        if (f32(args[0])) return buf -> {
            float[] a = f(buf, args[0]), b = f(buf, args[1]), z = f(buf, out);
            return () -> PlanKernels.range(n, 1, (from, to) -> PlanKernels.binary(op, a, b, z, from, to));
        };
        if (!f64(args[0]) || op == Binary.SWIGLU) return null;
        return buf -> {
            double[] a = (double[]) buf[args[0]], b = (double[]) buf[args[1]], z = (double[]) buf[out];
            return () -> PlanKernels.binary(op, a, b, z, 0, n);
        };
    }

    /** a @ b (either read transposed) for F32 and F64; null for any other dtype. */
    private Binder matmul(int ai, int bi, int out, boolean ta, boolean tb) {
        if (!f32(out) && !f64(out)) return null;
        Shape os = type(out).shape(), as = type(ai).shape();
        int r = os.rank(), batch = prod(os, 0, r - 2), m = (int) os.dim(r - 2), nn = (int) os.dim(r - 1);
        int k = (int) (ta ? as.dim(r - 2) : as.dim(r - 1));
        if (f32(out)) return buf -> {
            float[] a = f(buf, ai), b = f(buf, bi), y = f(buf, out);
            return () -> Matmul.sgemm(a, ta, b, tb, y, batch, m, k, nn);
        };
        return buf -> {
            double[] a = (double[]) buf[ai], b = (double[]) buf[bi], y = (double[]) buf[out];
            return () -> Matmul.dgemm(a, ta, b, tb, y, batch, m, k, nn);
        };
    }

    /** FlashAttention.forward writing the output (out ≥ 0) and / or the lse (lse ≥ 0); null (the generic kernel) but for F32. */
    private Binder forward(int[] a, boolean hasSinks, AttnOpts o, int out, int lse) {
        if (!f32(a[0])) return null;
        PlanKernels.Attn g = attn(a[0], a[1], o);
        return buf -> {
            float[] q = f(buf, a[0]), k = f(buf, a[1]), sk = hasSinks ? f(buf, a[out >= 0 ? 3 : 2]) : null;
            float[] v = out >= 0 ? f(buf, a[2]) : null, y = opt(buf, out), ls = opt(buf, lse);
            return () -> FlashAttention.forward(g, q, k, v, sk, y, ls);
        };
    }

    /** FlashAttention.backward over (q, k, v, g, lse, d) writing the cotangents whose slot is ≥ 0; null but for F32. */
    private Binder backward(int[] a, AttnOpts o, int dq, int dk, int dv) {
        if (!f32(a[0])) return null;
        PlanKernels.Attn g = attn(a[0], a[1], o);
        return buf -> {
            float[] q = f(buf, a[0]), k = f(buf, a[1]), v = f(buf, a[2]), gy = f(buf, a[3]), lse = f(buf, a[4]), d = f(buf, a[5]);
            float[] oq = opt(buf, dq), ok = opt(buf, dk), ov = opt(buf, dv);
            return () -> FlashAttention.backward(g, q, k, v, gy, lse, d, oq, ok, ov);
        };
    }

    private Binder strided(int x, int out, long[] srcStride) {
        Shape os = type(out).shape();
        if (os.vol() == 0) return buf -> () -> { };
        long[] dims = os.dims();
        int r = dims.length, w = r == 0 ? 1 : (int) dims[r - 1], st = r == 0 ? 0 : (int) srcStride[r - 1];
        int[] off = PlanKernels.rowOffsets(dims, srcStride);
        return buf -> {
            Object a = buf[x], y = buf[out];
            return () -> PlanKernels.strided(a, y, off, w, st);
        };
    }

    private Binder softmax(int x, int out, int axis, boolean log) {
        Shape sh = type(x).shape();
        int outer = prod(sh, 0, axis), c = (int) sh.dim(axis), inner = prod(sh, axis + 1, sh.rank());
        return buf -> {
            float[] a = f(buf, x), y = f(buf, out);
            return () -> PlanKernels.softmax(a, y, outer, c, inner, log);
        };
    }

    private PlanKernels.Attn attn(int q, int k, AttnOpts o) {
        Shape qs = type(q).shape(), ks = type(k).shape();
        int r = qs.rank(), rows = (int) qs.dim(r - 2), l = (int) ks.dim(r - 2), hd = (int) (qs.dim(r - 1) / o.heads());
        return new PlanKernels.Attn(prod(qs, 0, r - 2), rows, l, hd, o.heads(), o.kvHeads(), o.start(), o.window(), o.chunk(),
                (float) AttentionKernels.attentionScale(DType.F32, o, hd), (float) o.softcap());
    }

    /** The geometry of a PK / PQ product: s σ++[H, rows, l], x with {@code xHeads} heads of hd in its last axis. */
    private PlanKernels.Attn attnOfProbs(int s, int x, AttnOpts o, int xHeads) {
        Shape ss = type(s).shape(), xs = type(x).shape();
        int r = xs.rank(), rows = (int) ss.dim(r - 1), l = (int) ss.dim(r), hd = (int) (xs.dim(r - 1) / xHeads);
        return new PlanKernels.Attn(prod(xs, 0, r - 2), rows, l, hd, o.heads(), o.kvHeads(), o.start(), o.window(), o.chunk(),
                (float) AttentionKernels.attentionScale(DType.F32, o, hd), (float) o.softcap());
    }

    private static int prod(Shape s, int from, int to) {
        long p = 1;
        for (int i = from; i < to; i++) p *= s.dim(i);
        return (int) p;
    }

    // ---- the generic kernel --------------------------------------------------------------------

    /**
     * The generic kernel: the operands wrapped as Tensors (copies), the reference kernel run (the
     * interpreter's bits by construction), each result copied into its slot's buffer.
     */
    private Runnable fallback(Slots.Step s, Object[] buf) {
        Instr ins = s.instr();
        List<Var> vars = ins.operands();
        int[] args = s.args(), outs = s.outs();
        return () -> {
            Map<Var, Tensor> env = new HashMap<>();
            for (int i = 0; i < args.length; i++) env.put(vars.get(i), wrap(type(args[i]), buf[args[i]]));
            List<Tensor> ts = ins instanceof Fused f ? Kernels.fused(f, env::get) : List.of(Eager.INSTANCE.apply(ins, env::get));
            for (int k = 0; k < outs.length; k++) {
                if (!ts.get(k).type().equals(type(outs[k])))
                    throw new IllegalStateException(ins.op() + " computed " + ts.get(k).type() + ", planned " + type(outs[k]));
                if (buf[outs[k]] != null) unwrap(ts.get(k), buf[outs[k]]);
            }
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
