package kina.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.ir.DType;
import kina.ir.Instr.*;
import kina.ir.TensorType;

/**
 * The schedule's storage: liveness (the last step reading every storage) and a best-fit arena in
 * which a buffer is handed to a new value only after every reader of the old one has run; and
 * what the kernels may skip: a slot nothing reads. The steps run in the rewritten program's order.
 */
final class Schedule {

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

    static long bytes(TensorType t) { return t.shape().vol() * Kind.of(t.dtype()).bytes; }

    /** The arena's layout while planning: buffer sizes and kinds, and the free list. */
    static final class Arena {
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

    /** A layout: the arena, the buffer of every slot (−1: none), and the most bytes live at once. */
    record Layout(Arena arena, int[] bufOf, long peakLiveBytes) {}

    /**
     * Liveness and the arena's layout (the buffer of every slot), leaving the {@code inPlace} slots
     * out: their buffers are carried values' own. An input no step reads needs no buffer.
     */
    static Layout layout(Slots ir, boolean[] inPlace) {
        int nSlots = ir.slots.size(), n = ir.steps.size();
        int[] last = lastReads(ir);
        Arena arena = new Arena();
        int[] bufOf = new int[nSlots];
        Arrays.fill(bufOf, -1);
        List<List<Integer>> dying = new ArrayList<>();
        for (int i = 0; i <= n; i++) dying.add(new ArrayList<>());
        long liveNow = 0, peak = 0;
        for (int s : ir.inputs.values()) {                       // defined before step 0
            if (last[s] < 0 || inPlace[s]) continue;
            bufOf[s] = arena.take(ir.type(s));
            dying.get(last[s]).add(s);
            liveNow += bytes(ir.type(s));
        }
        for (int i = 0; i < n; i++) {
            Slots.Step st = ir.steps.get(i);
            for (int s : st.outs()) {
                if (inPlace[s]) continue;
                bufOf[s] = arena.take(ir.type(s));               // never an operand's buffer: those are released after
                dying.get(Math.max(last[s], i)).add(s);
                liveNow += bytes(ir.type(s));
            }
            peak = Math.max(peak, liveNow);
            for (int d : dying.get(i)) { arena.free.add(bufOf[d]); liveNow -= bytes(ir.type(d)); }
        }
        return new Layout(arena, bufOf, peak);
    }

    /** The last step reading every storage (root slot): −1 for an input no step reads, n for a result's storage. */
    static int[] lastReads(Slots ir) {
        int nSlots = ir.slots.size(), n = ir.steps.size();
        int[] last = new int[nSlots];
        Arrays.fill(last, Integer.MIN_VALUE);
        for (int s : ir.inputs.values()) last[s] = -1;
        for (int i = 0; i < n; i++) for (int a : ir.steps.get(i).args()) { int r = ir.root(a); last[r] = Math.max(last[r], i); }
        for (int o : ir.outputs) last[ir.root(o)] = n;
        return last;
    }

    /** Per slot: nothing reads it and it is no result's nor a view's storage (a kernel need not store it). */
    static boolean[] unread(Slots ir) {
        boolean[] read = new boolean[ir.slots.size()];
        for (Slots.Step st : ir.steps) for (int a : st.args()) read[ir.root(a)] = true;
        for (int o : ir.outputs) read[ir.root(o)] = true;
        for (Slots.Slot sl : ir.slots) if (sl.origin() == Slots.Origin.VIEW) read[sl.root()] = true;
        boolean[] unread = new boolean[read.length];
        for (int s = 0; s < read.length; s++) unread[s] = !read[s];
        return unread;
    }
}
