package kina.plan;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiPredicate;
import kina.eval.EvalError;
import kina.eval.Tensor;
import kina.ir.TensorType;

/**
 * The carried state of a {@link Plan} (see {@link Plan#carry}): for each carried input, the output
 * it is fed from and its value between runs, in a buffer of the plan's kind (float[] for F32)
 * outside the arena. Where the plan allows it (Plan.InPlace: no reader of the input runs after the
 * output's producer, which, if it reads the input, reads each element before overwriting it;
 * neither it nor anything after it can throw), the input and the output both live in that buffer:
 * the run updates it in place and nothing is copied ({@code inPlace}). Otherwise the arena's input buffer
 * is reused for other values during a run, so the value is copied in at the start of a run and the
 * output copied out at the end: two array copies, no Tensor, no conversion. (medium's train step
 * carries 38 MB of weights and moments: the copies took about 8.6 ms a step, 1.2 %.)
 */
final class Carry {

    /** One carried input: its name, input slot, the output index and slot it is fed from, its value. */
    private record Entry(String name, int input, int outputIndex, int outputSlot, TensorType type, Object value, boolean inPlace) {}

    private final Map<String, Entry> byName = new LinkedHashMap<>();
    private final Map<String, Boolean> hasValue = new LinkedHashMap<>();
    private final boolean[] carriedInput, carriedOutput;

    /**
     * Validates the designation against the plan's inputs and outputs; values start unset.
     * {@code inPlace(input slot, output slot)}: whether the pair may share its buffer (an output
     * feeding several inputs never does).
     */
    Carry(Slots ir, Map<String, Integer> inputToOutput, BiPredicate<Integer, Integer> inPlace) {
        this.carriedInput = new boolean[ir.slots.size()];
        this.carriedOutput = new boolean[ir.outputs.size()];
        Map<Integer, Integer> feeds = new HashMap<>();
        for (Integer k : inputToOutput.values()) if (k != null) feeds.merge(k, 1, Integer::sum);
        for (var e : inputToOutput.entrySet()) {
            String name = e.getKey();
            Integer k = e.getValue();
            Integer in = ir.inputs.get(name);
            if (in == null) throw new PlanError(null, "carry: no input named " + name);
            if (k == null || k < 0 || k >= ir.outputs.size())
                throw new PlanError(null, "carry: " + name + " from output " + k + ", but the plan has " + ir.outputs.size() + " outputs");
            int out = ir.outputs.get(k);
            TensorType t = ir.slots.get(in).type(), ot = ir.slots.get(out).type();
            if (!t.equals(ot)) throw new PlanError(null, "carry: input " + name + " is " + t + ", output " + k + " is " + ot);
            Object buf = Schedule.Kind.of(t.dtype()).allocate(Math.max(1, (int) t.shape().vol()));
            byName.put(name, new Entry(name, in, k, out, t, buf, feeds.get(k) == 1 && inPlace.test(in, out)));
            hasValue.put(name, false);
            carriedInput[in] = true;
            carriedOutput[k] = true;
        }
    }

    /** Whether input slot {@code slot} is carried. */
    boolean input(int slot) { return carriedInput[slot]; }

    /** Whether output {@code k} (an index into the flattened result) is carried. */
    boolean output(int k) { return carriedOutput[k]; }

    /** The carried input names, in designation order. */
    Iterable<String> names() { return byName.keySet(); }

    private Entry entry(String name) {
        Entry e = byName.get(name);
        if (e == null) throw new PlanError(null, "carry: " + name + " is not a carried input (carried: " + String.join(", ", byName.keySet()) + ")");
        return e;
    }

    /** Replaces the value of carried input {@code name}; an EvalError if its type differs. */
    void set(String name, Tensor x, Slots ir) {
        Entry e = entry(name);
        Plan.checkInput(x, e.type(), ir.inputLets.get(e.input()));
        Bind.unwrap(x, e.value());
        hasValue.put(name, true);
    }

    /** The value of carried input {@code name} as a fresh Tensor. */
    Tensor get(String name) {
        Entry e = entry(name);
        if (!hasValue.get(name)) throw new PlanError(null, "carry: " + name + " has no value yet (set it first)");
        return Bind.wrap(e.type(), e.value());
    }

    /** Marks the slots whose buffer is a carried value's own (both slots of each in-place pair). */
    void inPlaceSlots(boolean[] slots) {
        for (Entry e : byName.values()) if (e.inPlace()) { slots[e.input()] = true; slots[e.outputSlot()] = true; }
    }

    /** The buffer of an in-place slot (see {@link #inPlaceSlots}): the carried value it holds. */
    Object inPlaceBuffer(int slot) {
        for (Entry e : byName.values()) if (e.inPlace() && (e.input() == slot || e.outputSlot() == slot)) return e.value();
        throw new IllegalStateException("slot " + slot + " is not updated in place");
    }

    /** How many carried inputs are updated in place (read by tests and the bench's profile). */
    int inPlace() { return (int) byName.values().stream().filter(Entry::inPlace).count(); }

    /** Copies every carried value into its input's buffer ({@code slotBuf}), before a run; unset ones are refused. */
    void copyIn(Object[] slotBuf, Slots ir) {
        for (Entry e : byName.values()) {
            if (!hasValue.get(e.name()))
                throw new EvalError("input: no payload supplied for " + e.type() + " (a carried input: set it first)").at(ir.inputLets.get(e.input()));
            Object b = slotBuf[e.input()];
            if (b != null && !e.inPlace()) copy(e.value(), b, e.type());   // null: an input no step reads
        }
    }

    /** Copies every carried output into its input's value, after a run that completed. */
    void copyOut(Object[] slotBuf) {
        for (Entry e : byName.values()) if (!e.inPlace()) copy(slotBuf[e.outputSlot()], e.value(), e.type());
    }

    private static void copy(Object from, Object to, TensorType t) {
        System.arraycopy(from, 0, to, 0, (int) t.shape().vol());
    }
}
