package kina.ir;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * Structural helpers over {@link Instr}, written once for every instruction: an instruction is a
 * record whose operands are its components of type Var, {@code Optional<Var>} and
 * {@code List<Var>}, in component order; every other component is an attribute.
 */
public final class Instrs {
    private Instrs() {}

    /** How an instruction record is taken apart and rebuilt (its accessors and canonical constructor). */
    private record Anatomy(MethodHandle[] get, int[] kind, MethodHandle make) {}

    private static final int ATTR = 0, VAR = 1, OPT = 2, LIST = 3;

    private static final ClassValue<Anatomy> ANATOMY = new ClassValue<>() {
        @Override protected Anatomy computeValue(Class<?> c) {
            RecordComponent[] rc = c.getRecordComponents();
            if (rc == null) throw new IllegalArgumentException(c + " is not a record");
            MethodHandles.Lookup l = MethodHandles.lookup();
            MethodHandle[] get = new MethodHandle[rc.length];
            int[] kind = new int[rc.length];
            Class<?>[] types = new Class<?>[rc.length];
            try {
                for (int i = 0; i < rc.length; i++) {
                    types[i] = rc[i].getType();
                    get[i] = l.unreflect(rc[i].getAccessor());
                    kind[i] = types[i] == Var.class ? VAR : types[i] == Optional.class ? OPT : types[i] == List.class ? LIST : ATTR;
                }
                MethodHandle make = l.findConstructor(c, MethodType.methodType(void.class, types));
                return new Anatomy(get, kind, make);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("instruction record " + c.getSimpleName() + ": " + e, e);
            }
        }
    };

    /** The operands of {@code ins}: its Var, present {@code Optional<Var>} and {@code List<Var>} components, in order. */
    public static List<Var> operands(Instr ins) {
        Anatomy s = ANATOMY.get(ins.getClass());
        List<Var> out = new ArrayList<>(s.get().length);
        try {
            for (int i = 0; i < s.get().length; i++) {
                switch (s.kind()[i]) {
                    case VAR -> out.add((Var) s.get()[i].invoke(ins));
                    case OPT -> ((Optional<?>) s.get()[i].invoke(ins)).ifPresent(v -> out.add((Var) v));
                    case LIST -> { for (Object v : (List<?>) s.get()[i].invoke(ins)) out.add((Var) v); }
                    default -> { }
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("the operands of " + ins.getClass().getSimpleName() + ": " + e, e);
        }
        return List.copyOf(out);
    }

    /**
     * The surface name of instruction record {@code c}: its simple name in snake_case
     * ({@code LogSoftmax} → {@code log_softmax}), but for the names written as one word
     * ({@code argmax}, {@code rmsnorm}, {@code layernorm}, {@code l2norm}).
     */
    public static String op(Class<? extends Instr> c) { return OP.get(c); }

    private static final java.util.Map<Class<?>, String> ONE_WORD = java.util.Map.of(
            Instr.ArgMax.class, "argmax", Instr.RmsNorm.class, "rmsnorm", Instr.LayerNorm.class, "layernorm",
            Instr.L2Norm.class, "l2norm");

    private static final ClassValue<String> OP = new ClassValue<>() {
        @Override protected String computeValue(Class<?> c) {
            String one = ONE_WORD.get(c);
            if (one != null) return one;
            StringBuilder b = new StringBuilder();
            for (char ch : c.getSimpleName().toCharArray()) {
                if (Character.isUpperCase(ch) && !b.isEmpty()) b.append('_');
                b.append(Character.toLowerCase(ch));
            }
            return b.toString();
        }
    };

    /** Every instruction record: the sealed hierarchy of {@link Instr} walked family by family. */
    public static List<Class<? extends Instr>> records() {
        List<Class<? extends Instr>> out = new ArrayList<>();
        collect(Instr.class, out);
        return List.copyOf(out);
    }

    @SuppressWarnings("unchecked")
    private static void collect(Class<?> c, List<Class<? extends Instr>> out) {
        if (c.isRecord()) { out.add((Class<? extends Instr>) c); return; }
        for (Class<?> k : c.getPermittedSubclasses()) collect(k, out);
    }

    /** The same instruction with every operand {@code v} replaced by {@code f(v)}; attributes unchanged. */
    public static Instr mapOperands(Instr ins, UnaryOperator<Var> f) {
        Anatomy s = ANATOMY.get(ins.getClass());
        Object[] args = new Object[s.get().length];
        boolean changed = false;
        try {
            for (int i = 0; i < args.length; i++) {
                Object x = s.get()[i].invoke(ins);
                Object y = switch (s.kind()[i]) {
                    case VAR -> f.apply((Var) x);
                    case OPT -> ((Optional<?>) x).map(v -> v instanceof Var var ? f.apply(var) : v);
                    case LIST -> map((List<?>) x, f);
                    default -> x;
                };
                changed |= !y.equals(x);
                args[i] = y;
            }
            return changed ? (Instr) s.make().invokeWithArguments(args) : ins;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("rebuilding " + ins.op() + ": " + e, e);
        }
    }

    private static List<Object> map(List<?> xs, UnaryOperator<Var> f) {
        List<Object> out = new ArrayList<>(xs.size());
        for (Object x : xs) out.add(x instanceof Var v ? f.apply(v) : x);
        return List.copyOf(out);
    }
}
