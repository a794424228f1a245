package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Var;
import kina.mlir.Emitter;
import kina.mlir.MlirError;
import kina.mlir.MlirTools;
import kina.mlir.Native;
import kina.mlir.Toolchain;
import org.junit.jupiter.api.Test;

/**
 * Random programs and their gradients through the MLIR lowering, from GradCheckTest's generator
 * (one differentiated instruction per program, random shapes, axes, masks and options; it lives in
 * this package for that): mlir-opt-19 accepts a few hundred of them, their recorded gradients cover
 * every instruction record, and one of each op (a few merged per program) runs natively within F32
 * relative 1e-5 (F64 1e-12) of the interpreter.
 */
class MlirRandomProgramsTest {

    /** Programs whose indices are computed (argmax, integer ops): the native engine refuses them. */
    static final Set<String> COMPUTED_INDICES = Set.of("argmax", "int_ops");

    /** Ops per natively built program. */
    static final int GROUP = 8;

    @Test void mlirOptAcceptsRandomProgramsAndTheirGradients() {
        Toolchain.Tools tools = MlirTools.require();
        List<String> modules = new ArrayList<>();
        Set<Class<?>> lowered = new HashSet<>();
        int n = 0;
        for (String op : GradCheckTest.OPS)
            for (long seed = 0; seed < 4; seed++) {
                DType dt = seed % 2 == 0 ? DType.F32 : DType.F64;
                GradCheckTest.Case c = GradCheckTest.Case.make(op, new SplittableRandom(seed * 104729 + op.hashCode()), dt);
                for (Program p : List.of(c.program, c.forward)) {
                    modules.add(Emitter.emit(p).text());
                    collect(TransformAd.transform(p).body(), lowered);
                    // as the plan rewrites it too: its fusions (Instr.Fused) are lowered as well
                    Program planned = kina.plan.Plan.compile(TransformAd.transform(p)).program();
                    modules.add(Emitter.emit(planned).text());
                    collect(planned.body(), lowered);
                    n++;
                }
            }
        for (String ex : List.of("examples/storylm0_train_step.kina", "examples/nll.kina")) {     // literals and inner inputs; attention's fusions
            Program t = TransformAd.transform(Programs.checked(ex, Programs.source(ex, DType.F32)));
            collect(t.body(), lowered);
            Program planned = kina.plan.Plan.compile(t).program();
            modules.add(Emitter.emit(planned).text());
            collect(planned.body(), lowered);
        }
        assertThat(n).isGreaterThanOrEqualTo(300);
        Toolchain.Outcome o = Toolchain.verifyAll(tools, modules);
        assertThat(o.rc()).as("mlir-opt-19 --split-input-file on %d modules:\n%s", n, o.stderr().lines().limit(10).toList()).isZero();
        Set<String> missing = new HashSet<>();
        for (Class<? extends Instr> k : Instrs.records()) if (!lowered.contains(k)) missing.add(k.getSimpleName());
        assertThat(missing).as("instruction records no program lowered").isEmpty();
    }

    @Test void oneOfEachOpRunsNativelyLikeTheInterpreterInF32() { nativeLikeInterpreter(DType.F32, 1e-5); }

    @Test void oneOfEachOpRunsNativelyLikeTheInterpreterInF64() { nativeLikeInterpreter(DType.F64, 1e-12); }

    private static void nativeLikeInterpreter(DType dt, double rtol) {
        MlirTools.require();
        List<GradCheckTest.Case> cases = new ArrayList<>();
        for (String op : GradCheckTest.OPS)
            if (!COMPUTED_INDICES.contains(op)) cases.add(GradCheckTest.Case.make(op, new SplittableRandom(op.hashCode() + 7L), dt));
        // A few ops per program: LLVM's instruction selection is superlinear in the size of the
        // straight-line entry that calls them all.
        for (int from = 0; from < cases.size(); from += GROUP) {
            List<GradCheckTest.Case> group = cases.subList(from, Math.min(cases.size(), from + GROUP));
            Map<String, Tensor> inputs = new HashMap<>();
            Program merged = merge(group, inputs);
            List<Tensor> want = Programs.flatten(new Interpreter(inputs).run(TransformAd.transform(merged)));
            List<Tensor> got = Native.compile(merged).run(inputs);
            MlirTools.assertClose(got, want, rtol, "ops " + from + ".." + (from + group.size() - 1) + " merged " + dt);
        }
    }

    @Test void computedIndicesAreRefusedByTheNativeEngineByName() {
        GradCheckTest.Case c = GradCheckTest.Case.make("argmax", new SplittableRandom(3), DType.F32);
        assertThatThrownBy(() -> Native.compile(c.program)).isInstanceOf(MlirError.class)
                .hasMessageContaining("the native engine cannot check the indices of take_along_axis before the call: "
                        + "they are computed by argmax (let am)");
    }

    private static void collect(Block b, Set<Class<?>> into) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr i) into.add(i.getClass());
            if (l.rhs() instanceof Rhs.Fn fn) collect(fn.body(), into);
        }
    }

    /**
     * The cases' programs side by side in one: case i's fn, inputs (those inside the fn body too) and
     * handle get the suffix _i, each handle is destructured, and the result is the tuple of them all.
     */
    static Program merge(List<GradCheckTest.Case> cases, Map<String, Tensor> inputs) {
        List<Let> top = new ArrayList<>();
        List<Var> all = new ArrayList<>();
        for (int i = 0; i < cases.size(); i++) {
            GradCheckTest.Case c = cases.get(i);
            String sfx = "_" + i;
            c.inputs.forEach((name, t) -> inputs.put(name + sfx, t));
            for (Let l : c.program.body().lets()) {
                switch (l.rhs()) {
                    case Rhs.Fn fn -> top.add(Let.of(new Var(l.var().name() + sfx), renamedInputs(fn, sfx), Pos.NONE));
                    case Instr.Input in -> top.add(Let.of(new Var(l.var().name() + sfx), in, Pos.NONE));
                    case Rhs.Handle h -> {
                        int k = 1 + (int) c.params.stream().filter(p -> p.type().dtype().floating()).count();
                        List<Var> binders = new ArrayList<>();
                        for (int j = 0; j < k; j++) binders.add(new Var("r" + sfx + "_" + j));
                        List<Var> args = h.args().stream().map(a -> new Var(a.name() + sfx)).toList();
                        top.add(new Let(binders, true, new Rhs.Handle(new Var(h.fn().name() + sfx), args), Pos.NONE, null, null));
                        all.addAll(binders);
                    }
                    case Instr _, Rhs.Call _, Rhs.Tuple _ -> throw new IllegalStateException("unexpected top-level let " + l.displayName());
                }
            }
        }
        Var result = new Var("%all");
        top.add(Let.of(result, new Rhs.Tuple(all), Pos.NONE));
        return Checker.check(new Program("merged", new Block(top, result, Pos.NONE)));
    }

    /** The fn with its input lets (rope's tables) renamed name + sfx, and their uses. */
    private static Rhs.Fn renamedInputs(Rhs.Fn fn, String sfx) {
        Map<Var, Var> to = new HashMap<>();
        List<Let> lets = new ArrayList<>();
        for (Let l : fn.body().lets()) {
            if (l.rhs() instanceof Instr.Input in) {
                Var v = new Var(l.var().name() + sfx);
                to.put(l.var(), v);
                lets.add(Let.of(v, in, Pos.NONE));
            } else if (l.rhs() instanceof Instr ins) {
                lets.add(Let.of(l.var(), Instrs.mapOperands(ins, v -> to.getOrDefault(v, v)), Pos.NONE));
            } else {
                throw new IllegalStateException("unexpected let in a case's fn: " + l.displayName());
            }
        }
        return new Rhs.Fn(fn.params(), fn.result(), new Block(lets, fn.body().result(), Pos.NONE));
    }
}
