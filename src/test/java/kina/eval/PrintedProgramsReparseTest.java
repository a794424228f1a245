package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.DType;
import kina.ir.Let;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Var;
import kina.syntax.Parser;
import kina.syntax.SyntaxError;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * What {@code kina grad} prints is a program: for random programs of every instruction (the
 * gradcheck cases, F32 and F64) the transformed program, IR-internal instructions included, prints,
 * parses, checks, prints the same text again (so it is the same IR up to the names of temporaries,
 * which print inline), and runs to the same bits; so does the second-order program of a nested
 * handle, and the printed gradient read back and called where the handle stood is differentiated
 * again to the bits of the nested handle.
 */
class PrintedProgramsReparseTest {

    @Provide Arbitrary<String> ops() { return Arbitraries.of(GradCheckTest.OPS); }

    /** parse(print(p)), checked; asserts it prints the same text. */
    static Program reparsed(Program p) {
        String text = Printer.print(p);
        Program q;
        try {
            q = Checker.check(Parser.parse(p.file(), text));
        } catch (SyntaxError e) {
            throw new AssertionError(e.oneLine() + " in\n" + text, e);
        }
        assertThat(Printer.print(q)).as("print(parse(print(p)))").isEqualTo(text);
        return q;
    }

    @Property(tries = 60)
    void printedGradientsParseCheckAndRunToTheSameBits(@ForAll("ops") String op, @ForAll long seed) {
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            GradCheckTest.Case c = GradCheckTest.Case.make(op, new SplittableRandom(seed), dt);
            Program t = TransformAd.transform(c.program);
            Program q = reparsed(t);
            List<Tensor> want = Programs.flatten(new Interpreter(c.inputs).run(t));
            AdExamplesTest.assertBits(Programs.flatten(new Interpreter(c.inputs).run(q)), want, op + " " + dt + " reparsed");
            // second order: the nested handle's transformed program reads back too
            Program h = Derived.hvp(c);
            Map<String, Tensor> in = Derived.withDirections(c, "dir_", new SplittableRandom(seed + 1));
            Program ht = TransformAd.transform(h);
            List<Tensor> second = Programs.flatten(new Interpreter(in).run(ht));
            AdExamplesTest.assertBits(Programs.flatten(new Interpreter(in).run(reparsed(ht))), second, op + " " + dt + " second order reparsed");
            // and the printed gradient, read back, is differentiated again to the same bits: call its f_grad in place of the handle
            List<Let> fns = q.body().lets().stream().filter(l -> l.rhs() instanceof Rhs.Fn).toList();
            Var grad = fns.getLast().var();
            Program again = Derived.hvp(c, fns, args -> new Rhs.Call(grad, args));
            AdExamplesTest.assertBits(Programs.recorded(again, in), second, op + " " + dt + " printed gradient differentiated again");
        }
    }

    @org.junit.jupiter.api.Test
    void everyOpsGradientReparses() {
        for (String op : GradCheckTest.OPS)
            for (long seed = 0; seed < 4; seed++) printedGradientsParseCheckAndRunToTheSameBits(op, seed * 104729 + 5);
    }
}
