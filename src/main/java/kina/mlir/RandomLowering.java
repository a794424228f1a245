package kina.mlir;

import java.util.List;
import java.util.Set;
import kina.eval.Philox;
import kina.eval.RandomKernels;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.mlir.Mlir.AffineMap;
import kina.mlir.Mlir.Body;
import kina.mlir.Mlir.Operand;
import kina.mlir.Mlir.Scalar;
import kina.mlir.Mlir.Val;

/**
 * The random family of one func: each a {@code linalg.generic} whose body computes Philox-4x32-10
 * ({@link Philox}) at the element's row-major position, from {@code linalg.index}, in i64
 * arithmetic on 32-bit words (a 32×32-bit product fits an i64; its high and low words are a shift
 * and a mask). The words and the uniforms are integers and one exact conversion, so
 * random_uniform and dropout's mask are the interpreter's bits; random_normal's log, sqrt and cos
 * are MLIR's (within rounding).
 */
final class RandomLowering {
    private static final long MASK = 0xFFFF_FFFFL;

    private final Lowering l;
    private final Mlir.Fn f;

    RandomLowering(Lowering l) {
        this.l = l;
        this.f = l.f;
    }

    /** The key's elements K and S (0 for a one-element key), read before the generic. */
    private Scalar[] key(Val key) {
        Scalar k = f.extract(key, List.of(f.index(0)), "key");
        Scalar s = key.type().shape().dim(0) == 2 ? f.extract(key, List.of(f.index(1)), "stream") : null;
        return new Scalar[] {k, s};
    }

    /** {@code key.random_uniform(T)}. */
    Val uniform(String out, Val key, TensorType t) {
        Scalar[] k = key(key);
        return generate(out, t, b -> uniform(b, philox(b, t.shape(), k), t.dtype() == DType.F32, t.dtype()));
    }

    /** {@code key.random_normal(T)}: Box–Muller in f64, then truncated to f32 for F32. */
    Val normal(String out, Val key, TensorType t) {
        Scalar[] k = key(key);
        return generate(out, t, b -> {
            Scalar[] w = philox(b, t.shape(), k);
            Scalar u1 = uniform64(b, w[0], w[1], DType.F64), u2 = uniform64(b, w[2], w[3], DType.F64);
            Scalar radius = b.math("sqrt", b.mul(b.cst(DType.F64, -2), b.math("log", b.subf(b.cst(DType.F64, 1), u1))));
            Scalar z = b.mul(radius, b.math("cos", b.mul(b.cst(DType.F64, Philox.TWO_PI), u2)));
            return t.dtype() == DType.F32 ? b.convert("truncf", z, DType.F32) : z;
        });
    }

    /** {@code x.dropout(key, p=P)}: x·(s where the uniform (exact in f64) ≥ P, else +0.0). */
    Val dropout(String out, Val x, Val key, double p) {
        Scalar[] k = key(key);
        TensorType t = x.type();
        DType d = t.dtype();
        int r = t.rank();
        return l.generic(out, r, Set.of(), List.of(new Operand(x, AffineMap.identity(r))),
                List.of(new Operand(l.dest(out, t), AffineMap.identity(r))), (b, a) -> {
                    Scalar u = uniform(b, philox(b, t.shape(), k), d == DType.F32, DType.F64);
                    Scalar keep = b.cmpf("oge", u, b.cst(DType.F64, p));
                    Scalar m = b.select(keep, b.cst(d, RandomKernels.scale(d, p)), b.cst(d, 0.0));
                    return List.of(b.mul(a.getFirst(), m));
                });
    }

    /** An all-parallel generic over t with no inputs, each element {@code element}. */
    private Val generate(String out, TensorType t, java.util.function.Function<Body, Scalar> element) {
        int r = t.rank();
        return l.generic(out, r, Set.of(), List.of(), List.of(new Operand(l.dest(out, t), AffineMap.identity(r))),
                (b, a) -> List.of(element.apply(b)));
    }

    /** The uniform of a block as dtype {@code as}: F32's 24 bits or F64's 53 ({@code single}), exact either way. */
    private static Scalar uniform(Body b, Scalar[] w, boolean single, DType as) {
        if (!single) return uniform64(b, w[0], w[1], as);
        Scalar m = b.convert("sitofp", b.arith("shrui", w[0], b.cst(DType.I64, 8)), as);
        return b.mul(m, b.cst(as, Philox.ULP24));
    }

    /** The top 53 bits of hi·2³² + lo, times 2⁻⁵³. */
    private static Scalar uniform64(Body b, Scalar hi, Scalar lo, DType as) {
        Scalar bits = b.arith("ori", b.arith("shli", hi, b.cst(DType.I64, 21)), b.arith("shrui", lo, b.cst(DType.I64, 11)));
        return b.mul(b.convert("sitofp", bits, as), b.cst(as, Philox.ULP53));
    }

    /** The four 32-bit words (i64 scalars) of the element at the body's position under key k. */
    private static Scalar[] philox(Body b, Shape s, Scalar[] k) {
        Scalar mask = b.cst(DType.I64, MASK), sh = b.cst(DType.I64, 32);
        Scalar n = b.indexCast(position(b, s));
        Scalar c0 = b.arith("andi", n, mask), c1 = b.arith("shrui", n, sh);
        Scalar c2 = k[1] == null ? b.cst(DType.I64, 0) : b.arith("andi", k[1], mask);
        Scalar c3 = k[1] == null ? b.cst(DType.I64, 0) : b.arith("shrui", k[1], sh);
        Scalar k0 = b.arith("andi", k[0], mask), k1 = b.arith("shrui", k[0], sh);
        Scalar m0 = b.cst(DType.I64, Philox.M0 & MASK), m1 = b.cst(DType.I64, Philox.M1 & MASK);
        for (int r = 0; r < Philox.ROUNDS; r++) {
            if (r > 0) {
                k0 = b.arith("andi", b.add(k0, b.cst(DType.I64, Philox.W0 & MASK)), mask);
                k1 = b.arith("andi", b.add(k1, b.cst(DType.I64, Philox.W1 & MASK)), mask);
            }
            Scalar p0 = b.mul(m0, c0), p1 = b.mul(m1, c2);
            Scalar n0 = b.arith("xori", b.arith("xori", b.arith("shrui", p1, sh), c1), k0);
            Scalar n2 = b.arith("xori", b.arith("xori", b.arith("shrui", p0, sh), c3), k1);
            c1 = b.arith("andi", p1, mask);
            c3 = b.arith("andi", p0, mask);
            c0 = n0;
            c2 = n2;
        }
        return new Scalar[] {c0, c1, c2, c3};
    }

    /** Σᵢ linalg.index(i)·strideᵢ: the row-major position of the body's element in shape s, as an index. */
    private static Scalar position(Body b, Shape s) {
        long[] stride = s.strides();
        Scalar n = b.cst(0);
        for (int i = 0; i < s.rank(); i++) n = b.add(n, stride[i] == 1 ? b.index(i) : b.mul(b.index(i), b.cst(stride[i])));
        return n;
    }
}
