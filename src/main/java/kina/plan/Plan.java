package kina.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import kina.eval.EvalError;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Perm;
import kina.ir.Program;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The compiled plan of a checked, transformed program (DESIGN §6): one straight-line schedule of
 * instruction steps over numbered slots, run over buffers from an arena allocated once per Plan
 * and reused by every run. Its outputs equal the interpreter's bit for bit.
 *
 * <p>Compilation: {@link Flatten} (calls inlined, tuples and reshapes resolved to slots, constants
 * computed once); dead steps dropped (except those that can trap, which the interpreter would run);
 * a {@code transpose} swapping the last two axes that only matmuls read is folded into their
 * transA/transB flags; a softmax's backward over the last axis run as one row pass
 * ({@link #softmaxGrads}), with the attention_qk that makes its dp, and the attention_pk and
 * attention_pq that read its ds and p, computed inside it ({@link #qkSoftmaxGrads}); chains of elementwise steps fused into
 * single passes ({@link Fusion}: values read only inside a chain, scalar broadcasts and uniform
 * fills feeding it get no buffer); an attention step writes the backward's attention_probs over
 * the same operands too ({@link #sharedProbs}), a swiglu its gate's sigmoid ({@link #sharedSigmoids});
 * matmuls that share their left operand run as one ({@link #sharedOperands}); P and ds written at
 * the attended pairs only where no reader looks further ({@link #attendedOnly}, the last pass);
 * liveness (the last reader of every storage) and a best-fit arena in which a buffer is handed to a
 * new value only after every reader of the old one has run. Carried values ({@link #carry}) live
 * outside the arena, updated in place where that is safe ({@link InPlace}).
 *
 * <p>{@link #run} is not reentrant (one arena): calls are serialised.
 */
public final class Plan {

    /** What a row pass replaced: the steps of a softmax's backward, alone or after the attention_qk that makes dp. */
    enum RowPass { NONE, SOFTMAX_GRAD, QK_SOFTMAX_GRAD }

    /**
     * A scheduled step: its operands after folding, and whether operand 0 / 1 is read transposed;
     * or a fused elementwise pass ({@code group} non-null: args are its input slots, {@code step}
     * its last member's, the values it writes are {@code group.outs()}). {@code also}: steps not
     * scheduled because this op's kernel writes their values too (an attention's attention_probs,
     * see {@link #sharedProbs}; a swiglu's sigmoid of its gate, {@link #sharedSigmoids}; a softmax
     * backward's row sums; qk_softmax_grad's row sums, attention_pk and attention_pq); empty for most. {@code pass}:
     * SOFTMAX_GRAD, the op is {@link #softmaxGrads}'s row pass (args [p, dp], step the last mul's);
     * QK_SOFTMAX_GRAD, that pass with dp = attention_qk(g, v) computed inside it ({@link #qkSoftmaxGrads};
     * args [p, g, v], then the x of dq = attention_pk(ds, x) and the q of dK = attention_pq(ds, q) when
     * those run inside it too, with dV = attention_pq(p, g) (in {@code also}); {@code qk} the
     * attention_qk step, which is not scheduled). {@code attendedOnly}:
     * the op writes its probability-shaped value (an attention's P, qk_softmax_grad's ds) at the
     * attended pairs only, as no reader looks at the rest ({@link #attendedOnly}). {@code outUnread}:
     * nothing reads the op's own value (qk_softmax_grad's ds once everything that read it runs inside
     * it, {@link #qkSoftmaxGrads}), so the kernel does not store it.
     */
    record Op(Flatten.Step step, int[] args, boolean transA, boolean transB, Fusion.Group group, List<Flatten.Step> also,
              RowPass pass, Flatten.Step qk, boolean attendedOnly, boolean outUnread) {
        Op(Flatten.Step step, int[] args, boolean transA, boolean transB) { this(step, args, transA, transB, null, List.of(), RowPass.NONE, null, false, false); }

        Op(Flatten.Step step, int[] args, boolean transA, boolean transB, Fusion.Group group) {
            this(step, args, transA, transB, group, List.of(), RowPass.NONE, null, false, false);
        }

        Op(Flatten.Step step, int[] args, Fusion.Group group, List<Flatten.Step> also, RowPass pass, Flatten.Step qk) {
            this(step, args, false, false, group, also, pass, qk, false, false);
        }

        /** This op, also writing the values of {@code steps} (which it computes anyway; they are then not scheduled). */
        Op withAlso(List<Flatten.Step> steps) { return new Op(step, args, transA, transB, group, steps, pass, qk, attendedOnly, outUnread); }

        /** This op, writing its probability-shaped value at the attended pairs only. */
        Op writingAttendedOnly() { return new Op(step, args, transA, transB, group, also, pass, qk, true, outUnread); }

        /** The slots this op writes. */
        int[] outs() {
            int[] o = group == null ? new int[] {step.out()} : group.outs();
            if (also.isEmpty()) return o;
            int[] all = Arrays.copyOf(o, o.length + also.size());
            for (int i = 0; i < also.size(); i++) all[o.length + i] = also.get(i).out();
            return all;
        }

        /** The step kind in reports. */
        String kind() {
            return switch (pass) {
                case SOFTMAX_GRAD -> "softmax_grad";
                case QK_SOFTMAX_GRAD -> "qk_softmax_grad";
                case NONE -> group == null ? step.instr().op() : "fused";
            };
        }
    }

    private final Flatten ir;
    private final List<Op> ops;
    private Runnable[] kernels;                       // bound on the first run (see materialize)
    private Object[] slotBuf;
    private Arena arena;
    private int[] bufOf;                              // arena buffer per slot; -1: none (unread, a view, a constant, or pinned)
    private boolean[] inPlaceSlots;                   // slots held in a carried value's own buffer (Carry.inPlace), not the arena
    private long arenaBytes, peakLiveBytes;
    private final long slotBytes;
    private int arenaBuffers;
    private final List<Integer> inputSlots;
    private boolean profile;
    private int runs;                                 // runs profiled since profile(true)
    private final long[] nanos;
    private Carry carry;                              // null: nothing carried (see carry)

    private Plan(Flatten ir, boolean fuse, boolean share) {
        this.ir = ir;
        List<Flatten.Step> live = deadStepsDropped(ir);
        List<Op> folded = folded(live, ir);
        List<Op> fused = fuse ? Fusion.fuse(qkSoftmaxGrads(softmaxGrads(folded, ir), ir), ir) : folded;
        // attendedOnly checks the readers of the final schedule: it must stay the last pass.
        this.ops = share ? attendedOnly(sharedOperands(sharedSigmoids(sharedProbs(fused, ir), ir), ir), ir) : fused;
        this.inputSlots = new ArrayList<>(ir.inputs.values());
        long slotSum = 0;
        for (Flatten.Slot sl : ir.slots)
            if (sl.origin() == Flatten.Origin.STEP || sl.origin() == Flatten.Origin.INPUT) slotSum += bytes(sl.type());
        this.slotBytes = slotSum;
        this.nanos = new long[ops.size()];
        layout(new boolean[ir.slots.size()]);
    }

    /**
     * Liveness and the arena's layout (the buffer of every slot), leaving the {@code inPlace} slots
     * out: their buffers are carried values' own (see {@link #carry}). Drops the bound kernels and
     * buffers (bound again on the next run), so the old arena can go before the new one is made.
     */
    private void layout(boolean[] inPlace) {
        // ---- liveness: def and last read of every storage (root slot) ----
        int nSlots = ir.slots.size(), n = ops.size();
        int[] def = new int[nSlots], last = new int[nSlots];
        Arrays.fill(def, Integer.MIN_VALUE);
        Arrays.fill(last, Integer.MIN_VALUE);
        for (int s : inputSlots) { def[s] = -1; last[s] = -1; }
        for (int i = 0; i < n; i++) {
            Op op = ops.get(i);
            for (int o : op.outs()) { def[o] = i; last[o] = Math.max(last[o], i); }
            for (int a : op.args()) { int r = root(a); last[r] = Math.max(last[r], i); }
        }
        for (int o : ir.outputs) last[root(o)] = n;
        // ---- the arena: best fit among free buffers of the same kind, grown when none fits ----
        Arena arena = new Arena();
        int[] bufOf = new int[nSlots];         // planning only decides the layout; buffers come on the first run
        Arrays.fill(bufOf, -1);
        List<List<Integer>> dying = new ArrayList<>();
        for (int i = 0; i <= n; i++) dying.add(new ArrayList<>());
        long liveNow = 0, peak = 0;
        for (int s : inputSlots) {                       // defined before step 0; an unread input needs no buffer
            if (last[s] < 0 || inPlace[s]) continue;
            bufOf[s] = arena.take(ir.slots.get(s).type());
            dying.get(last[s]).add(s);
            liveNow += bytes(ir.slots.get(s).type());
        }
        for (int i = 0; i < n; i++) {
            for (int s : ops.get(i).outs()) {
                if (inPlace[s]) continue;
                bufOf[s] = arena.take(ir.slots.get(s).type());   // never an operand's buffer: those are released after
                dying.get(last[s]).add(s);
                liveNow += bytes(ir.slots.get(s).type());
            }
            peak = Math.max(peak, liveNow);
            for (int d : dying.get(i)) { arena.free.add(bufOf[d]); liveNow -= bytes(ir.slots.get(d).type()); }
        }
        this.peakLiveBytes = peak;
        this.arena = arena;
        this.bufOf = bufOf;
        this.inPlaceSlots = inPlace;
        this.arenaBytes = arena.bytes();
        this.arenaBuffers = arena.sizes.size();
        this.kernels = null;                             // bound again, to these buffers, on the next run
        this.slotBuf = null;
    }

    /** Allocates the arena and constants and binds every kernel to its buffers: once, on the first run. */
    private void materialize() {
        int nSlots = ir.slots.size(), n = ops.size();
        List<Object> buffers = arena.allocate();
        Object[] bufs = new Object[nSlots];
        Map<String, Object> fills = new java.util.HashMap<>();
        for (int s = 0; s < nSlots; s++) {
            Flatten.Slot sl = ir.slots.get(s);
            switch (sl.origin()) {
                case INPUT, STEP -> bufs[s] = inPlaceSlots[s] ? carry.inPlaceBuffer(s) : bufOf[s] >= 0 ? buffers.get(bufOf[s]) : null;
                case CONST -> {
                    Flatten.Const c = ir.constants.get(s);
                    int size = (int) sl.type().shape().vol();
                    // Fills of one type and value share one buffer (kernels never write constants).
                    String key = fillKey(sl, c);
                    if (key != null && fills.containsKey(key)) { bufs[s] = fills.get(key); continue; }
                    Object b = Kind.of(sl.type().dtype()).allocate(Math.max(1, size));
                    if (key != null) fills.put(key, b);
                    if (c.payload() == null) {
                        switch (b) {                                  // the value Kernels.fill would hold
                            case float[] f -> Arrays.fill(f, (float) c.fill());
                            case double[] d -> Arrays.fill(d, c.fill());
                            case long[] l -> Arrays.fill(l, (long) c.fill());
                            default -> throw new IllegalStateException("not a buffer");
                        }
                    } else {
                        Lower.unwrap(c.tensor(), b);
                    }
                    bufs[s] = b;
                }
                case VIEW -> { }
            }
        }
        for (int s = 0; s < nSlots; s++) if (ir.slots.get(s).origin() == Flatten.Origin.VIEW) bufs[s] = bufs[root(s)];
        Lower lower = new Lower(ir.slots, bufs);
        Runnable[] ks = new Runnable[n];
        for (int i = 0; i < n; i++) ks[i] = lower.bind(ops.get(i));
        this.slotBuf = bufs;
        this.kernels = ks;
    }

    /** The arena's layout while planning: buffer sizes and kinds, and the free list. */
    private static final class Arena {
        final List<Integer> sizes = new ArrayList<>();
        final List<Kind> kinds = new ArrayList<>();
        final List<Integer> free = new ArrayList<>();

        /** A free buffer of t's kind: the smallest that fits, else the largest (grown), else a new one. */
        int take(TensorType t) {
            Kind k = Kind.of(t.dtype());
            int need = (int) t.shape().vol(), best = -1;
            for (int b : free) if (kinds.get(b) == k && sizes.get(b) >= need && (best < 0 || sizes.get(b) < sizes.get(best))) best = b;
            if (best < 0) for (int b : free) if (kinds.get(b) == k && (best < 0 || sizes.get(b) > sizes.get(best))) best = b;
            if (best < 0) {
                sizes.add(need);
                kinds.add(k);
                return sizes.size() - 1;
            }
            free.remove(Integer.valueOf(best));
            if (sizes.get(best) < need) sizes.set(best, need);
            return best;
        }

        List<Object> allocate() {
            List<Object> l = new ArrayList<>();
            for (int b = 0; b < sizes.size(); b++) l.add(kinds.get(b).allocate(Math.max(1, sizes.get(b))));
            return l;
        }

        long bytes() {
            long t = 0;
            for (int b = 0; b < sizes.size(); b++) t += (long) sizes.get(b) * kinds.get(b).bytes;
            return t;
        }
    }

    /** The buffer kind of a dtype: F32 float[], F64 double[], I64 and I1 long[]. */
    enum Kind {
        FLOAT(4), DOUBLE(8), LONG(8);

        final int bytes;

        Kind(int bytes) { this.bytes = bytes; }

        static Kind of(DType d) {
            return switch (d) {
                case F32 -> FLOAT;
                case F64 -> DOUBLE;
                case I64, I1 -> LONG;
                case BF16, F16, F8E4M3, F8E5M2 -> throw new PlanError(null, "the host does not run " + d);
            };
        }

        Object allocate(int n) {
            return switch (this) {
                case FLOAT -> new float[n];
                case DOUBLE -> new double[n];
                case LONG -> new long[n];
            };
        }
    }

    private static long bytes(TensorType t) { return t.shape().vol() * Kind.of(t.dtype()).bytes; }

    private int root(int slot) { return ir.slots.get(slot).root(); }

    /** Steps whose value nobody reads are dropped, except those that can trap (the interpreter runs them). */
    private static List<Flatten.Step> deadStepsDropped(Flatten ir) {
        boolean[] needed = new boolean[ir.slots.size()];
        for (int o : ir.outputs) needed[ir.slots.get(o).root()] = true;
        List<Flatten.Step> kept = new ArrayList<>();
        for (int i = ir.steps.size() - 1; i >= 0; i--) {
            Flatten.Step st = ir.steps.get(i);
            if (!needed[st.out()] && !traps(st.instr())) continue;
            kept.add(st);
            for (int a : st.args()) needed[ir.slots.get(a).root()] = true;
        }
        Collections.reverse(kept);
        return kept;
    }

    /** Instructions that check index values at run time. */
    private static boolean traps(Instr ins) { return ins instanceof Instr.Indexing; }

    /**
     * Folds a floating {@code transpose} that swaps the last two axes, is no output, has no views
     * and is read only as a matmul operand, into the matmul's transA / transB flag.
     */
    private static List<Op> folded(List<Flatten.Step> steps, Flatten ir) {
        int nSlots = ir.slots.size();
        boolean[] foldable = new boolean[nSlots];
        int[] source = new int[nSlots];
        for (Flatten.Step st : steps)
            if (st.instr() instanceof Instr.Transpose(var _, Perm perm) && perm.rank() >= 2 && perm.equals(Perm.lastTwo(perm.rank()))
                    && ir.slots.get(st.out()).type().dtype().floating()) {
                foldable[st.out()] = true;
                source[st.out()] = st.args()[0];
            }
        for (int o : ir.outputs) foldable[ir.slots.get(o).root()] = false;
        for (Flatten.Slot s : ir.slots) if (s.origin() == Flatten.Origin.VIEW) foldable[s.root()] = false;
        for (Flatten.Step st : steps) {
            boolean mm = st.instr() instanceof Instr.Matmul;
            for (int a : st.args()) if (!mm) foldable[a] = false;
        }
        List<Op> ops = new ArrayList<>();
        for (Flatten.Step st : steps) {
            if (st.instr() instanceof Instr.Transpose && foldable[st.out()]) continue;
            int[] args = st.args().clone();
            boolean ta = false, tb = false;
            if (st.instr() instanceof Instr.Matmul) {
                if (foldable[args[0]]) { ta = true; args[0] = source[args[0]]; }
                if (foldable[args[1]]) { tb = true; args[1] = source[args[1]]; }
            }
            ops.add(new Op(st, args, ta, tb));
        }
        return ops;
    }

    /**
     * Products that share their left operand run as one ({@link kina.kernels.Matmul#sgemmShared}: A
     * packed once for all of them, each output's bits unchanged): F32 matmuls of one batch element
     * with the same A (one storage and shape, the same transA) and the same transB, whose B is
     * defined before the first of them. They run where the first ran; only their outputs are
     * defined earlier, which no reader can tell. The q/k/v projections (A = the normed x) and
     * their weight gradients (A = x, transposed), the FFN's gate and up and theirs.
     */
    static List<Op> sharedOperands(List<Op> ops, Flatten ir) {
        int n = ops.size();
        int[] producer = new int[ir.slots.size()];
        Arrays.fill(producer, -1);
        for (int i = 0; i < n; i++) for (int o : ops.get(i).outs()) producer[o] = i;
        Map<String, Integer> open = new java.util.HashMap<>();            // operands → the first product of its group
        Map<Integer, List<Integer>> groups = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            Op op = ops.get(i);
            if (!soleMatmul(op, ir)) continue;
            int a = op.args()[0];
            String key = ir.slots.get(a).root() + " " + ir.slots.get(a).type().shape() + " " + op.transA() + " " + op.transB();
            Integer first = open.get(key);
            if (first != null && producer[ir.slots.get(op.args()[1]).root()] < first) { groups.get(first).add(i); continue; }
            open.put(key, i);
            groups.put(i, new ArrayList<>(List.of(i)));
        }
        boolean[] merged = new boolean[n];
        Map<Integer, Op> at = new java.util.HashMap<>();
        for (var e : groups.entrySet()) {
            List<Integer> g = e.getValue();
            if (g.size() < 2) continue;
            Op first = ops.get(e.getKey());
            int[] args = new int[g.size() + 1];
            args[0] = first.args()[0];
            List<Flatten.Step> also = new ArrayList<>();
            for (int t = 0; t < g.size(); t++) {
                Op m = ops.get(g.get(t));
                args[1 + t] = m.args()[1];
                if (t > 0) { also.add(m.step()); merged[g.get(t)] = true; }
            }
            at.put(e.getKey(), new Op(first.step(), args, first.transA(), first.transB(), null, also, RowPass.NONE, null, false, false));
        }
        List<Op> out = new ArrayList<>();
        for (int i = 0; i < n; i++) if (!merged[i]) out.add(at.getOrDefault(i, ops.get(i)));
        return out;
    }

    /** An F32 matmul of one batch element, on its own (not already sharing anything). */
    private static boolean soleMatmul(Op op, Flatten ir) {
        if (op.group() != null || op.pass() != RowPass.NONE || !op.also().isEmpty() || !(op.step().instr() instanceof Instr.Matmul)) return false;
        TensorType t = ir.slots.get(op.step().out()).type();
        int r = t.shape().rank();
        return t.dtype() == DType.F32 && r >= 2 && t.shape().vol() == t.shape().dim(r - 2) * t.shape().dim(r - 1);
    }

    /** How many products run with others that share their left operand (read by tests). */
    int sharedOperandProducts() {
        int c = 0;
        for (Op op : ops) if (op.group() == null && op.step().instr() instanceof Instr.Matmul && !op.also().isEmpty()) c += 1 + op.also().size();
        return c;
    }

    /**
     * Computes P once: an F32 {@code attention(q, k, v[, sinks], opts)} step also writes the value of
     * a later {@code attention_probs(q, k[, sinks], opts, sinkColumn)} step over the same q, k, sinks
     * and options (the probability rows, or the sink shares with sinkColumn: the very rows the
     * attention kernel computes, zeros outside [lo, hi] included unless {@link #attendedOnly} drops
     * them), which is then not scheduled. At most
     * one of each kind per attention; their buffers live from the attention to their last reader.
     */
    static List<Op> sharedProbs(List<Op> ops, Flatten ir) {
        int n = ops.size();
        List<List<Flatten.Step>> also = new ArrayList<>(Collections.nCopies(n, List.of()));
        boolean[] dropped = new boolean[n];
        for (int i = 0; i < n; i++) {
            Op a = ops.get(i);
            if (a.group() != null || !(a.step().instr() instanceof Instr.Attention at)
                    || ir.slots.get(a.step().out()).type().dtype() != DType.F32) continue;
            int[] aa = a.args();
            boolean probs = false, shares = false;
            List<Flatten.Step> mine = new ArrayList<>();
            for (int j = i + 1; j < n && !(probs && shares); j++) {
                Op b = ops.get(j);
                if (dropped[j] || b.group() != null || !(b.step().instr() instanceof Instr.AttentionProbs bp)) continue;
                int[] ba = b.args();
                boolean same = bp.opts().equals(at.opts()) && bp.sinks().isPresent() == at.sinks().isPresent()
                        && sameValue(ir, ba[0], aa[0]) && sameValue(ir, ba[1], aa[1])
                        && (at.sinks().isEmpty() || sameValue(ir, ba[2], aa[3]));
                if (!same || (bp.sinkColumn() ? shares : probs)) continue;
                if (bp.sinkColumn()) shares = true; else probs = true;
                mine.add(b.step());
                dropped[j] = true;
            }
            also.set(i, mine);
        }
        return withShared(ops, also, dropped);
    }

    /** The schedule after a row-pass rewrite: op i replaced by {@code replace[i]} where that is set, the dropped ones left out. */
    private static List<Op> withReplaced(List<Op> ops, Op[] replace, boolean[] dropped) {
        List<Op> out = new ArrayList<>();
        for (int i = 0; i < ops.size(); i++) if (replace[i] != null) out.add(replace[i]); else if (!dropped[i]) out.add(ops.get(i));
        return out;
    }

    /** The schedule after a sharing pass: ops without the dropped ones, op i also writing {@code also.get(i)}. */
    private static List<Op> withShared(List<Op> ops, List<List<Flatten.Step>> also, boolean[] dropped) {
        List<Op> out = new ArrayList<>();
        for (int i = 0; i < ops.size(); i++)
            if (!dropped[i]) out.add(also.get(i).isEmpty() ? ops.get(i) : ops.get(i).withAlso(also.get(i)));
        return out;
    }

    /**
     * Computes σ(gate) once: an F32 {@code swiglu(gate, up)} step also writes the value of a later
     * {@code sigmoid(gate)} step over the same gate (swiglu's VJP takes σ(gate); the forward kernel
     * computes it anyway, with the same roundings), which is then not scheduled. Its buffer lives
     * from the swiglu to its last reader.
     */
    static List<Op> sharedSigmoids(List<Op> ops, Flatten ir) {
        int n = ops.size();
        Map<Integer, Integer> swigluOfGate = new java.util.HashMap<>();     // gate's root → the swiglu op reading it
        List<List<Flatten.Step>> also = new ArrayList<>(Collections.nCopies(n, List.of()));
        boolean[] dropped = new boolean[n];
        for (int i = 0; i < n; i++) {
            Op op = ops.get(i);
            if (op.group() != null || op.pass() != RowPass.NONE || !op.also().isEmpty()) continue;
            if (op.step().instr() instanceof Instr.Swiglu && ir.slots.get(op.step().out()).type().dtype() == DType.F32)
                swigluOfGate.putIfAbsent(ir.slots.get(op.args()[0]).root(), i);
            else if (op.step().instr() instanceof Instr.Sigmoid) {
                Integer sw = swigluOfGate.get(ir.slots.get(op.args()[0]).root());
                if (sw == null || !also.get(sw).isEmpty() || !sameValue(ir, op.args()[0], ops.get(sw).args()[0])) continue;
                also.set(sw, List.of(op.step()));
                dropped[i] = true;
            }
        }
        return withShared(ops, also, dropped);
    }

    /**
     * The backward of a softmax over the last axis, as the VJP writes it, becomes one row pass
     * ({@link PlanKernels#softmaxGrad}; the op's args are [p, dp], its step the last mul's, its
     * {@code also} the sum's when d has other readers): an F32 m = mul(p, dp) read only by
     * d = sum(m, last axis, keepdims), d read by b = broadcast(d) to m's shape (and possibly others),
     * b read only by s = sub(dp, b), s read only by ds = mul(p, s) or mul(s, p); m, b, s no output
     * and not viewed. Per row the kernel folds the products in increasing index (the sum's order)
     * and then writes p·(dp − d), the same roundings as the steps (IEEE products commute, so either
     * operand order), so the bits are theirs; m, b and s get no buffer. The op runs where the first
     * mul did (its operands are live there). One pass collects readers: linear in the schedule.
     */
    static List<Op> softmaxGrads(List<Op> ops, Flatten ir) {
        int n = ops.size(), nSlots = ir.slots.size();
        int[] producer = new int[nSlots], readers = new int[nSlots], firstReader = new int[nSlots], broadcastOf = new int[nSlots];
        Arrays.fill(producer, -1);
        Arrays.fill(firstReader, -1);
        Arrays.fill(broadcastOf, -1);
        boolean[] pinned = pinned(ir);
        for (int i = 0; i < n; i++) {                                // one pass: linear in the schedule
            Op op = ops.get(i);
            producer[op.step().out()] = i;
            for (int a : op.args()) {
                int r = ir.slots.get(a).root();
                readers[r]++;
                if (firstReader[r] < 0) firstReader[r] = i;
            }
            if (op.step().instr() instanceof Instr.Broadcast && broadcastOf[op.args()[0]] < 0) broadcastOf[op.args()[0]] = i;
        }
        Op[] replace = new Op[n];
        boolean[] dropped = new boolean[n];
        for (int i = 0; i < n; i++) {
            Op mul = ops.get(i);
            int m = mul.step().out();
            TensorType mt = ir.slots.get(m).type();
            if (dropped[i] || !(mul.step().instr() instanceof Instr.Mul) || mt.dtype() != DType.F32 || mt.rank() == 0
                    || pinned[m] || readers[m] != 1) continue;
            Op sum = ops.get(firstReader[m]);
            if (!(sum.step().instr() instanceof Instr.Sum(var _, int axis, boolean keep)) || axis != mt.rank() - 1 || !keep) continue;
            int d = sum.step().out();
            if (broadcastOf[d] < 0) continue;
            Op bc = ops.get(broadcastOf[d]);
            int b = bc.step().out();
            if (!ir.slots.get(b).type().equals(mt) || pinned[b] || readers[b] != 1) continue;
            Op sub = ops.get(firstReader[b]);
            if (!(sub.step().instr() instanceof Instr.Sub) || sub.args()[1] != b || pinned[sub.step().out()] || readers[sub.step().out()] != 1) continue;
            int dp = sub.args()[0], s = sub.step().out(), a0 = mul.args()[0], a1 = mul.args()[1];
            Op scale = ops.get(firstReader[s]);
            if (!(scale.step().instr() instanceof Instr.Mul)) continue;
            int p = a0 == dp ? a1 : a1 == dp ? a0 : -1;
            if (p < 0) continue;
            if (!(scale.args()[0] == p && scale.args()[1] == s) && !(scale.args()[0] == s && scale.args()[1] == p)) continue;
            List<Flatten.Step> also = readers[d] > 1 || pinned[d] ? List.of(sum.step()) : List.of();
            replace[i] = new Op(scale.step(), new int[] {p, dp}, null, also, RowPass.SOFTMAX_GRAD, null);
            dropped[producer[d]] = dropped[producer[b]] = dropped[producer[s]] = dropped[producer[scale.step().out()]] = true;
        }
        return withReplaced(ops, replace, dropped);
    }

    /**
     * A softmax backward whose dp is an attention_qk runs the product inside its row pass
     * ({@link AttentionProducts#qkSoftmaxGrad}): the {@link #softmaxGrads} op over [p, dp] where dp =
     * attention_qk(g, v, opts) is F32, read by that op alone, no output and not viewed, and p is an
     * F32 attention_probs(q, k, …, opts) (probabilities, not sink shares) with the same opts, so both
     * hold +0.0 at every pair the mask leaves out and the kernel need not read or compute them. The
     * op becomes [p, g, v] at the row pass's place (after both producers); dp gets no buffer. A later
     * dq = attention_pk(ds, x, opts) whose x has v's type and is made before that place runs inside it too, from the
     * ds rows while they are in cache: args [p, g, v, x], its step in {@code also}. With one kv head
     * per head (each (batch, head) task then owns its keys' rows of dK and dV), dK =
     * attention_pq(ds, q, opts) whose q has g's type and is made before that place, and dV =
     * attention_pq(p, g, opts) when no op between its place and this one reads dV, run inside it
     * too (q appended to args, both steps in {@code also}): each chain is attention_pq's, fed a group
     * of rows at a time (AttentionProducts.pqGroup). When those merged products were all that read
     * ds (no output, no view), ds is not stored ({@link Op#outUnread}).
     */
    static List<Op> qkSoftmaxGrads(List<Op> ops, Flatten ir) {
        int n = ops.size(), nSlots = ir.slots.size();
        int[] producer = new int[nSlots], readers = new int[nSlots];
        Arrays.fill(producer, -1);
        boolean[] pinned = pinned(ir);
        Map<Integer, List<Integer>> readerOps = new java.util.HashMap<>();   // slot → the ops reading it (that slot itself)
        Map<Integer, List<Integer>> rootReaders = new java.util.HashMap<>(); // root slot → the ops reading its storage
        for (int i = 0; i < n; i++) {
            Op op = ops.get(i);
            for (int o : op.outs()) producer[o] = i;
            for (int a : op.args()) {
                readers[ir.slots.get(a).root()]++;
                readerOps.computeIfAbsent(a, _ -> new ArrayList<>()).add(i);
                rootReaders.computeIfAbsent(ir.slots.get(a).root(), _ -> new ArrayList<>()).add(i);
            }
        }
        boolean[] dropped = new boolean[n];
        Op[] replace = new Op[n];
        for (int i = 0; i < n; i++) {
            Op sg = ops.get(i);
            if (sg.pass() != RowPass.SOFTMAX_GRAD) continue;
            int p = sg.args()[0], dp = sg.args()[1];
            if (producer[dp] < 0 || producer[p] < 0 || pinned[dp] || readers[dp] != 1) continue;
            Op qk = ops.get(producer[dp]), pr = ops.get(producer[p]);
            if (qk.group() != null || qk.pass() != RowPass.NONE || pr.group() != null || pr.pass() != RowPass.NONE
                    || qk.step().out() != dp || pr.step().out() != p) continue;
            if (!(qk.step().instr() instanceof Instr.AttentionProduct(var _, var _, var qo, var form)) || form != Instr.AttentionProduct.Form.QK
                    || !(pr.step().instr() instanceof Instr.AttentionProbs ap) || ap.sinkColumn() || !ap.opts().equals(qo)
                    || ir.slots.get(p).type().dtype() != DType.F32 || !ir.slots.get(p).type().equals(ir.slots.get(dp).type())) continue;
            int ds = sg.step().out(), pk = -1;
            for (int r : readerOps.getOrDefault(ds, List.of())) {     // dq = attention_pk(ds, x): x made before this op
                Op o = ops.get(r);
                if (!dropped[r] && o.group() == null && o.pass() == RowPass.NONE && o.args()[0] == ds && o.args()[1] != ds
                        && o.step().instr() instanceof Instr.AttentionProduct(var _, var _, var po, var pf)
                        && pf == Instr.AttentionProduct.Form.PK && po.equals(qo) && producer[ir.slots.get(o.args()[1]).root()] < i
                        && ir.slots.get(o.args()[1]).type().equals(ir.slots.get(qk.args()[1]).type())) { pk = r; break; }   // the kernel takes v's geometry
            }
            // dK = attention_pq(ds, q) and dV = attention_pq(p, g) too, fed a group of rows at a time while it is
            // in cache, when each head has its own kv head (the (batch, head) tasks then own their keys' rows).
            int dk = -1, dv = -1, gy = qk.args()[0];
            if (qo.heads() == qo.kvHeads()) {
                for (int r : readerOps.getOrDefault(ds, List.of()))
                    if (!dropped[r] && pqOf(ops.get(r), ds, qo) && ops.get(r).args()[1] != ds && producer[ir.slots.get(ops.get(r).args()[1]).root()] < i
                            && ir.slots.get(ops.get(r).args()[1]).type().equals(ir.slots.get(gy).type())) { dk = r; break; }
                for (int r : readerOps.getOrDefault(p, List.of()))
                    if (!dropped[r] && pqOf(ops.get(r), p, qo) && ops.get(r).args()[1] == gy && readAfter(rootReaders.getOrDefault(ir.slots.get(ops.get(r).step().out()).root(), List.of()), dropped, i)) { dv = r; break; }
            }
            List<Flatten.Step> also = new ArrayList<>(sg.also());
            List<Integer> args = new ArrayList<>(List.of(p, gy, qk.args()[1]));
            for (int r : new int[] {pk, dk, dv}) {
                if (r < 0) continue;
                also.add(ops.get(r).step());
                if (r != dv) args.add(ops.get(r).args()[1]);   // pk's x and dK's q (dV's x is g, already an operand)
                dropped[r] = true;
            }
            if (dv >= 0) producer[ir.slots.get(ops.get(dv).step().out()).root()] = i;   // later passes see where dV is made now
            // ds unread once its readers run inside: attention_pk and attention_pq(ds, q) were all of them
            boolean dsUnread = dk >= 0 && !pinned[ir.slots.get(ds).root()]
                    && readers[ir.slots.get(ds).root()] == (pk >= 0 ? 1 : 0) + 1;
            replace[i] = new Op(sg.step(), args.stream().mapToInt(Integer::intValue).toArray(), false, false, null, List.copyOf(also),
                    RowPass.QK_SOFTMAX_GRAD, qk.step(), false, dsUnread);
            dropped[producer[dp]] = true;
        }
        return withReplaced(ops, replace, dropped);
    }

    /** Whether op is a plain attention_pq(s, x) under options o. */
    private static boolean pqOf(Op op, int s, Instr.AttnOpts o) {
        return op.group() == null && op.pass() == RowPass.NONE && op.args()[0] == s
                && op.step().instr() instanceof Instr.AttentionProduct(var _, var _, var po, var form)
                && form == Instr.AttentionProduct.Form.PQ && po.equals(o);
    }

    /**
     * Whether a value whose storage the ops {@code readers} read may be made at position i instead of
     * where it is: every reader comes after i and is still in place (one already merged into an
     * earlier row pass runs there, maybe before i).
     */
    private static boolean readAfter(List<Integer> readers, boolean[] dropped, int i) {
        for (int k : readers) if (k <= i || dropped[k]) return false;
        return true;
    }

    /**
     * Marks the ops whose probability-shaped value no reader looks at outside the mask: an F32
     * attention's shared P ({@link #sharedProbs}) and qk_softmax_grad's ds, when the value is no
     * output, has no view, and every reader is an attention_pk / attention_pq taking it as s, or a
     * qk_softmax_grad taking it as p, under the same options (each reads the attended pairs alone).
     * Those ops then write the attended pairs only ({@link Op#attendedOnly}): the interpreter's +0.0
     * (P) or +0.0·(+0.0 − d) (ds) elsewhere are never read, so skipping them changes no output.
     */
    static List<Op> attendedOnly(List<Op> ops, Flatten ir) {
        boolean[] pinned = pinned(ir);
        Map<Integer, Instr.AttnOpts> maskOf = new java.util.HashMap<>();      // slot → the mask it is written under
        for (Op op : ops) {
            if (op.pass() == RowPass.QK_SOFTMAX_GRAD) maskOf.put(op.step().out(), ((Instr.AttentionProduct) op.qk().instr()).opts());
            else if (op.group() == null && op.step().instr() instanceof Instr.Attention at)
                for (Flatten.Step s : op.also())
                    if (s.instr() instanceof Instr.AttentionProbs ap && !ap.sinkColumn()) maskOf.put(s.out(), at.opts());
        }
        for (Op op : ops) {                                    // a reader that may look outside the mask clears the slot
            for (int k = 0; k < op.args().length; k++) {
                int a = op.args()[k];
                Instr.AttnOpts m = maskOf.get(a);
                if (m == null) continue;
                boolean ok = k == 0 && op.group() == null && switch (op.pass()) {
                    case QK_SOFTMAX_GRAD -> ((Instr.AttentionProduct) op.qk().instr()).opts().equals(m);
                    case SOFTMAX_GRAD -> false;
                    case NONE -> op.step().instr() instanceof Instr.AttentionProduct(var _, var _, var o, var form)
                            && form != Instr.AttentionProduct.Form.QK && o.equals(m);
                };
                for (int j = 1; j < op.args().length; j++) if (op.args()[j] == a) ok = false;
                if (!ok) maskOf.remove(a);
            }
        }
        maskOf.keySet().removeIf(sl -> pinned[sl] || ir.slots.get(sl).type().dtype() != DType.F32);
        List<Op> out = new ArrayList<>();
        for (Op op : ops) {
            boolean mine = op.pass() == RowPass.QK_SOFTMAX_GRAD ? maskOf.containsKey(op.step().out()) && !op.outUnread()   // (an unstored ds: nothing to write)
                    : op.pass() == RowPass.NONE && op.group() == null && op.step().instr() instanceof Instr.Attention
                      && op.also().stream().anyMatch(s -> maskOf.containsKey(s.out()));
            out.add(mine ? op.writingAttendedOnly() : op);
        }
        return out;
    }

    /** Per root slot: an output's or a viewed storage, which a pass must neither drop nor leave half-written. */
    private static boolean[] pinned(Flatten ir) {
        boolean[] pinned = new boolean[ir.slots.size()];
        for (int o : ir.outputs) pinned[ir.slots.get(o).root()] = true;
        for (Flatten.Slot sl : ir.slots) if (sl.origin() == Flatten.Origin.VIEW) pinned[sl.root()] = true;
        return pinned;
    }

    /** Whether slots a and b hold the same value: one slot, or views of one storage with one type. */
    private static boolean sameValue(Flatten ir, int a, int b) {
        Flatten.Slot x = ir.slots.get(a), y = ir.slots.get(b);
        return a == b || (x.root() == y.root() && x.type().equals(y.type()));
    }

    // ---- public API ------------------------------------------------------------------------------

    /**
     * Compiles a checked, transformed program. Throws {@link PlanError} (one line, naming the let)
     * for what it cannot plan: a remaining {@code handle}, a fn result, an unchecked program; and the
     * interpreter's EvalError for @device values and dtypes the host does not run.
     */
    public static Plan compile(Program checkedTransformed) { return compile(checkedTransformed, true); }

    /** {@link #compile}, with elementwise fusion ({@link Fusion}) and the row passes ({@link #softmaxGrads}, {@link #qkSoftmaxGrads}) on or off (off: for comparisons in tests). */
    static Plan compile(Program checkedTransformed, boolean fuse) { return compile(checkedTransformed, fuse, true); }

    /**
     * {@link #compile}, with fusion and the row passes, and with the shared values ({@link #sharedProbs},
     * {@link #sharedSigmoids}) and {@link #attendedOnly}, on or off (tests).
     */
    static Plan compile(Program checkedTransformed, boolean fuse, boolean share) {
        return new Plan(Flatten.of(checkedTransformed), fuse, share);
    }

    /** The input names and types, in program order. */
    public Map<String, TensorType> inputs() {
        Map<String, TensorType> m = new LinkedHashMap<>();
        ir.inputs.forEach((name, s) -> m.put(name, ir.slots.get(s).type()));
        return m;
    }

    /** The output types, the result flattened (a tuple's elements in order). */
    public List<TensorType> outputs() { return ir.outputs.stream().map(s -> ir.slots.get(s).type()).toList(); }

    /** The number of scheduled steps (after folding, dead-step removal and fusion: a fused pass is one). */
    public int steps() { return ops.size(); }

    /** The number of instruction steps that run inside fused elementwise passes (read by tests). */
    public int fusedSteps() {
        int k = 0;
        for (Op op : ops) if (op.group() != null) k += op.group().steps();
        return k;
    }

    /** The scheduled ops that write a probability-shaped value at the attended pairs only ({@link #attendedOnly}; read by tests). */
    int attendedOnlySteps() { return (int) ops.stream().filter(Op::attendedOnly).count(); }

    /** How many steps leave their own value unstored, as nothing reads it (tests; {@link Op#outUnread}). */
    int unreadOutSteps() { return (int) ops.stream().filter(Op::outUnread).count(); }

    /**
     * Fills every step buffer of the arena with NaN (tests: a later run then shows any entry a
     * kernel left unwritten and a reader still read). Constants are left alone; materializes first.
     */
    synchronized void poisonArena() {
        if (kernels == null) materialize();
        for (int s = 0; s < slotBuf.length; s++) {
            if (ir.slots.get(s).origin() != Flatten.Origin.STEP || inPlaceSlots[s]) continue;   // it holds a carried value
            switch (slotBuf[s]) {
                case float[] f -> Arrays.fill(f, Float.NaN);
                case double[] d -> Arrays.fill(d, Double.NaN);
                case null, default -> { }
            }
        }
    }

    /** The arrays the fused passes stream, all passes together (read by tests). */
    int fusedInputStreams() { return ops.stream().filter(o -> o.group() != null).mapToInt(o -> o.group().inputs().length).sum(); }

    /** Bytes held by the arena (every run reuses them). */
    public long arenaBytes() { return arenaBytes; }

    /** Bytes the input and step slots would take without reuse (views and constants excluded). */
    public long slotBytes() { return slotBytes; }

    /** The most bytes live at once (the arena's lower bound: what no layout can go below; read by tests). */
    public long peakLiveBytes() { return peakLiveBytes; }

    /** Buffers in the arena. */
    public int arenaBuffers() { return arenaBuffers; }

    /** An input's payload: present and of its declared type, else an EvalError at its let (as the interpreter's). */
    static void checkInput(Tensor x, kina.ir.TensorType t, Let let) {
        if (x == null) throw new EvalError("input: no payload supplied for " + t).at(let);
        if (!x.type().equals(t)) throw new EvalError("input: expected " + t + ", got " + x.type()).at(let);
    }

    /** The sharing key of a fill constant (its type and value bits), or null for a literal. */
    private static String fillKey(Flatten.Slot sl, Flatten.Const c) {
        return c.payload() == null ? sl.type() + "=" + Double.doubleToRawLongBits(c.fill()) : null;
    }

    /** Test hook: the distinct buffers the constants were given (0 before the first run). */
    int constantBuffers() {
        if (slotBuf == null) return 0;
        Set<Object> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int s = 0; s < ir.slots.size(); s++)
            if (ir.slots.get(s).origin() == Flatten.Origin.CONST) seen.add(slotBuf[s]);
        return seen.size();
    }

    /** Bytes of the constants (literals and fills) the plan materialises once, besides the arena. */
    public long constantBytes() {
        long b = 0;
        Set<String> fills = new HashSet<>();
        for (int s = 0; s < ir.slots.size(); s++) {
            Flatten.Slot sl = ir.slots.get(s);
            if (sl.origin() != Flatten.Origin.CONST) continue;
            Flatten.Const c = ir.constants.get(s);
            String key = fillKey(sl, c);
            if (key != null && !fills.add(key)) continue;
            b += bytes(sl.type());
        }
        return b;
    }

    /** Times every step from now on, reported by instruction kind ({@link #profileReport}) or step by step ({@link #profileSteps}). */
    public synchronized void profile(boolean on) {
        profile = on;
        runs = 0;
        Arrays.fill(nanos, 0);
    }

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
        layout(inPlace);                                 // a new designation gets new values: always rebound
    }

    /**
     * Which carried input slots may share one buffer with the output slot that feeds them, so that
     * no copy is made per run (Carry.inPlace; {@code allows(in, out)}): out is a step's own storage
     * (not a view, not returned twice); every reader of in runs no later than out's producer P,
     * and P, if it reads in itself, is a fused group that writes out only after its last read of
     * in (its passes read and write index by index: an element is read before it is overwritten);
     * in is not also an output; and neither P nor any step after it can throw (index traps,
     * fallbacks), so that a run that throws leaves the carried values as they were, as
     * {@link #carry} promises.
     */
    private final class InPlace {
        // One pass over the schedule for all carried values (a 16-layer step carries ~470 of them).
        final int n = ops.size();
        final int[] producer = new int[ir.slots.size()], lastReader = new int[ir.slots.size()], returned = new int[ir.slots.size()];
        final boolean[] throwsFrom = new boolean[n + 1];   // some op at index ≥ i may throw

        InPlace() {
            Arrays.fill(producer, -1);
            Arrays.fill(lastReader, -1);
            for (int i = 0; i < n; i++) {
                for (int o : ops.get(i).outs()) producer[o] = i;
                for (int a : ops.get(i).args()) lastReader[root(a)] = i;
            }
            for (int o : ir.outputs) returned[root(o)]++;
            for (int i = n - 1; i >= 0; i--) throwsFrom[i] = throwsFrom[i + 1] || mayThrow(ops.get(i));
        }

        boolean allows(int in, int out) {
            if (ir.slots.get(out).origin() != Flatten.Origin.STEP || root(out) != out || ir.slots.get(in).origin() != Flatten.Origin.INPUT) return false;
            if (returned[in] > 0 || returned[out] != 1) return false;
            int p = producer[out];
            if (p < 0 || throwsFrom[p]) return false;       // P, or a step after it, could throw after the value is written
            int last = lastReader[in];
            return last < p || last == p && readsBeforeWriting(ops.get(p), in, out);
        }
    }

    /** Whether fused op {@code op} reads input {@code in} (not as a broadcast) only up to its first write of output {@code out}. */
    private boolean readsBeforeWriting(Op op, int in, int out) {
        Fusion.Group g = op.group();
        if (g == null || !op.also().isEmpty()) return false;
        for (Fusion.Leaf lf : g.leaves()) if (ir.slots.get(lf.src()).root() == in) return false;
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

    /** Whether a step can throw while running: index instructions (out-of-range traps) and generic fallbacks. */
    private boolean mayThrow(Op op) {
        if (op.group() != null || op.pass() != RowPass.NONE) return false;
        return op.step().instr() instanceof Instr.Indexing
                || !Lower.isNative(op, ir.slots);     // a generic fallback may throw what the interpreter throws
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

    /**
     * Runs the plan on {@code inputs} (by Input let name; each must have the declared type; carried
     * inputs, see {@link #carry}, come from the plan and must not be given) and returns the flattened
     * result, each a fresh Tensor, without the carried outputs. Errors are the interpreter's
     * EvalErrors, located at the let.
     */
    public synchronized List<Tensor> run(Map<String, Tensor> inputs) {
        if (kernels == null) materialize();
        Carry cs = carry;
        for (int s : inputSlots) {
            Flatten.Slot sl = ir.slots.get(s);
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
                throw e.at(ops.get(i).step().let());
            }
        }
        if (cs != null) cs.copyOut(slotBuf);
        List<Tensor> out = new ArrayList<>(ir.outputs.size());
        for (int k = 0; k < ir.outputs.size(); k++) {
            if (cs != null && cs.output(k)) continue;
            int o = ir.outputs.get(k);
            Flatten.Slot sl = ir.slots.get(o);
            out.add(sl.origin() == Flatten.Origin.CONST ? ir.constants.get(o).tensor() : Lower.wrap(sl.type(), slotBuf[o]));
        }
        return out;
    }

    /** Time by instruction kind since {@link #profile}(true), largest first: one line per kind. */
    public synchronized List<String> profileReport() {
        Map<String, long[]> by = new LinkedHashMap<>();
        long total = 0;
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            long flops = matmulFlops(op);
            String kind = (flops > 0 ? matmulShape(op) : op.kind())
                    + (Lower.isNative(op, ir.slots) ? "" : " [fallback]");
            long[] acc = by.computeIfAbsent(kind, _ -> new long[3]);
            acc[0] += nanos[i];
            acc[1]++;
            acc[2] += flops;
            total += nanos[i];
        }
        List<Map.Entry<String, long[]>> es = new ArrayList<>(by.entrySet());
        es.sort((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]));
        List<String> lines = new ArrayList<>();
        for (var e : es)
            lines.add(String.format(Locale.ROOT, "%-34s %9.1f ms %5.1f%%  (%d kernels per run)%s", e.getKey(), e.getValue()[0] / 1e6,
                    total == 0 ? 0 : 100.0 * e.getValue()[0] / total, e.getValue()[1],
                    e.getValue()[2] > 0 && e.getValue()[0] > 0
                            ? String.format(Locale.ROOT, " %.1f GFLOP/s", runs * (double) e.getValue()[2] / e.getValue()[0]) : ""));
        return lines;
    }

    /**
     * The time of every step since {@link #profile}(true), in schedule order: per step its index, the
     * let it computes (its first binder), what it runs (a matmul's shape and operand layouts as in
     * {@link #profileReport}, otherwise the kind and the output's shape; " [fallback]" when no native
     * kernel runs it), the mean milliseconds per run (four decimals: a toy step's kernels take
     * microseconds), and a matmul's GFLOP/s. Shows where in the step the time goes, and which
     * kernel follows which (what is still in cache).
     */
    public synchronized List<String> profileSteps() {
        List<String> lines = new ArrayList<>(ops.size());
        for (int i = 0; i < ops.size(); i++) {
            Op op = ops.get(i);
            long flops = matmulFlops(op);
            String what = (flops > 0 ? matmulShape(op) : op.kind() + " " + ir.slots.get(op.step().out()).type().shape())
                    + (Lower.isNative(op, ir.slots) ? "" : " [fallback]");
            lines.add(String.format(Locale.ROOT, "%4d %-16s %-40s %10.4f ms%s", i, op.step().let().binders().getFirst().name(), what,
                    runs == 0 ? 0 : nanos[i] / 1e6 / runs,
                    flops > 0 && nanos[i] > 0 ? String.format(Locale.ROOT, " %.1f GFLOP/s", runs * (double) flops / nanos[i]) : ""));
        }
        return lines;
    }

    /** Multiply-adds × 2 of one run of a matmul step (0 for any other step). */
    private long matmulFlops(Op op) {
        if (op.group() != null || !(op.step().instr() instanceof Instr.Matmul)) return 0;
        Shape a = ir.slots.get(op.args()[0]).type().shape();
        int r = a.rank();
        long k = op.transA() ? a.dim(r - 2) : a.dim(r - 1), vol = 0;
        for (int o : op.outs()) vol += ir.slots.get(o).type().shape().vol();   // with sharedOperands' products
        return 2 * vol * k;
    }

    /** "matmul B×M×K×N NN|TN|NT|TT" of a matmul step: the operand layouts the kernel reads. */
    private String matmulShape(Op op) {
        Shape out = ir.slots.get(op.step().out()).type().shape(), a = ir.slots.get(op.args()[0]).type().shape();
        int r = out.rank();
        long m = out.dim(r - 2), n = out.dim(r - 1), k = op.transA() ? a.dim(r - 2) : a.dim(r - 1);
        StringBuilder ns = new StringBuilder().append(n);
        for (Flatten.Step s : op.also()) ns.append('+').append(ir.slots.get(s.out()).type().shape().dim(r - 1));
        return String.format(Locale.ROOT, "matmul %dx%dx%dx%s %s%s", out.vol() / (m * n), m, k, ns,
                op.transA() ? "T" : "N", op.transB() ? "T" : "N");
    }

    /** Which steps run a native kernel and which the generic fallback, by instruction kind. */
    public Map<String, Boolean> nativeKinds() {
        Map<String, Boolean> m = new LinkedHashMap<>();
        for (Op op : ops) m.merge(op.kind() + ":" + ir.slots.get(op.step().out()).type().dtype(),
                Lower.isNative(op, ir.slots), Boolean::logicalAnd);
        return m;
    }
}
