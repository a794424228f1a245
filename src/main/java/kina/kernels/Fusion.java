package kina.kernels;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import kina.ir.DType;
import kina.ir.Shape;

/**
 * The kernel of an {@code %elementwise} fusion: its body, compiled by the plan to a {@link Group}
 * of instructions over registers and buffer slots, run as one pass over the elements. Values the body makes and reads live in small scratch
 * registers, never in arena buffers; a broadcast in the body whose source is a scalar or a block
 * of contiguous axes (e.g. {@code [.., 1]}) is read in place from its source (a scalar once, as a
 * constant register), and so is an input that is a uniform fill constant.
 *
 * <p>Bits: each instruction of the pass is the very operation of the let it comes from (Java
 * float or double arithmetic, lanewise add/sub/mul/div/sqrt/neg/max, all exact IEEE operations
 * rounded once) on the same operands in the same order; nothing is reassociated or contracted.
 *
 * <p>Running: an F32 group of at least {@link FusedCode#minElements} elements whose broadcasts are
 * read by whole vectors runs as its own compiled loop ({@link FusedCode}: values stay in vector
 * registers between instructions); any other group, and the lane tail, runs the chunked pass here
 * (each instruction over a 1024-element scratch register in turn).
 */
public final class Fusion {
    private Fusion() {}

    /** Elements per inner chunk: a group's registers are this long (L1/L2; 1024 beat 256 and 2048 on an AdamW-like pass). */
    static final int CH = 1024;

    /** The fused instructions: each the very operation of the IR instruction it stands for. */
    public enum Code { NEG, SQRT, ADD, SUB, MUL, DIV, MAX }

    /** A broadcast read in place: element i of the output is {@code src[(i / inner) % mid]}. */
    public record Leaf(int src, int inner, int mid) {
        /** Whether every element reads one value (mid = 1). */
        public boolean scalar() { return mid == 1; }
    }

    /**
     * One fused pass over {@code n} elements of {@code dtype}. Locations: registers [0, regs),
     * then the input slots (read at the chunk's offset), then the output slots (written there).
     * {@code code[k] = {opcode, dst, a, b}} (b unused by unary ops); register j holds
     * {@code leaves[j]} (a scalar filled once per pass, else loaded per chunk).
     */
    public record Group(DType dtype, int n, int steps, int regs, int[] inputs, int[] outs, Leaf[] leaves,
                 int[][] code) {}

    /** Whether a broadcast from shape s to t can be read in place: {@link #leaf(int, Shape, Shape)} is not null. */
    public static boolean readsInPlace(Shape s, Shape t) { return leaf(-1, s, t) != null; }

    /**
     * The in-place reading of a broadcast from shape s to t of the value in slot {@code src}, or
     * null where its expanded axes are not outside one contiguous block (or the rank grows).
     */
    public static Leaf leaf(int src, Shape s, Shape t) {
        if (s.rank() != t.rank()) return null;                // a rank-growing broadcast runs as its own step
        int r = t.rank(), lo = -1, hi = -1;
        for (int k = 0; k < r; k++) if (s.dim(k) == t.dim(k) && t.dim(k) > 1) { if (lo < 0) lo = k; hi = k + 1; }
        if (lo < 0) return new Leaf(src, 1, 1);
        for (int k = lo; k < hi; k++) if (s.dim(k) != t.dim(k)) return null;
        long inner = 1, mid = 1;
        for (int k = hi; k < r; k++) inner *= t.dim(k);
        for (int k = lo; k < hi; k++) mid *= t.dim(k);
        return new Leaf(src, (int) inner, (int) mid);
    }

    // ---- the pass ------------------------------------------------------------------------------

    /** The lanes of every fused F32 loop (package-private: {@link FusedCode}'s classes read it). */
    static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    static final int FL = FS.length();
    private static final Code[] CODES = Code.values();

    /** The group's pass over {@code buf[slot]} (views share their root's buffer), split over element ranges. */
    public static Runnable bind(Group g, Object[] buf) {
        int nIn = g.inputs().length, nOut = g.outs().length, nLeaf = g.leaves().length;
        Object[] io = new Object[nIn + nOut], leafBuf = new Object[nLeaf];
        for (int j = 0; j < nIn; j++) io[j] = buf[g.inputs()[j]];
        for (int j = 0; j < nOut; j++) io[nIn + j] = buf[g.outs()[j]];
        for (int j = 0; j < nLeaf; j++) leafBuf[j] = buf[g.leaves()[j].src()];
        int n = g.n(), cost = Math.max(1, g.steps());
        if (n == 0) return () -> { };
        if (g.dtype() == DType.F32) {
            int[] side = scalarSides(g);
            FusedCode.Body body = FusedCode.of(g);
            if (body == null) return () -> PlanKernels.range(n, cost, (from, to) -> passF32(g, io, leafBuf, side, from, to));
            float[][] fio = new float[io.length][], fsrc = new float[nLeaf][];
            for (int j = 0; j < io.length; j++) fio[j] = (float[]) io[j];
            for (int j = 0; j < nLeaf; j++) fsrc[j] = (float[]) leafBuf[j];
            return () -> PlanKernels.range(n, cost, (from, to) -> {
                if (from % FL != 0) { passF32(g, io, leafBuf, side, from, to); return; }
                Scratch sc = Scratch.get();                 // read per run: a scalar input may change between steps
                float[] scalars = sc.leafScalars = Scratch.atLeast(sc.leafScalars, nLeaf);
                for (int j = 0; j < nLeaf; j++) scalars[j] = g.leaves()[j].scalar() ? fsrc[j][0] : 0f;
                int whole = from + (to - from) / FL * FL;
                body.run(fio, fsrc, scalars, from, whole);
                if (whole < to) passF32(g, io, leafBuf, side, whole, to);
            });
        }
        return () -> PlanKernels.range(n, cost, (from, to) -> passF64(g, io, leafBuf, from, to));
    }

    private static void passF32(Group g, Object[] io, Object[] leafBuf, int[] scalarSide, int from, int to) {
        int regs = g.regs(), len = Math.min(CH, to - from);
        Scratch sc = Scratch.get();                  // per-thread registers and operand tables: no garbage per pass
        if (sc.fusedArrays.length < regs + io.length) sc.fusedArrays = new float[regs + io.length][];
        float[][] arr = sc.fusedArrays;
        int[] off = sc.fusedOffsets = Scratch.atLeast(sc.fusedOffsets, regs + io.length);
        Arrays.fill(off, 0, regs, 0);                // registers are read from 0; operands at the chunk's offset (below)
        float[][] pool = sc.regs;
        if (pool.length < regs) pool = sc.regs = Arrays.copyOf(pool, regs);
        for (int r = 0; r < regs; r++) {
            if (pool[r] == null || pool[r].length < len) pool[r] = new float[CH];
            arr[r] = pool[r];
        }
        for (int j = 0; j < io.length; j++) arr[regs + j] = (float[]) io[j];
        Leaf[] leaves = g.leaves();
        float[] sv = sc.regScalars = Scratch.atLeast(sc.regScalars, regs);
        Arrays.fill(sv, 0, regs, 0f);
        for (int j = 0; j < leaves.length; j++) if (leaves[j].scalar()) {
            sv[j] = ((float[]) leafBuf[j])[0];
            Arrays.fill(arr[j], sv[j]);
        }
        for (int c = from; c < to; c += CH) {
            int l = Math.min(CH, to - c);
            for (int j = regs; j < regs + io.length; j++) off[j] = c;    // arr and off are pooled: longer than this group's
            for (int j = 0; j < leaves.length; j++)
                if (!leaves[j].scalar()) expand(leaves[j], leafBuf[j], arr[j], c, l);
            int[][] code = g.code();
            for (int ki = 0; ki < code.length; ki++) {
                int[] k = code[ki];
                float[] z = arr[k[1]], x = arr[k[2]], y = arr[k[3]];
                int zo = off[k[1]], xo = off[k[2]], yo = off[k[3]];
                int side = scalarSide[ki];
                if (side > 0) { binaryS(k[0], side == 1 ? x : y, side == 1 ? xo : yo, sv[k[side == 1 ? 3 : 2]], side == 1, z, zo, l); continue; }
                switch (CODES[k[0]]) {
                    case NEG -> neg(x, xo, z, zo, l);
                    case SQRT -> sqrt(x, xo, z, zo, l);
                    case ADD -> add(x, xo, y, yo, z, zo, l);
                    case SUB -> sub(x, xo, y, yo, z, zo, l);
                    case MUL -> mul(x, xo, y, yo, z, zo, l);
                    case DIV -> div(x, xo, y, yo, z, zo, l);
                    case MAX -> max(x, xo, y, yo, z, zo, l);
                }
            }
        }
        Arrays.fill(arr, regs, regs + io.length, null);   // the pool keeps no arena buffer alive past the pass
    }

    // Each: the vector loop over whole lanes, then the scalar tail with the same operation
    // (as PlanKernels.unary/binary: float arithmetic, (float) StrictMath.sqrt, Math.max).

    private static void neg(float[] x, int xo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).neg().intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = -x[xo + i];
    }

    private static void sqrt(float[] x, int xo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).lanewise(VectorOperators.SQRT).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = (float) StrictMath.sqrt(x[xo + i]);
    }

    private static void add(float[] x, int xo, float[] y, int yo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).add(FloatVector.fromArray(FS, y, yo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] + y[yo + i];
    }

    private static void sub(float[] x, int xo, float[] y, int yo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).sub(FloatVector.fromArray(FS, y, yo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] - y[yo + i];
    }

    private static void mul(float[] x, int xo, float[] y, int yo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).mul(FloatVector.fromArray(FS, y, yo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] * y[yo + i];
    }

    private static void div(float[] x, int xo, float[] y, int yo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).div(FloatVector.fromArray(FS, y, yo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] / y[yo + i];
    }

    private static void max(float[] x, int xo, float[] y, int yo, float[] z, int zo, int l) {
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).max(FloatVector.fromArray(FS, y, yo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = Math.max(x[xo + i], y[yo + i]);
    }

    /**
     * Per instruction: 1 where the right operand (only) is a scalar leaf, 2 where the left one
     * (only) is, else 0; such steps broadcast the scalar in the vector loop instead of reading its
     * filled register (one load stream less, same operation on the same operands).
     */
    private static int[] scalarSides(Group g) {
        boolean[] scalarReg = new boolean[g.regs()];
        for (int j = 0; j < g.leaves().length; j++) if (g.leaves()[j].scalar()) scalarReg[j] = true;
        int[][] code = g.code();
        int[] side = new int[code.length];
        for (int k = 0; k < code.length; k++) {
            Code c = CODES[code[k][0]];
            if (c == Code.NEG || c == Code.SQRT) continue;
            boolean xs = code[k][2] < g.regs() && scalarReg[code[k][2]], ys = code[k][3] < g.regs() && scalarReg[code[k][3]];
            side[k] = ys && !xs ? 1 : xs && !ys ? 2 : 0;
        }
        return side;
    }

    /** z = x op s (right: true) or s op x (right: false) for a binary op; as add/sub/mul/div/max. */
    private static void binaryS(int op, float[] x, int xo, float s, boolean right, float[] z, int zo, int l) {
        switch (CODES[op]) {
            case ADD -> { if (right) addS(x, xo, s, z, zo, l); else sAdd(s, x, xo, z, zo, l); }
            case SUB -> { if (right) subS(x, xo, s, z, zo, l); else sSub(s, x, xo, z, zo, l); }
            case MUL -> { if (right) mulS(x, xo, s, z, zo, l); else sMul(s, x, xo, z, zo, l); }
            case DIV -> { if (right) divS(x, xo, s, z, zo, l); else sDiv(s, x, xo, z, zo, l); }
            case MAX -> { if (right) maxS(x, xo, s, z, zo, l); else sMax(s, x, xo, z, zo, l); }
            case NEG, SQRT -> throw new IllegalStateException("unary " + CODES[op]);
        }
    }

    private static void addS(float[] x, int xo, float s, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).add(sv).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] + s;
    }

    private static void sAdd(float s, float[] x, int xo, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) sv.add(FloatVector.fromArray(FS, x, xo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = s + x[xo + i];
    }

    private static void subS(float[] x, int xo, float s, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).sub(sv).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] - s;
    }

    private static void sSub(float s, float[] x, int xo, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) sv.sub(FloatVector.fromArray(FS, x, xo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = s - x[xo + i];
    }

    private static void mulS(float[] x, int xo, float s, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).mul(sv).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] * s;
    }

    private static void sMul(float s, float[] x, int xo, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) sv.mul(FloatVector.fromArray(FS, x, xo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = s * x[xo + i];
    }

    private static void divS(float[] x, int xo, float s, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).div(sv).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = x[xo + i] / s;
    }

    private static void sDiv(float s, float[] x, int xo, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) sv.div(FloatVector.fromArray(FS, x, xo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = s / x[xo + i];
    }

    private static void maxS(float[] x, int xo, float s, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) FloatVector.fromArray(FS, x, xo + i).max(sv).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = Math.max(x[xo + i], s);
    }

    private static void sMax(float s, float[] x, int xo, float[] z, int zo, int l) {
        FloatVector sv = FloatVector.broadcast(FS, s);
        int i = 0;
        for (int ub = FS.loopBound(l); i < ub; i += FL) sv.max(FloatVector.fromArray(FS, x, xo + i)).intoArray(z, zo + i);
        for (; i < l; i++) z[zo + i] = Math.max(s, x[xo + i]);
    }

    /**
     * Elements c … c + l − 1 of a broadcast read in place into register d (float[] or double[], as
     * src): runs of one source element (Arrays.fill) or of consecutive ones (arraycopy), no arithmetic.
     */
    private static void expand(Leaf lf, Object src, Object d, int c, int l) {
        int inner = lf.inner(), mid = lf.mid();
        for (int e = 0; e < l; ) {
            int q = (c + e) / inner, at = q % mid;
            if (inner > 1) {
                int end = Math.min(l, (q + 1) * inner - c);
                if (d instanceof float[] f) Arrays.fill(f, e, end, ((float[]) src)[at]);
                else Arrays.fill((double[]) d, e, end, ((double[]) src)[at]);
                e = end;
            } else {
                int k = Math.min(l - e, mid - at);
                System.arraycopy(src, at, d, e, k);
                e += k;
            }
        }
    }

    /** The F64 twin of {@link #passF32}: double arithmetic, StrictMath.sqrt, Math.max, as Kernels. */
    private static void passF64(Group g, Object[] io, Object[] leafBuf, int from, int to) {
        int regs = g.regs(), len = Math.min(CH, to - from);
        double[][] arr = new double[regs + io.length][];
        int[] off = new int[arr.length];
        for (int r = 0; r < regs; r++) arr[r] = new double[len];
        for (int j = 0; j < io.length; j++) arr[regs + j] = (double[]) io[j];
        Leaf[] leaves = g.leaves();
        for (int j = 0; j < leaves.length; j++) if (leaves[j].scalar()) Arrays.fill(arr[j], ((double[]) leafBuf[j])[0]);
        for (int c = from; c < to; c += CH) {
            int l = Math.min(CH, to - c);
            for (int j = regs; j < arr.length; j++) off[j] = c;
            for (int j = 0; j < leaves.length; j++)
                if (!leaves[j].scalar()) expand(leaves[j], leafBuf[j], arr[j], c, l);
            for (int[] k : g.code()) {
                double[] z = arr[k[1]], x = arr[k[2]], y = arr[k[3]];
                int zo = off[k[1]], xo = off[k[2]], yo = off[k[3]];
                switch (CODES[k[0]]) {
                    case NEG -> { for (int i = 0; i < l; i++) z[zo + i] = -x[xo + i]; }
                    case SQRT -> { for (int i = 0; i < l; i++) z[zo + i] = StrictMath.sqrt(x[xo + i]); }
                    case ADD -> { for (int i = 0; i < l; i++) z[zo + i] = x[xo + i] + y[yo + i]; }
                    case SUB -> { for (int i = 0; i < l; i++) z[zo + i] = x[xo + i] - y[yo + i]; }
                    case MUL -> { for (int i = 0; i < l; i++) z[zo + i] = x[xo + i] * y[yo + i]; }
                    case DIV -> { for (int i = 0; i < l; i++) z[zo + i] = x[xo + i] / y[yo + i]; }
                    case MAX -> { for (int i = 0; i < l; i++) z[zo + i] = Math.max(x[xo + i], y[yo + i]); }
                }
            }
        }
    }
}
