package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import kina.ad.Ops;
import kina.ad.Primals;
import kina.ad.Pullback;
import kina.ad.Recording;
import kina.ad.Refusal;
import kina.ad.Vjp;
import kina.check.Checker;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Printer;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;
import org.junit.jupiter.api.Test;

/**
 * Closure under adjoints, over the whole instruction set: every record of the sealed {@link Instr}
 * has a sample (the gradcheck cases), every rule is recorded on its samples, and every instruction
 * a recording emits, followed to a fixpoint, has a rule itself. The only refusals allowed are the
 * documented NoGradient ones of instructions with discrete results (argmax, clamp, requant,
 * greater, integer relu), which no cotangent reaches. Run against a rule table with one rule
 * deleted, the check fails and names the rule that records the orphan.
 */
class ClosureTest {

    /** A table of VJP rules, in the recording reading: {@link Vjp#of}, or one with a rule deleted. */
    @FunctionalInterface
    interface Rules {
        Pullback<Var> of(Instr ins, Primals<Var> p, Var y, Var g, Ops<Var> o);
    }

    static final Rules VJP = Vjp::of;

    private static final Set<Class<?>> CONSTANTS = Set.of(Instr.Input.class, Instr.Literal.class, Instr.Fill.class);

    /** An instruction to check, with the types of every value in its scope and how it was reached. */
    private record Job(Instr ins, Var y, Map<Var, TensorType> types, String how) {}

    /** Every way {@code rules} is not closed, one line each; empty when it is. */
    static List<String> failures(Rules rules) {
        List<String> out = new ArrayList<>();
        Set<Class<?>> sampled = new HashSet<>();
        Set<String> seen = new HashSet<>();
        Deque<Job> work = new ArrayDeque<>();
        for (String op : GradCheckTest.OPS)
            for (long seed = 0; seed < 6; seed++) {
                GradCheckTest.Case c = GradCheckTest.Case.make(op, new SplittableRandom(seed * 31 + 3), DType.F64);
                Rhs.Fn f = (Rhs.Fn) c.program.body().lets().getFirst().rhs();
                Map<Var, TensorType> types = new HashMap<>();
                Checker.scope(f).forEach((v, t) -> { if (t instanceof TensorType tt) types.put(v, tt); });
                for (Let l : f.body().lets())
                    if (l.rhs() instanceof Instr ins) {
                        sampled.add(ins.getClass());
                        work.add(new Job(ins, l.var(), types, "the sample " + Printer.rhs(ins) + " (case " + op + ")"));
                    }
            }
        for (Class<? extends Instr> k : Instrs.records())
            if (!CONSTANTS.contains(k) && !Instr.Fused.class.isAssignableFrom(k) && !sampled.contains(k))   // fusions: made after AD, refused by name
                out.add(k.getSimpleName() + ": no sample exercises its rule");
        while (!work.isEmpty()) {
            Job j = work.poll();
            TensorType yt = j.types().get(j.y());
            // every sample is recorded; an emitted instruction once per (instruction, dtype, rule that records it)
            if (!j.how().startsWith("the sample")
                    && !seen.add(j.ins().getClass().getSimpleName() + "/" + yt.dtype() + "/" + j.how().substring(0, j.how().indexOf("'s rule")))) continue;
            Recording rec = new Recording(j.types(), names(j.types()));
            Primals<Var> p = new Primals<>() {
                @Override public Var of(Var v) { return v; }
                @Override public TensorType type(Var v) { return rec.type(v); }
            };
            TensorType gt = yt.dtype().floating() ? yt : yt.withDType(DType.F64);
            Pullback<Var> r = rules.of(j.ins(), p, j.y(), rec.fill(gt, 1.0), rec);
            if (r instanceof Pullback.Refused<Var>(Refusal why)) {
                if (!yt.dtype().floating() && why instanceof Refusal.NoGradient) continue;    // documented: no cotangent reaches it
                out.add(j.how() + ": " + j.ins().op() + " has no rule (" + why.message() + ")");
                continue;
            }
            Map<Var, TensorType> after = new HashMap<>(j.types());
            List<Let> emitted = rec.lets();
            for (Let l : emitted) after.put(l.var(), l.tensorType());
            for (Let l : emitted)
                if (l.rhs() instanceof Instr e && !CONSTANTS.contains(e.getClass()))
                    work.add(new Job(e, l.var(), after, j.ins().op() + "'s rule records " + Printer.rhs(e)));
        }
        return List.copyOf(new LinkedHashSet<>(out));
    }

    private static Set<String> names(Map<Var, TensorType> types) {
        Set<String> n = new HashSet<>();
        for (Var v : types.keySet()) n.add(v.name());
        return n;
    }

    @Test void theVjpRulesAreClosedUnderAdjoints() {
        assertThat(failures(VJP)).isEmpty();
    }

    /** rules with the rule of {@code deleted} refused as not derived. */
    static Rules without(Class<? extends Instr> deleted) {
        return (ins, p, y, g, o) -> deleted.isInstance(ins) ? Pullback.refuse(new Refusal.NotDerived(ins.op())) : Vjp.of(ins, p, y, g, o);
    }

    @Test void deletingARuleThatOtherRulesRecordFailsTheCheck() {
        assertThat(failures(without(Instr.ScatterAlongAxis.class)))
                .anyMatch(l -> l.startsWith("take_along_axis's rule records %scatter_along_axis(")
                        && l.endsWith(": scatter_along_axis has no rule (scatter_along_axis: not derived (transform_ad has no VJP rule for scatter_along_axis))"));
        assertThat(failures(without(Instr.Exp.class))).anyMatch(l -> l.startsWith("log_softmax's rule records ") && l.contains("exp has no rule"));
        assertThat(failures(without(Instr.AttentionProduct.class)))
                .anyMatch(l -> l.startsWith("attention_lse's rule records %attention_qk(") && l.contains("has no rule"));
        // slice ↔ pad, concat → slices
        assertThat(failures(without(Instr.Pad.class))).anyMatch(l -> l.startsWith("slice's rule records ") && l.contains("pad has no rule"));
        assertThat(failures(without(Instr.Slice.class))).anyMatch(l -> l.startsWith("pad's rule records ") && l.contains("slice has no rule"))
                .anyMatch(l -> l.startsWith("concat's rule records ") && l.contains("slice has no rule"));
        assertThat(failures(without(Instr.AttentionGrad.class)))
                .anyMatch(l -> l.startsWith("attention's rule records %attention_dq(") && l.contains("has no rule"));
    }

    @Test void deletingARuleOfADiscreteResultIsADocumentedRefusal() {
        // greater has no gradient by design (NoGradient, an I1 result): refusing it by NoGradient changes nothing
        Rules noGreater = (ins, p, y, g, o) -> ins instanceof Instr.Greater
                ? Pullback.refuse(new Refusal.NoGradient("greater", "piecewise constant")) : Vjp.of(ins, p, y, g, o);
        assertThat(failures(noGreater)).isEmpty();
        // but NotDerived on it is not documented
        assertThat(failures(without(Instr.Greater.class))).anyMatch(l -> l.contains("greater has no rule"));
    }
}
