package kina.model;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.eval.Interpreter;
import kina.eval.Tensor;
import kina.eval.Value;
import kina.ir.KinaException;
import kina.ir.Program;
import kina.kernels.Parallel;
import kina.mlir.Native;
import kina.plan.Plan;

/**
 * A compiled program (made by {@link Engine#compile}): inputs by name to the flattened result,
 * with {@link Plan#carry}'s contract for state carried from run to run (the trainer carries
 * weights and optimizer moments). Once {@link #carry} is called, {@link #run} takes only the
 * inputs that are not carried and returns only the outputs that are not carried. One
 * implementation per engine: the plan, the interpreter, the native library.
 */
public sealed interface Runner permits Runner.PlanRunner, Runner.InterpreterRunner, Runner.NativeRunner {
    /** After every run, output k (an index into the flattened result) becomes input name's value. */
    void carry(Map<String, Integer> inputToOutput);

    /** Sets carried input {@code name}. */
    void set(String name, Tensor value);

    /** The value of carried input {@code name} (the plan: a fresh Tensor; the interpreter: the one it returned, not to be modified). */
    Tensor get(String name);

    /** One run: the inputs that are not carried to the outputs that are not carried. */
    List<Tensor> run(Map<String, Tensor> inputs);

    /** The plan engine: carried values stay in the plan's float buffers between runs. */
    record PlanRunner(Plan plan) implements Runner {
        public void carry(Map<String, Integer> inputToOutput) { plan.carry(inputToOutput); }
        public void set(String name, Tensor value) { plan.set(name, value); }
        public Tensor get(String name) { return plan.get(name); }
        public List<Tensor> run(Map<String, Tensor> inputs) { return plan.run(inputs); }
    }

    /**
     * The native engine: carried values stay in the shared object's native buffers between runs;
     * each run uses {@link Parallel#threads} threads, as the plan does.
     */
    record NativeRunner(Native lib) implements Runner {
        public void carry(Map<String, Integer> inputToOutput) { lib.carry(inputToOutput); }
        public void set(String name, Tensor value) { lib.set(name, value); }
        public Tensor get(String name) { return lib.get(name); }
        public List<Tensor> run(Map<String, Tensor> inputs) {
            lib.threads(Parallel.threads());
            return lib.run(inputs);
        }
    }

    /**
     * The interpreter engine: carried values are kept as the Tensors the interpreter returned; a
     * value set with the wrong type is refused by the interpreter at the next run (its input check).
     */
    final class InterpreterRunner implements Runner {
        private final Program p;
        private Map<String, Integer> carry = Map.of();
        private Set<Integer> carriedOutputs = Set.of();
        private final Map<String, Tensor> values = new HashMap<>();

        InterpreterRunner(Program p) { this.p = p; }

        public void carry(Map<String, Integer> inputToOutput) {
            carry = new LinkedHashMap<>(inputToOutput);
            carriedOutputs = Set.copyOf(inputToOutput.values());
            values.clear();
        }

        public void set(String name, Tensor value) {
            if (!carry.containsKey(name)) throw new KinaException(null, "carry: " + name + " is not a carried input");
            values.put(name, value);
        }

        public Tensor get(String name) {
            Tensor t = values.get(name);
            if (t == null) throw new KinaException(null, "carry: " + name + " is not a carried input with a value");
            return t;
        }

        public List<Tensor> run(Map<String, Tensor> inputs) {
            for (String name : inputs.keySet())
                if (carry.containsKey(name)) throw new KinaException(null, "carry: " + name + " is carried; give it with set, not to run");
            Map<String, Tensor> in = new HashMap<>(inputs);
            in.putAll(values);
            List<Tensor> all = flatten(new Interpreter(in).run(p));
            carry.forEach((name, k) -> values.put(name, all.get(k)));
            List<Tensor> out = new ArrayList<>();
            for (int k = 0; k < all.size(); k++) if (!carriedOutputs.contains(k)) out.add(all.get(k));
            return out;
        }

        private static List<Tensor> flatten(Value v) {
            List<Tensor> out = new ArrayList<>();
            switch (v) {
                case Tensor t -> out.add(t);
                case Value.Tuple tup -> tup.elems().forEach(e -> out.addAll(flatten(e)));
                case Value.Closure cl -> throw new IllegalStateException("a train step ended in fn " + cl.name());
            }
            return out;
        }
    }
}
