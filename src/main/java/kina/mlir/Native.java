package kina.mlir;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ad.TransformAd;
import kina.eval.EvalError;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;

/**
 * A program compiled to a shared object ({@link Toolchain#build}) and called through the Java FFM
 * API: Java allocates every input and output buffer once (native memory, 64-byte aligned, row-major)
 * with its memref descriptor, copies the given inputs in, calls {@code kina_call} once, and reads
 * the outputs back. Every index is checked in Java first ({@link IndexChecks}): the module's own
 * {@code cf.assert} would abort the JVM.
 *
 * <p>State carried from run to run ({@link #carry}) has the plan's contract: after each run output k
 * becomes input {@code name}, by swapping the two buffers (no copy); {@link #run} then takes only the
 * other inputs and returns only the other outputs. Runs F32, F64, I64 and I1 tensors; not thread safe.
 */
public final class Native {
    private final Emitter.Entry entry;
    private final List<IndexChecks.Check> checks;
    private final MethodHandle call;
    private final MemorySegment argv;
    private final MemorySegment[] inDesc, outDesc, inBuf, outBuf;
    private final Map<String, Integer> inputIndex = new HashMap<>();
    private Map<String, Integer> carry = Map.of();
    private Set<Integer> carriedOutputs = Set.of();
    private final Set<String> carriedSet = new HashSet<>();

    /**
     * Compiles a checked program (transform_ad first when it has handles): emitted, built (or taken
     * from the cache) and loaded.
     *
     * @throws MlirError when the lowering refuses, a tool is missing, the build fails, or indices
     *                   cannot be checked before the call
     */
    public static Native compile(Program checked) {
        Program p = TransformAd.transform(checked);
        HostDtypes.require(p.body());                 // before the index checks read the program
        List<IndexChecks.Check> checks = IndexChecks.of(p);
        Emitter.Module m = Emitter.emit(p);
        return new Native(m.entry(), checks, Toolchain.build(m));
    }

    private Native(Emitter.Entry entry, List<IndexChecks.Check> checks, Path so) {
        MALLOC.run();
        this.entry = entry;
        this.checks = checks;
        Arena arena = Arena.ofAuto();
        SymbolLookup lib = SymbolLookup.libraryLookup(so, arena);
        this.call = Linker.nativeLinker().downcallHandle(lib.find("kina_call").orElseThrow(
                () -> new MlirError(so + ": no kina_call symbol (not a kina native build)")), FunctionDescriptor.ofVoid(ADDRESS));
        int ni = entry.inputs().size(), no = entry.outputs().size();
        inDesc = new MemorySegment[ni];
        inBuf = new MemorySegment[ni];
        outDesc = new MemorySegment[no];
        outBuf = new MemorySegment[no];
        argv = arena.allocate(ADDRESS.byteSize() * Math.max(1, ni + no), 8);
        for (int i = 0; i < ni; i++) {
            TensorType t = entry.inputs().get(i).type();
            inBuf[i] = buffer(arena, t);
            inDesc[i] = descriptor(arena, inBuf[i], t);
            inputIndex.put(entry.inputs().get(i).name(), i);
        }
        for (int k = 0; k < no; k++) {
            TensorType t = entry.outputs().get(k);
            outBuf[k] = buffer(arena, t);
            outDesc[k] = descriptor(arena, outBuf[k], t);
        }
        relink();
    }

    /**
     * Once per process: glibc keeps freed memory for reuse. A call allocates and frees every
     * intermediate tensor; by default glibc maps each large block (from 128 KB, rising with use)
     * with mmap and gives trimmed memory back, so every call faulted its pages in anew (a sixth of
     * the tiny train step's time in the kernel). mmap only above 32 MB (glibc's largest threshold),
     * trim only above 1 GB. No-op where there is no mallopt.
     */
    private static final Runnable MALLOC = new Runnable() {
        private boolean done;

        @Override public synchronized void run() {
            if (done) return;
            done = true;
            Linker l = Linker.nativeLinker();
            l.defaultLookup().find("mallopt").ifPresent(f -> {
                MethodHandle h = l.downcallHandle(f, FunctionDescriptor.of(java.lang.foreign.ValueLayout.JAVA_INT,
                        java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_INT));
                try {
                    int ignored = (int) h.invokeExact(-3, 32 << 20);        // M_MMAP_THRESHOLD
                    ignored = (int) h.invokeExact(-1, 1 << 30);             // M_TRIM_THRESHOLD
                } catch (Throwable e) {
                    throw new IllegalStateException("mallopt: " + e, e);
                }
            });
        }
    };

    /** The entry's inputs (by name) and outputs. */
    public Emitter.Entry entry() { return entry; }

    /** After every run, output k (an index into the flattened result) becomes input name's value. */
    public void carry(Map<String, Integer> inputToOutput) {
        for (var e : inputToOutput.entrySet()) {
            Integer i = inputIndex.get(e.getKey());
            if (i == null) throw new MlirError("carry: " + e.getKey() + " is not an input of the program");
            int k = e.getValue();
            if (k < 0 || k >= outBuf.length || !entry.outputs().get(k).equals(entry.inputs().get(i).type()))
                throw new MlirError("carry: output " + k + " cannot become input " + e.getKey() + " (" + entry.inputs().get(i).type() + ")");
        }
        carry = new LinkedHashMap<>(inputToOutput);
        carriedOutputs = Set.copyOf(inputToOutput.values());
        carriedSet.clear();
        carriedSet.addAll(inputToOutput.keySet());
    }

    /** Sets carried input {@code name}. */
    public void set(String name, Tensor value) {
        if (!carriedSet.contains(name)) throw new MlirError("carry: " + name + " is not a carried input");
        int i = inputIndex.get(name);
        requireType(name, value, entry.inputs().get(i).type());
        write(inBuf[i], value);
    }

    /** The current value of carried input {@code name}, as a fresh Tensor. */
    public Tensor get(String name) {
        if (!carriedSet.contains(name)) throw new MlirError("carry: " + name + " is not a carried input");
        int i = inputIndex.get(name);
        return read(inBuf[i], entry.inputs().get(i).type());
    }

    /**
     * One call: the inputs (all of them, or only those not carried) to the outputs (those not
     * carried), in the flattened result's order.
     *
     * @throws EvalError for a missing or mistyped input or an index out of bounds, before the call
     */
    public List<Tensor> run(Map<String, Tensor> inputs) {
        for (String name : inputs.keySet())
            if (carriedSet.contains(name)) throw new MlirError("carry: " + name + " is carried; give it with set, not to run");
        for (int i = 0; i < inDesc.length; i++) {
            Emitter.Arg a = entry.inputs().get(i);
            if (carriedSet.contains(a.name())) continue;
            Tensor t = inputs.get(a.name());
            if (t == null) throw new EvalError("input: no payload supplied for " + a.name() + " : " + a.type());
            requireType(a.name(), t, a.type());
        }
        IndexChecks.verify(checks, inputs);
        for (int i = 0; i < inDesc.length; i++) {
            Emitter.Arg a = entry.inputs().get(i);
            if (!carriedSet.contains(a.name())) write(inBuf[i], inputs.get(a.name()));
        }
        try {
            call.invokeExact(argv);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("kina_call: " + e, e);
        }
        List<Tensor> out = new ArrayList<>();
        for (int k = 0; k < outBuf.length; k++) if (!carriedOutputs.contains(k)) out.add(read(outBuf[k], entry.outputs().get(k)));
        for (var e : carry.entrySet()) {                      // output k becomes input name: swap the buffers
            int i = inputIndex.get(e.getKey()), k = e.getValue();
            MemorySegment b = inBuf[i];
            inBuf[i] = outBuf[k];
            outBuf[k] = b;
            point(inDesc[i], inBuf[i]);
            point(outDesc[k], outBuf[k]);
        }
        return out;
    }

    private void relink() {
        for (int i = 0; i < inDesc.length; i++) argv.setAtIndex(ADDRESS, i, inDesc[i]);
        for (int k = 0; k < outDesc.length; k++) argv.setAtIndex(ADDRESS, inDesc.length + k, outDesc[k]);
    }

    private static void requireType(String name, Tensor t, TensorType want) {
        if (!t.type().equals(want)) throw new EvalError("input " + name + ": expected " + want + ", got " + t.type());
    }

    // ---- buffers and descriptors (StridedMemRefType: allocated, aligned, offset, sizes[r], strides[r])

    private static long elementBytes(DType d) {
        return switch (d) {
            case F32 -> 4;
            case F64, I64 -> 8;
            case I1 -> 1;
            case BF16, F16, F8E4M3, F8E5M2 -> throw new MlirError("the native engine runs F32, F64, I64 and I1 tensors, not " + d);
        };
    }

    private static MemorySegment buffer(Arena a, TensorType t) {
        return a.allocate(Math.max(64, elementBytes(t.dtype()) * t.shape().vol()), 64);
    }

    private static MemorySegment descriptor(Arena a, MemorySegment data, TensorType t) {
        int r = t.rank();
        MemorySegment d = a.allocate(8L * (3 + 2 * r), 8);
        point(d, data);
        d.set(JAVA_LONG, 16, 0L);
        long[] strides = t.shape().strides();
        for (int i = 0; i < r; i++) {
            d.set(JAVA_LONG, 24 + 8L * i, t.shape().dim(i));
            d.set(JAVA_LONG, 24 + 8L * (r + i), strides[i]);
        }
        return d;
    }

    private static void point(MemorySegment desc, MemorySegment data) {
        desc.set(ADDRESS, 0, data);
        desc.set(ADDRESS, 8, data);
    }

    private static void write(MemorySegment buf, Tensor t) {
        int n = t.size();
        switch (t.dtype()) {
            case F32 -> {
                double[] d = t.floats();
                float[] f = new float[n];
                for (int i = 0; i < n; i++) f[i] = (float) d[i];
                MemorySegment.copy(f, 0, buf, JAVA_FLOAT, 0, n);
            }
            case F64 -> MemorySegment.copy(t.floats(), 0, buf, JAVA_DOUBLE, 0, n);
            case I64 -> MemorySegment.copy(t.ints(), 0, buf, JAVA_LONG, 0, n);
            case I1 -> {
                long[] l = t.ints();
                for (int i = 0; i < n; i++) buf.set(JAVA_BYTE, i, (byte) (l[i] != 0 ? 1 : 0));
            }
            case BF16, F16, F8E4M3, F8E5M2 -> throw new MlirError("the native engine runs F32, F64, I64 and I1 tensors, not " + t.dtype());
        }
    }

    private static Tensor read(MemorySegment buf, TensorType t) {
        int n = Math.toIntExact(t.shape().vol());
        return switch (t.dtype()) {
            case F32 -> {
                float[] f = new float[n];
                MemorySegment.copy(buf, JAVA_FLOAT, 0, f, 0, n);
                double[] d = new double[n];
                for (int i = 0; i < n; i++) d[i] = f[i];
                yield Tensor.ofFloats(t, d);
            }
            case F64 -> {
                double[] d = new double[n];
                MemorySegment.copy(buf, JAVA_DOUBLE, 0, d, 0, n);
                yield Tensor.ofFloats(t, d);
            }
            case I64 -> {
                long[] l = new long[n];
                MemorySegment.copy(buf, JAVA_LONG, 0, l, 0, n);
                yield Tensor.ofInts(t, l);
            }
            case I1 -> {
                long[] l = new long[n];
                for (int i = 0; i < n; i++) l[i] = buf.get(JAVA_BYTE, i) & 1;
                yield Tensor.ofInts(t, l);
            }
            case BF16, F16, F8E4M3, F8E5M2 -> throw new MlirError("the native engine runs F32, F64, I64 and I1 tensors, not " + t.dtype());
        };
    }
}
