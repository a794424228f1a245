package kina.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.eval.EvalError;
import kina.eval.Tensor;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.kernels.Fusion;
import kina.kernels.VectorApi;

/**
 * The compiled plan of a checked, transformed program: one straight-line schedule of
 * kernels over numbered slots, run over buffers from an arena allocated once per Plan and reused
 * by every run. Its outputs equal the interpreter's bit for bit. The stages, each in its file:
 * {@link Inline} (calls inlined, tuples resolved: one flat let-chain), {@link Rewrites} (the
 * rewrite table: dead lets dropped, the plan's fusions introduced as IR-internal instructions;
 * {@link #program} is the result, which {@code kina plan} prints), {@link Slots} (values as
 * slots, reshapes as views, constants computed once), {@link Schedule} (liveness and the arena),
 * {@link Bind} (each step's kernel), running (here) and {@link Profile}. Carried values
 * ({@link #carry}) live outside the arena, updated in place where that is safe.
 *
 * <p>{@link #run} is not reentrant (one arena): calls are serialised.
 */
public final class Plan {
    private final Program program;
    private final Map<String, Integer> rewrites;
    private final Slots ir;
    private final Bind bind;
    private final Bind.Facts[] facts;
    private final Fusion.Group[] groups;          // the pass of each elementwise step (null for others)
    private Runnable[] kernels;                   // bound on the first run (see materialize)
    private Object[] slotBuf;
    private Schedule.Layout layout;
    private boolean[] inPlaceSlots;               // slots held in a carried value's own buffer (Carry.inPlace), not the arena
    private final long slotBytes;
    private boolean profile;
    private int runs;                             // runs profiled since profile(true)
    private final long[] nanos;
    private Carry carry;                          // null: nothing carried (see carry)

    private Plan(Program checkedTransformed, Set<String> rules) {
        VectorApi.require();                      // the kernels' one-line refusal, before any of them is loaded
        Inline.Flat flat = Inline.of(checkedTransformed);
        Rewrites.Result r = Rewrites.rewrite(flat.program(), rules);
        this.program = r.program();
        this.rewrites = r.counts();
        this.ir = Slots.of(program, flat.source());
        this.bind = new Bind(ir);
        boolean[] unread = Schedule.unread(ir);
        int n = ir.steps.size();
        this.facts = new Bind.Facts[n];
        this.groups = new Fusion.Group[n];
        for (int i = 0; i < n; i++) {
            facts[i] = new Bind.Facts(unread);
            if (ir.steps.get(i).instr() instanceof Instr.Elementwise) groups[i] = FusedGroups.of(ir.steps.get(i), ir);
        }
        long slotSum = 0;
        for (Slots.Slot sl : ir.slots)
            if (sl.origin() == Slots.Origin.STEP || sl.origin() == Slots.Origin.INPUT) slotSum += Schedule.bytes(sl.type());
        this.slotBytes = slotSum;
        this.nanos = new long[n];
        relayout(new boolean[ir.slots.size()]);
    }

    /** A new layout leaving {@code inPlace} out; drops the bound kernels and buffers (bound again on the next run). */
    private void relayout(boolean[] inPlace) {
        this.layout = Schedule.layout(ir, inPlace);
        this.inPlaceSlots = inPlace;
        this.kernels = null;
        this.slotBuf = null;
    }

    // ---- compiling ------------------------------------------------------------------------------

    /**
     * Compiles a checked, transformed program. Throws {@link PlanError} (one line, naming the let)
     * for what it cannot plan: a remaining {@code handle}, a fn result, an unchecked program; and the
     * interpreter's EvalError for @device values and dtypes the host does not run.
     */
    public static Plan compile(Program checkedTransformed) { return new Plan(checkedTransformed, Rewrites.ALL); }

    /** {@link #compile} with only the rewrite rules named in {@code rules} (tests compare plans with and without each). */
    static Plan compile(Program checkedTransformed, Set<String> rules) { return new Plan(checkedTransformed, rules); }

    /** Every rule but the row passes and elementwise chains: a plan without those fusions, to compare against (tests). */
    static final Set<String> UNFUSED = Set.of("dead", "matmul_t", "attention_with_lse", "attention_backward", "swiglu_sigmoid", "matmul_shared");

    /** Every rule but those that share one kernel's work among values (tests). */
    static final Set<String> UNSHARED = Set.of("dead", "matmul_t", "softmax_grad", "elementwise");

    /** The rules of the rewrite table, in order, with what each recognises (for {@code kina plan --rules}). */
    public static Map<String, String> rules() {
        Map<String, String> m = new LinkedHashMap<>();
        for (Rewrites.Rule r : Rewrites.TABLE) m.put(r.name(), r.recognises());
        return m;
    }

    /**
     * The program the plan runs: the flat let-chain after the rewrite table, its fusions as
     * IR-internal instructions ({@code %elementwise}, {@code %matmul_shared}, …). The interpreter
     * runs it to the same bits as the program compiled.
     */
    public Program program() { return program; }

    /** How many fusions each rule of the rewrite table made (for "dead": lets dropped), in table order. */
    public Map<String, Integer> rewrites() { return rewrites; }

    // ---- running --------------------------------------------------------------------------------

    /** Allocates the arena and constants and binds every kernel to its buffers: once, on the first run. */
    private void materialize() {
        int nSlots = ir.slots.size(), n = ir.steps.size();
        List<Object> buffers = layout.arena().allocate();
        Object[] bufs = new Object[nSlots];
        Map<String, Object> fills = new HashMap<>();
        for (int s = 0; s < nSlots; s++) {
            Slots.Slot sl = ir.slots.get(s);
            switch (sl.origin()) {
                case INPUT, STEP -> bufs[s] = inPlaceSlots[s] ? carry.inPlaceBuffer(s) : layout.bufOf()[s] >= 0 ? buffers.get(layout.bufOf()[s]) : null;
                case CONST -> {
                    Slots.Const c = ir.constants.get(s);
                    int size = (int) sl.type().shape().vol();
                    String key = fillKey(sl, c);              // fills of one type and value share one buffer (kernels never write constants)
                    if (key != null && fills.containsKey(key)) { bufs[s] = fills.get(key); continue; }
                    Object b = Schedule.Kind.of(sl.type().dtype()).allocate(Math.max(1, size));
                    if (key != null) fills.put(key, b);
                    if (c.payload() == null) {
                        switch (b) {                          // the value Kernels.fill would hold
                            case float[] f -> Arrays.fill(f, (float) c.fill());
                            case double[] d -> Arrays.fill(d, c.fill());
                            case long[] l -> Arrays.fill(l, (long) c.fill());
                            default -> throw new IllegalStateException("not a buffer");
                        }
                    } else {
                        Bind.unwrap(c.tensor(), b);
                    }
                    bufs[s] = b;
                }
                case VIEW -> { }
            }
        }
        for (int s = 0; s < nSlots; s++) if (ir.slots.get(s).origin() == Slots.Origin.VIEW) bufs[s] = bufs[ir.root(s)];
        Runnable[] ks = new Runnable[n];
        for (int i = 0; i < n; i++)
            ks[i] = groups[i] != null ? Fusion.bind(groups[i], bufs) : bind.kernel(ir.steps.get(i), facts[i], bufs);
        this.slotBuf = bufs;
        this.kernels = ks;
    }

    /**
     * Runs the plan on {@code inputs} (by Input let name; each must have the declared type; carried
     * inputs, see {@link #carry}, come from the plan and must not be given) and returns the flattened
     * result, each a fresh Tensor, without the carried outputs. Errors are the interpreter's
     * EvalErrors, located at the let.
     */
    public synchronized List<Tensor> run(Map<String, Tensor> inputs) {
        if (kernels == null) materialize();
        Carry cs = carry;
        for (int s : ir.inputs.values()) {
            Slots.Slot sl = ir.slots.get(s);
            Let let = ir.inputLets.get(s);
            Tensor x = inputs.get(sl.name());
            if (cs != null && cs.input(s)) {
                if (x != null) throw new EvalError("input: " + sl.name() + " is carried by the plan; give it with Plan.set, not to run").at(let);
                continue;
            }
            checkInput(x, sl.type(), let);
            Object b = slotBuf[s];
            if (b == null) continue;
            switch (b) {
                case float[] f -> { double[] d = x.floats(); for (int i = 0; i < d.length; i++) f[i] = (float) d[i]; }
                case double[] d -> System.arraycopy(x.floats(), 0, d, 0, x.size());
                case long[] l -> System.arraycopy(x.ints(), 0, l, 0, x.size());
                default -> throw new IllegalStateException("not a buffer");
            }
        }
        if (cs != null) cs.copyIn(slotBuf, ir);
        if (profile) runs++;
        for (int i = 0; i < kernels.length; i++) {
            try {
                if (profile) {
                    long t0 = System.nanoTime();
                    kernels[i].run();
                    nanos[i] += System.nanoTime() - t0;
                } else {
                    kernels[i].run();
                }
            } catch (EvalError e) {
                throw e.at(ir.steps.get(i).source());
            }
        }
        if (cs != null) cs.copyOut(slotBuf);
        List<Tensor> out = new ArrayList<>(ir.outputs.size());
        for (int k = 0; k < ir.outputs.size(); k++) {
            if (cs != null && cs.output(k)) continue;
            int o = ir.outputs.get(k);
            Slots.Slot sl = ir.slots.get(o);
            out.add(sl.origin() == Slots.Origin.CONST ? ir.constants.get(o).tensor() : Bind.wrap(sl.type(), slotBuf[o]));
        }
        return out;
    }

    /** An input's payload: present and of its declared type, else an EvalError at its let (as the interpreter's). */
    static void checkInput(Tensor x, TensorType t, Let let) {
        if (x == null) throw new EvalError("input: no payload supplied for " + t).at(let);
        if (!x.type().equals(t)) throw new EvalError("input: expected " + t + ", got " + x.type()).at(let);
    }

    /** The sharing key of a fill constant (its type and value bits), or null for a literal. */
    private static String fillKey(Slots.Slot sl, Slots.Const c) {
        return c.payload() == null ? sl.type() + "=" + Double.doubleToRawLongBits(c.fill()) : null;
    }

    // ---- carried values -------------------------------------------------------------------------

    /**
     * Carries state from run to run: after every run that completes, output {@code k} becomes input
     * {@code name}'s value for the next run ({@code inputToOutput}: input name → index into
     * {@link #outputs}; the types must be equal; one output may feed several inputs). The values stay
     * in buffers of the plan (float[] for F32, as the kernels read them) between runs: no Tensor is
     * made or converted per run. A carried input starts without a value: give it one with
     * {@link #set}; read it with {@link #get}. {@link #run} then takes only the inputs that are not
     * carried and returns only the outputs that are not carried. A run that throws leaves the
     * carried values as they were. Replaces any earlier designation (and its values); an empty map
     * turns carrying off. Throws PlanError (one line) for an unknown input, an output index out of
     * range or differing types.
     */
    public synchronized void carry(Map<String, Integer> inputToOutput) {
        carry = inputToOutput.isEmpty() ? null : new Carry(ir, inputToOutput, new InPlace()::allows);
        boolean[] inPlace = new boolean[ir.slots.size()];
        if (carry != null) carry.inPlaceSlots(inPlace);
        relayout(inPlace);                               // a new designation gets new values: always rebound
    }

    /**
     * Which carried input slots may share one buffer with the output slot that feeds them, so that
     * no copy is made per run ({@code allows(in, out)}): out is a step's own storage (not a view, not
     * returned twice); every reader of in runs no later than out's producer P, and P, if it reads in
     * itself, is an elementwise pass that writes out only after its last read of in (its passes read
     * and write index by index: an element is read before it is overwritten); in is not also an
     * output; and neither P nor any step after it can throw (index traps, generic kernels), so that a
     * run that throws leaves the carried values as they were, as {@link #carry} promises.
     */
    private final class InPlace {
        // One pass over the schedule for all carried values (a 16-layer step carries ~470 of them).
        final int n = ir.steps.size();
        final int[] producer = new int[ir.slots.size()], lastReader = new int[ir.slots.size()], returned = new int[ir.slots.size()];
        final boolean[] throwsFrom = new boolean[n + 1];   // some step at index ≥ i may throw

        InPlace() {
            Arrays.fill(producer, -1);
            Arrays.fill(lastReader, -1);
            for (int i = 0; i < n; i++) {
                for (int o : ir.steps.get(i).outs()) producer[o] = i;
                for (int a : ir.steps.get(i).args()) lastReader[ir.root(a)] = i;
            }
            for (int o : ir.outputs) returned[ir.root(o)]++;
            for (int i = n - 1; i >= 0; i--) throwsFrom[i] = throwsFrom[i + 1] || mayThrow(i);
        }

        boolean allows(int in, int out) {
            if (ir.slots.get(out).origin() != Slots.Origin.STEP || ir.root(out) != out || ir.slots.get(in).origin() != Slots.Origin.INPUT) return false;
            if (returned[in] > 0 || returned[out] != 1) return false;
            int p = producer[out];
            if (p < 0 || throwsFrom[p]) return false;       // P, or a step after it, could throw after the value is written
            int last = lastReader[in];
            return last < p || last == p && readsBeforeWriting(p, in, out);
        }
    }

    /** Whether elementwise step p reads input {@code in} (not as a broadcast) only up to its first write of output {@code out}. */
    private boolean readsBeforeWriting(int p, int in, int out) {
        Fusion.Group g = groups[p];
        if (g == null) return false;
        for (Fusion.Leaf lf : g.leaves()) if (ir.root(lf.src()) == in) return false;
        int inAt = -1, outAt = -1;
        for (int j = 0; j < g.inputs().length; j++) if (g.inputs()[j] == in) inAt = g.regs() + j;
        for (int j = 0; j < g.outs().length; j++) if (g.outs()[j] == out) outAt = g.regs() + g.inputs().length + j;
        if (inAt < 0 || outAt < 0) return false;
        boolean written = false;
        for (int[] c : g.code()) {
            if (written && (c[2] == inAt || c[3] == inAt)) return false;
            written |= c[1] == outAt;
        }
        return true;
    }

    /** Whether step i can throw while running: index instructions (out-of-range traps) and generic kernels. */
    private boolean mayThrow(int i) {
        Slots.Step s = ir.steps.get(i);
        return s.instr() instanceof Instr.Indexing || groups[i] == null && !bind.isNative(s, facts[i]);
    }

    /**
     * Sets carried input {@code name} to {@code value} (copied, F32 rounded to float as {@link #run}
     * does). PlanError if {@code name} is not carried; EvalError (located at the input let) if the
     * type is not the input's.
     */
    public synchronized void set(String name, Tensor value) { carrying(name).set(name, value, ir); }

    /**
     * The current value of carried input {@code name} (after a run: the output it is fed from) as a
     * fresh Tensor. PlanError if {@code name} is not carried or has no value yet.
     */
    public synchronized Tensor get(String name) { return carrying(name).get(name); }

    /** How many carried inputs share their buffer with the output feeding them, so nothing is copied per run (read by tests and the bench's profile). */
    public synchronized int carriedInPlace() { return carry == null ? 0 : carry.inPlace(); }

    /** The carried input names, in designation order (empty when nothing is carried; read by tests). */
    public synchronized List<String> carried() {
        List<String> l = new ArrayList<>();
        if (carry != null) carry.names().forEach(l::add);
        return l;
    }

    private Carry carrying(String name) {
        if (carry == null) throw new PlanError(null, "carry: " + name + " is not a carried input (nothing is carried)");
        return carry;
    }

    // ---- what the plan is ------------------------------------------------------------------------

    /** The input names and types, in program order. */
    public Map<String, TensorType> inputs() {
        Map<String, TensorType> m = new LinkedHashMap<>();
        ir.inputs.forEach((name, s) -> m.put(name, ir.type(s)));
        return m;
    }

    /** The output types, the result flattened (a tuple's elements in order). */
    public List<TensorType> outputs() { return ir.outputs.stream().map(ir::type).toList(); }

    /** The number of scheduled steps (a fusion is one). */
    public int steps() { return ir.steps.size(); }

    /** Bytes held by the arena (every run reuses them). */
    public long arenaBytes() { return layout.arena().bytes(); }

    /** Bytes the input and step slots would take without reuse (views and constants excluded). */
    public long slotBytes() { return slotBytes; }

    /** The most bytes live at once (the arena's lower bound: what no layout can go below; read by tests). */
    public long peakLiveBytes() { return layout.peakLiveBytes(); }

    /** Buffers in the arena. */
    public int arenaBuffers() { return layout.arena().sizes.size(); }

    /** Bytes of the constants (literals and fills) the plan materialises once, besides the arena. */
    public long constantBytes() {
        long b = 0;
        Set<String> fills = new HashSet<>();
        for (int s = 0; s < ir.slots.size(); s++) {
            Slots.Slot sl = ir.slots.get(s);
            if (sl.origin() != Slots.Origin.CONST) continue;
            String key = fillKey(sl, ir.constants.get(s));
            if (key != null && !fills.add(key)) continue;
            b += Schedule.bytes(sl.type());
        }
        return b;
    }

    /** Which steps run a native kernel and which the generic one, by instruction kind and dtype ("op:DTYPE"). */
    public Map<String, Boolean> nativeKinds() {
        Map<String, Boolean> m = new LinkedHashMap<>();
        for (int i = 0; i < ir.steps.size(); i++) {
            Slots.Step s = ir.steps.get(i);
            m.merge(s.instr().op() + ":" + ir.type(s.out()).dtype(), groups[i] != null || bind.isNative(s, facts[i]), Boolean::logicalAnd);
        }
        return m;
    }

    // ---- profiling --------------------------------------------------------------------------------

    /** Times every step from now on, reported by instruction kind ({@link #profileReport}) or step by step ({@link #profileSteps}). */
    public synchronized void profile(boolean on) {
        profile = on;
        runs = 0;
        Arrays.fill(nanos, 0);
    }

    /** Time by instruction kind since {@link #profile}(true), largest first: one line per kind. */
    public synchronized List<String> profileReport() { return profiler().byKind(); }

    /**
     * The time of every step since {@link #profile}(true), in schedule order: per step its index, the
     * let it computes (its first binder, as {@link #program} prints it), what it runs (a matmul's
     * shape and operand layouts, otherwise the kind and the output's shape; " [fallback]" when the
     * generic kernel runs it), the mean milliseconds per run, and a matmul's GFLOP/s.
     */
    public synchronized List<String> profileSteps() { return profiler().bySteps(); }

    private Profile profiler() {
        boolean[] nat = new boolean[ir.steps.size()];
        for (int i = 0; i < nat.length; i++) nat[i] = groups[i] != null || bind.isNative(ir.steps.get(i), facts[i]);
        return new Profile(ir, nanos, runs, nat);
    }

    // ---- test hooks -----------------------------------------------------------------------------

    /**
     * Fills every step buffer of the arena with NaN (tests: a later run then shows any entry a
     * kernel left unwritten and a reader still read). Constants are left alone; materializes first.
     */
    synchronized void poisonArena() {
        if (kernels == null) materialize();
        for (int s = 0; s < slotBuf.length; s++) {
            if (ir.slots.get(s).origin() != Slots.Origin.STEP || inPlaceSlots[s]) continue;   // it holds a carried value
            switch (slotBuf[s]) {
                case float[] f -> Arrays.fill(f, Float.NaN);
                case double[] d -> Arrays.fill(d, Double.NaN);
                case null, default -> { }
            }
        }
    }



    /** The number of instruction lets that run inside elementwise passes (read by tests). */
    int fusedSteps() {
        int k = 0;
        for (Fusion.Group g : groups) if (g != null) k += g.steps();
        return k;
    }

    /** The arrays the elementwise passes stream, all passes together (read by tests). */
    int fusedInputStreams() {
        int k = 0;
        for (Fusion.Group g : groups) if (g != null) k += g.inputs().length;
        return k;
    }

    /** How many products run with others that share their left operand (read by tests). */
    int sharedOperandProducts() {
        int c = 0;
        for (Slots.Step s : ir.steps) if (s.instr() instanceof Instr.MatmulShared m) c += m.bs().size();
        return c;
    }

    /** Test hook: the distinct buffers the constants were given (0 before the first run). */
    int constantBuffers() {
        if (slotBuf == null) return 0;
        Set<Object> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int s = 0; s < ir.slots.size(); s++)
            if (ir.slots.get(s).origin() == Slots.Origin.CONST) seen.add(slotBuf[s]);
        return seen.size();
    }
}
