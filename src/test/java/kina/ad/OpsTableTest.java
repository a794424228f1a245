package kina.ad;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import org.junit.jupiter.api.Test;

/**
 * Ops has exactly one typed method per instruction of the vocabulary (every instruction but the
 * plan's fusions, which only its rewrite table makes), and each builds its own
 * instruction over the values it is given: every typed method is called on a reading that
 * records what it is asked to apply, and the instructions seen must be every record of the sealed
 * type, once each.
 */
class OpsTableTest {
    /** A reading whose values are names: apply answers the instruction's op and remembers it. */
    private static final class Spy implements Ops<String> {
        final List<Instr> applied = new ArrayList<>();

        @Override public TensorType type(String x) { return TensorType.host(DType.F32, 2, 2); }

        @Override public String apply(Instr ins, Function<Var, String> operand) {
            for (Var v : ins.operands()) assertThat(operand.apply(v)).as(ins.op() + " reads " + v).startsWith("arg");
            applied.add(ins);
            return ins.op();
        }
    }

    private static Object sample(Class<?> t, int i) {
        if (t == Object.class) return "arg" + i;                        // T
        if (t == int.class) return 1;
        if (t == long.class) return 1L;
        if (t == double.class) return 0.5;
        if (t == boolean.class) return false;
        if (t == Shape.class) return new Shape(2, 2);
        if (t == Perm.class) return new Perm(new int[] {1, 0});
        if (t == TensorType.class) return TensorType.host(DType.F32, 2, 2);
        if (t == Payload.class) return new Payload(new double[] {1, 2, 3, 4});
        if (t == Optional.class) return Optional.of("arg" + i);
        if (t == Instr.AttnOpts.class) return new Instr.AttnOpts(1, 1, Double.NaN, 0, 0, 0, 0);
        if (t == Instr.AttentionProduct.Form.class) return Instr.AttentionProduct.Form.QK;
        if (t == Instr.AttentionGrad.Wrt.class) return Instr.AttentionGrad.Wrt.Q;
        throw new IllegalArgumentException("no sample of " + t);
    }

    @Test void oneTypedMethodPerInstruction() throws ReflectiveOperationException {
        Spy spy = new Spy();
        Map<Class<?>, String> byRecord = new LinkedHashMap<>();
        for (Method m : Ops.class.getDeclaredMethods()) {
            if (!m.isDefault() || Modifier.isStatic(m.getModifiers()) || m.getName().equals("named")) continue;
            Object[] args = new Object[m.getParameterCount()];
            for (int i = 0; i < args.length; i++) args[i] = sample(m.getParameterTypes()[i], i);
            int before = spy.applied.size();
            m.invoke(spy, args);
            assertThat(spy.applied.size()).as(m.getName() + " applies one instruction").isEqualTo(before + 1);
            String had = byRecord.put(spy.applied.getLast().getClass(), m.getName());
            assertThat(had).as("two typed methods build " + spy.applied.getLast().op() + ": " + had + ", " + m.getName()).isNull();
        }
        List<Class<? extends Instr>> vocabulary = Instrs.records().stream()
                .filter(k -> !Instr.Fused.class.isAssignableFrom(k)).toList();         // the plan's fusions are made by its rewrites
        assertThat(byRecord.keySet()).containsExactlyInAnyOrderElementsOf(vocabulary);
    }
}
