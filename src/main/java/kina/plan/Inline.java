package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.eval.EvalError;
import kina.eval.Kernels;
import kina.ir.Block;
import kina.ir.Flatten;
import kina.ir.FnScope;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The plan's first stage: a checked, transformed program becomes one flat let-chain of
 * instructions ({@link Flatten}), the program the rewrite table and the schedule work on: calls
 * inlined, tuples and destructuring lets made renames, every name unique. Input lets keep their
 * names (their payloads are supplied by name), so the flat program takes the same inputs and
 * computes the same values, bit for bit, as the one it came from. Its result is the flattened
 * result: a Var, or a tuple let of them. Each flat let is checked for the host here (a dtype or
 * placement the host does not run, a bad literal payload), so that is a compile error.
 */
final class Inline {
    private Inline() {}

    /**
     * The flat program and, for messages, the user's let each flat let came from (a renamed
     * binder still reports under its let's own name).
     */
    record Flat(Program program, Map<Let, Let> source) {}

    /** The flat program of {@code p}; PlanError (naming the let) for a handle left, an unchecked let, a fn result. */
    static Flat of(Program p) {
        Map<Let, Let> source = new IdentityHashMap<>();
        Flatten.Flat f = Flatten.block("the program", p.body(), List.of(), FnScope.NONE, new Flatten.Stage() {
            @Override public Rhs.Fn handle(Let at, Rhs.Handle h, FnScope.Target t) {
                throw new PlanError(at, "handle " + h.fn() + "(…) with " + (h.mode() instanceof Rhs.Mode.ForwardMode ? "forwardMode" : "reverseMode")
                        + " is not planned; transform the program first (kina.ad.TransformAd)");
            }

            @Override public RuntimeException refuse(Let at, String message) { return new PlanError(at, message); }

            @Override public Let emit(Let from, Let flat) {
                Instr ins = (Instr) flat.rhs();
                List<TensorType> types = switch (flat.type()) {
                    case TensorType t -> List.of(t);
                    case Type.Tuple t when t.elems().stream().allMatch(e -> e instanceof TensorType) ->
                            t.elems().stream().map(e -> (TensorType) e).toList();
                    case null, default -> throw new PlanError(from, "the program must be checked first (kina.check)");
                };
                try {
                    for (TensorType t : types) Kernels.requireHost(ins.op(), t);       // @device values and dtypes the host does not run
                    if (ins instanceof Instr.Literal(TensorType lt, var payload)) Kernels.literal(lt, payload);   // a bad payload is a compile error
                } catch (EvalError e) {
                    throw e.at(from);
                }
                Let l = new Let(flat.binders(), flat.destructure(), ins, Pos.NONE, null, flat.type());
                source.put(l, from);
                return l;
            }
        });
        List<Let> lets = new ArrayList<>(f.lets());
        Var result = f.result().getFirst();
        if (f.result().size() > 1) {
            Map<Var, Type> types = new HashMap<>();
            Set<String> names = new HashSet<>();
            for (Let l : lets) {
                for (int i = 0; i < l.binders().size(); i++) {
                    names.add(l.binders().get(i).name());
                    types.put(l.binders().get(i), l.type() instanceof Type.Tuple t ? t.elems().get(i) : l.type());
                }
            }
            String n = "result";
            for (int i = 1; names.contains(n); i++) n = "result_" + i;
            result = new Var(n);
            lets.add(Let.typed(result, new Rhs.Tuple(f.result()), new Type.Tuple(f.result().stream().map(types::get).toList())));
        }
        return new Flat(new Program(p.file(), new Block(lets, result, Pos.NONE)), source);
    }
}
