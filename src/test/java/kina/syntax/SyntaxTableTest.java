package kina.syntax;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Perm;
import kina.ir.Pos;
import kina.ir.Positions;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.Syntax;
import kina.ir.TensorType;
import kina.ir.Var;
import org.junit.jupiter.api.Test;

/**
 * The printer/parser table covers the vocabulary: every instruction record is grammar (operators,
 * inputs, literals, fills) or has a form, and each form, the IR-internal ones ({@code %name(…)})
 * included, prints what it parses. The set of records
 * comes from the sealed type, so an instruction added without a form fails here.
 */
class SyntaxTableTest {
    private static final Set<Class<?>> GRAMMAR = Set.of(Instr.Input.class, Instr.Literal.class, Instr.Fill.class,
            Instr.Neg.class, Instr.Add.class, Instr.Sub.class, Instr.Mul.class, Instr.Div.class, Instr.Matmul.class);

    /** Sample arguments of a form: tensors a, b, c…, shape [2, 3], perm [1, 0], type F32 [2, 3]; required keywords 1 / true / 2.0. */
    private static Syntax.Args sample(Syntax.Form f) {
        List<Object> pos = new ArrayList<>();
        int name = 0;
        for (Syntax.Arg a : f.positional())
            pos.add(switch (a) {
                case TENSOR, OPT_TENSOR -> new Var(String.valueOf((char) ('a' + name++)));
                case TENSORS -> List.of(new Var("p" + name++), new Var("q" + name++));
                case SHAPE -> new Shape(2, 3);
                case PERM -> new Perm(new int[] {1, 0});
                case TYPE -> TensorType.host(DType.F32, 2, 3);
                case FN -> {
                    TensorType t = TensorType.host(DType.F32, 2, 3);
                    yield new Rhs.Fn(List.of(new Rhs.Param(new Var("x0"), t, Pos.NONE), new Rhs.Param(new Var("x1"), t, Pos.NONE)), t,
                            new Block(List.of(Let.of(new Var("r"), new Instr.Add(new Var("x0"), new Var("x1")), Pos.NONE)), new Var("r"), Pos.NONE));
                }
            });
        Map<String, Object> kw = new LinkedHashMap<>();
        for (Syntax.Kw k : f.keywords())
            kw.put(k.name(), k.dflt() != null ? k.dflt() : switch (k.kind()) {
                case INT -> 1;
                case BOOL -> true;
                case NUMBER -> 2.0;
            });
        return new Syntax.Args(pos, kw);
    }

    @Test void everyInstructionIsGrammarOrHasAForm() {
        Set<Class<?>> covered = new HashSet<>(GRAMMAR);
        for (Syntax.Form f : Syntax.forms()) covered.add(f.build().apply(sample(f)).getClass());
        for (Class<? extends Instr> k : Instrs.records()) assertThat(covered).as(k.getSimpleName() + " has no surface form").contains(k);
    }

    @Test void eachFormTakesApartWhatItBuildsAndPrintsWhatTheParserReads() {
        for (Syntax.Form f : Syntax.forms()) {
            Instr ins = f.build().apply(sample(f));
            assertThat(f.build().apply(f.parts().apply(ins))).as(f.name()).isEqualTo(ins);
            if (f.name().equals("row")) continue;                     // an alias: prints as gather
            assertThat(Syntax.of(ins)).as(f.name()).isSameAs(f);
            Program p = new Program("t.kina", new Block(List.of(Let.of(new Var("y"), ins, Pos.NONE)), new Var("y"), Pos.NONE));
            String text = Printer.print(p);
            assertThat(Positions.strip(Parser.parse("t.kina", text))).as(text).isEqualTo(Positions.strip(p));
        }
    }
}
