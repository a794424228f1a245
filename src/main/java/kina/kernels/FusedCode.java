package kina.kernels;

import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_float;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_void;
import static java.lang.constant.ConstantDescs.INIT_NAME;
import static java.lang.constant.ConstantDescs.MTD_void;

import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import kina.ir.DType;

/**
 * A fused F32 group ({@link Fusion.Group}) compiled to its own loop: a hidden class, written with
 * the ClassFile API, whose one method walks the elements a vector at a time and carries every
 * value between the group's instructions in vector registers. The chunked pass of
 * {@link Fusion} streams each instruction through a 1024-element scratch register instead (load,
 * operate, store per instruction); on an AdamW-like chain of 17 instructions that costs about 3
 * ns per element against under 1 here (measured: bench/HISTORY.md).
 *
 * <p>Bits: the generated code calls the very Vector API operations of the chunked pass
 * ({@code fromArray}, {@code add}/{@code sub}/{@code mul}/{@code div}/{@code max}, {@code neg},
 * {@code lanewise(SQRT)}, {@code intoArray}) on the same operands in the same order, element by
 * element; only when values are loaded and stored moves (per vector instead of per chunk), which
 * for elementwise work at one index changes nothing. Each read of an input or output location
 * loads it from its buffer at that point, as the chunked pass does, so an output written over an
 * input (a carried value updated in place, Plan.carry) reads the same values in both. The caller
 * runs the tail (fewer than a vector's lanes) through the chunked pass.
 *
 * <p>A broadcast read in place ({@link Fusion.Leaf}) is supported when a vector of lanes starting
 * at a multiple of the lane count reads one source value ({@code inner} a multiple of the lanes:
 * one broadcast) or a contiguous run of it ({@code inner} = 1 and {@code mid} a multiple of the
 * lanes: one load at {@code i mod mid}); any other leaf leaves the group to the chunked pass.
 * Identical groups (the same code and leaves, e.g. every layer's) share one class.
 */
final class FusedCode {
    private FusedCode() {}

    /** A compiled group: elements [from, to) of the group's buffers; from and to − from multiples of the lanes. */
    interface Body {
        /**
         * @param io      the group's input buffers, then its output buffers (Group.inputs, Group.outs)
         * @param leafSrc each leaf's source buffer (Group.leaves order)
         * @param scalars each scalar leaf's value, at its leaf index (other entries unused)
         */
        void run(float[][] io, float[][] leafSrc, float[] scalars, int from, int to);
    }

    /**
     * Fewest elements for which a group is compiled: a new class runs interpreted (Vector API calls
     * unintrinsified, about 50× slower) until C2 compiles it, which a loop of a few thousand vectors
     * per run reaches within the first steps; smaller groups stay on the shared chunked pass. Not
     * final so tests can compile small groups.
     */
    static volatile int minElements = 1 << 14;

    /**
     * Most instructions compiled (about 20 bytes of bytecode each): C2 does not compile a method past
     * 8000 bytes (HugeMethodLimit), and an interpreted Vector API loop is far slower than the
     * chunked pass. The train steps' groups have at most 17.
     */
    static final int MAX_CODE = 200;

    /** Off with -Dkina.fusedCode=false (the chunked pass for every group: A/B measurements). */
    private static final boolean ENABLED = !"false".equals(System.getProperty("kina.fusedCode"));

    /**
     * The compiled groups by their code and leaf shapes: identical groups (every layer's, every plan's)
     * share one class. Bounded: past {@link #cacheLimit} entries it starts over, so a process that plans
     * many different programs (a test run, a long-lived host) does not keep every class alive; plans
     * hold their own bodies, and a hidden class no plan uses can be unloaded.
     */
    private static final Map<String, Body> CACHE = new ConcurrentHashMap<>();

    /** Most cached classes (a train step has a few dozen distinct groups); not final so tests can lower it. */
    static volatile int cacheLimit = 1024;

    /** How many compiled groups the cache holds now (it may pass the limit by one per concurrent caller). */
    static int cached() { return CACHE.size(); }

    /** Empties the cache (tests: a known starting point). */
    static void clearCache() { CACHE.clear(); }

    /** The compiled loop of {@code g}, or null where the chunked pass must run it (F64, too small, a leaf not read by whole vectors). */
    static Body of(Fusion.Group g) {
        if (!ENABLED || g.dtype() != DType.F32 || g.n() < minElements || g.code().length > MAX_CODE) return null;
        for (Fusion.Leaf lf : g.leaves())
            if (!lf.scalar() && lf.inner() % Fusion.FL != 0 && !(lf.inner() == 1 && lf.mid() % Fusion.FL == 0)) return null;
        StringBuilder key = new StringBuilder().append(g.regs()).append('/').append(g.inputs().length).append('/').append(g.outs().length);
        for (Fusion.Leaf lf : g.leaves()) key.append(lf.scalar() ? "/s" : "/" + lf.inner() + "x" + lf.mid());
        for (int[] c : g.code()) key.append(Arrays.toString(c));
        String k = key.toString();
        Body hit = CACHE.get(k);
        if (hit != null) return hit;
        if (CACHE.size() >= cacheLimit) CACHE.clear();
        return CACHE.computeIfAbsent(k, _ -> define(g));
    }

    // ---- the class --------------------------------------------------------------------------

    private static final ClassDesc FV = ClassDesc.of("jdk.incubator.vector.FloatVector"),
            VEC = ClassDesc.of("jdk.incubator.vector.Vector"),
            SPECIES = ClassDesc.of("jdk.incubator.vector.VectorSpecies"),
            OPERATORS = ClassDesc.of("jdk.incubator.vector.VectorOperators"),
            UNARY = ClassDesc.of("jdk.incubator.vector.VectorOperators$Unary"),
            FUSION = ClassDesc.of("kina.kernels.Fusion"),
            BODY = ClassDesc.of("kina.kernels.FusedCode$Body");
    private static final MethodTypeDesc FROM = MethodTypeDesc.of(FV, SPECIES, CD_float.arrayType(), CD_int),
            INTO = MethodTypeDesc.of(CD_void, CD_float.arrayType(), CD_int),
            BROADCAST = MethodTypeDesc.of(FV, SPECIES, CD_float),
            BINARY = MethodTypeDesc.of(FV, VEC),
            NULLARY = MethodTypeDesc.of(FV),
            LANEWISE = MethodTypeDesc.of(FV, UNARY),
            RUN = MethodTypeDesc.of(CD_void, CD_float.arrayType().arrayType(), CD_float.arrayType().arrayType(),
                    CD_float.arrayType(), CD_int, CD_int);

    private static Body define(Fusion.Group g) {
        byte[] bytes = ClassFile.of().build(ClassDesc.of("kina.kernels.FusedBody"), cb -> cb
                .withFlags(ClassFile.ACC_FINAL | ClassFile.ACC_SUPER)
                .withInterfaceSymbols(BODY)
                .withMethodBody(INIT_NAME, MTD_void, ClassFile.ACC_PUBLIC,
                        c -> c.aload(0).invokespecial(CD_Object, INIT_NAME, MTD_void).return_())
                .withMethodBody("run", RUN, ClassFile.ACC_PUBLIC, c -> run(c, g)));
        try {
            MethodHandles.Lookup l = MethodHandles.lookup().defineHiddenClass(bytes, true);
            return (Body) l.findConstructor(l.lookupClass(), MethodType.methodType(void.class)).invoke();
        } catch (Throwable e) {
            throw new IllegalStateException("fused group: generated class rejected: " + e, e);
        }
    }

    // locals: 0 this, 1 io, 2 leafSrc, 3 scalars, 4 from, 5 to, 6 i, then the buffers, then the registers
    private static final int IO = 1, LEAF_SRC = 2, SCALARS = 3, FROM_ARG = 4, TO = 5, I = 6;

    private static void run(CodeBuilder c, Fusion.Group g) {
        int nIo = g.inputs().length + g.outs().length, nLeaf = g.leaves().length, regs = g.regs();
        int buf0 = I + 1, src0 = buf0 + nIo, reg0 = src0 + nLeaf;
        for (int j = 0; j < nIo; j++) c.aload(IO).loadConstant(j).aaload().astore(buf0 + j);
        for (int j = 0; j < nLeaf; j++) {
            Fusion.Leaf lf = g.leaves()[j];
            if (lf.scalar()) {         // register j: the scalar in every lane, for the whole run
                c.getstatic(FUSION, "FS", SPECIES).aload(SCALARS).loadConstant(j).faload()
                        .invokestatic(FV, "broadcast", BROADCAST).astore(reg0 + j);
            } else {
                c.aload(LEAF_SRC).loadConstant(j).aaload().astore(src0 + j);
            }
        }
        Label head = c.newLabel(), end = c.newLabel();
        c.iload(FROM_ARG).istore(I);
        c.labelBinding(head);
        c.iload(I).iload(TO).if_icmpge(end);
        for (int j = 0; j < nLeaf; j++) {           // register j: this vector's values of leaf j
            Fusion.Leaf lf = g.leaves()[j];
            if (lf.scalar()) continue;
            c.getstatic(FUSION, "FS", SPECIES).aload(src0 + j).iload(I);
            if (lf.inner() > 1) c.loadConstant(lf.inner()).idiv();
            c.loadConstant(lf.mid()).irem();
            if (lf.inner() > 1) c.faload().invokestatic(FV, "broadcast", BROADCAST);
            else c.invokestatic(FV, "fromArray", FROM);
            c.astore(reg0 + j);
        }
        for (int[] k : g.code()) {
            Fusion.Code op = Fusion.Code.values()[k[0]];
            load(c, k[2], regs, reg0, buf0);
            switch (op) {
                case NEG -> c.invokevirtual(FV, "neg", NULLARY);
                case SQRT -> c.getstatic(OPERATORS, "SQRT", UNARY).invokevirtual(FV, "lanewise", LANEWISE);
                case ADD, SUB, MUL, DIV, MAX -> {
                    load(c, k[3], regs, reg0, buf0);
                    c.invokevirtual(FV, switch (op) {
                        case ADD -> "add";
                        case SUB -> "sub";
                        case MUL -> "mul";
                        case DIV -> "div";
                        case MAX -> "max";
                        case NEG, SQRT -> throw new IllegalStateException("unary " + op);
                    }, BINARY);
                }
            }
            if (k[1] < regs) c.astore(reg0 + k[1]);
            else c.aload(buf0 + k[1] - regs).iload(I).invokevirtual(FV, "intoArray", INTO);
        }
        c.iinc(I, Fusion.FL).goto_(head);
        c.labelBinding(end);
        c.return_();
    }

    /** Pushes location {@code at}: a register's vector, or the vector at i of an input/output buffer. */
    private static void load(CodeBuilder c, int at, int regs, int reg0, int buf0) {
        if (at < regs) c.aload(reg0 + at);
        else c.getstatic(FUSION, "FS", SPECIES).aload(buf0 + at - regs).iload(I).invokestatic(FV, "fromArray", FROM);
    }
}
