package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.ad.AdError;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.DType;
import kina.ir.KinaException;
import kina.ir.Positions;
import kina.ir.Printer;
import kina.ir.Program;
import kina.plan.Plan;
import kina.syntax.Parser;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.ShrinkingMode;

/**
 * Random well-typed programs over the whole vocabulary ({@link ProgramGen}) through the whole
 * chain: the checker accepts each; print → parse gives the same IR back; transform_ad answers a
 * gradient program, or the named refusal the program plants; the recorded program runs to the
 * oracle's bits; the compiled plan runs to the interpreter's bits; the printed gradient program
 * parses, checks and prints the same (a quarter of them); and the gradient (or forward mode's J·t) agrees with
 * central finite differences in F64 (an F32 program's F64 twin). The seed is fixed; each try
 * generates {@code kina.fuzz.scale} programs (1 by default; README: the long run).
 */
class WholeChainFuzzTest {
    static final int SCALE = Integer.getInteger("kina.fuzz.scale", 1);

    /** Programs generated so far in this JVM, and how many transform_ad refused as planted. */
    static int generated, refused, forward;

    @net.jqwik.api.lifecycle.AfterContainer
    static void report() {
        System.out.printf("whole-chain fuzz: %d programs through the chain (%d refused as planted, %d in forward mode)%n",
                generated, refused, forward);
    }

    @Property(tries = 2000, seed = "2511", shrinking = ShrinkingMode.OFF, edgeCases = EdgeCasesMode.NONE)
    void everyGeneratedProgramPassesTheWholeChain(@ForAll long seed) {
        for (int k = 0; k < SCALE; k++) {
            long s = seed + 0x9E3779B97F4A7C15L * k;
            DType dt = (s & 1) == 0 ? DType.F64 : DType.F32;
            ProgramGen.Generated g = ProgramGen.generate(s, dt);
            try {
                List<Tensor> out = chain(g);
                if (out != null) finiteDifferences(dt == DType.F64 ? g : ProgramGen.generate(s, DType.F64), dt == DType.F64 ? out : null);
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("seed " + s + " " + dt + ": " + e.getMessage() + "\n" + g.source(), e);
            }
            generated++;
        }
    }

    /** The whole chain but finite differences; answers the recorded program's outputs, or null when refused as planted. */
    static List<Tensor> chain(ProgramGen.Generated g) {
        Program parsed = Parser.parse("gen.kina", g.source());
        roundTrips(parsed);
        Program checked = Checker.check(parsed);
        Program t;
        try {
            t = TransformAd.transform(checked);
        } catch (AdError e) {
            assertThat(g.refusal()).as("refused without a planted refusal: %s", e.oneLine()).isNotNull();
            assertThat(e.refusal()).as(e.oneLine()).isInstanceOf(g.refusal());
            assertThat(e.oneLine()).contains("reverseMode: let ").doesNotContain("\n");
            refused++;
            return null;
        }
        assertThat(g.refusal()).as("the planted refusal was not refused").isNull();
        if (g.mode() == ProgramGen.Mode.FORWARD) forward++;
        List<Tensor> rec = Programs.flatten(new Interpreter(g.inputs()).run(t));
        AdExamplesTest.assertBits(rec, Programs.oracle(checked, g.inputs()), "recorded vs oracle");
        Plan plan = Plan.compile(t);
        AdExamplesTest.assertBits(plan.run(g.inputs()), rec, "plan vs interpreter");
        if ((g.source().hashCode() & 3) == 0) {                 // a quarter of them: the rest of the suite reparses gradients too
            String printed = Printer.print(t);
            Program again = Checker.check(Parser.parse("grad.kina", printed));
            assertThat(Printer.print(again)).as("the printed gradient program prints the same").isEqualTo(printed);
        }
        return rec;
    }

    /** parse(print(p)) is p, positions aside, and print is a fixpoint. */
    static void roundTrips(Program p) {
        String printed = Printer.print(p);
        Program q = Parser.parse("printed.kina", printed);
        assertThat(Positions.strip(q).body()).as("parse(print(p))\n%s", printed).isEqualTo(Positions.strip(p).body());
        assertThat(Printer.print(q)).isEqualTo(printed);
    }

    /**
     * Reverse mode: ⟨∇F, v⟩ against (F(x + hv) − F(x − hv)) / 2h, F the sum of f's result, for a
     * random direction v of ±1 over every floating parameter. Forward mode: J·t against
     * (f(x + ht) − f(x − ht)) / 2h, element by element. Relative 1e-6 (DESIGN §9.8). {@code out}: the
     * recorded program's outputs, or null to run it here.
     */
    static void finiteDifferences(ProgramGen.Generated g, List<Tensor> out) {
        Program fwd = TransformAd.transform(Checker.check(Parser.parse("fwd.kina", g.forward())));
        if (out == null) out = Programs.recorded(Checker.check(Parser.parse("gen.kina", g.source())), g.inputs());
        double h = 1e-6;
        if (g.mode() == ProgramGen.Mode.FORWARD) {
            Map<String, Tensor> dir = new HashMap<>();
            for (int i = 0; i < g.params().size(); i++) dir.put(g.params().get(i), g.inputs().get(g.tangents().get(i)));
            Tensor plus = (Tensor) value(fwd, shifted(g.inputs(), dir, h)), minus = (Tensor) value(fwd, shifted(g.inputs(), dir, -h));
            Tensor jt = out.get(1);
            for (int j = 0; j < jt.size(); j++) {
                double fd = (plus.get(j) - minus.get(j)) / (2 * h);
                assertThat(Math.abs(fd - jt.get(j)) / Math.max(1, Math.abs(jt.get(j))))
                        .as("J·t[%d]: finite difference %s vs forward mode %s", j, fd, jt.get(j)).isLessThan(1e-6);
            }
            return;
        }
        SplittableRandom r = new SplittableRandom(g.source().hashCode());
        for (int d = 0; d < 1; d++) {
            Map<String, Tensor> dir = new HashMap<>();
            double dot = 0, scale = 0;
            for (int i = 0; i < g.params().size(); i++) {
                Tensor x = g.inputs().get(g.params().get(i)), gr = out.get(1 + i);
                double[] v = new double[x.size()];
                for (int j = 0; j < v.length; j++) {
                    v[j] = r.nextBoolean() ? 1 : -1;
                    dot += gr.get(j) * v[j];
                    scale += Math.abs(gr.get(j));
                }
                dir.put(g.params().get(i), Tensor.ofFloats(x.type(), v));
            }
            double fd = (sum(value(fwd, shifted(g.inputs(), dir, h))) - sum(value(fwd, shifted(g.inputs(), dir, -h)))) / (2 * h);
            assertThat(Math.abs(fd - dot) / Math.max(1, scale))
                    .as("direction %d: finite difference %s vs <gradient, v> %s", d, fd, dot).isLessThan(1e-6);
        }
    }

    private static Value value(Program p, Map<String, Tensor> in) { return new Interpreter(in).run(p); }

    private static double sum(Value v) {
        double s = 0;
        for (Tensor t : Programs.flatten(v)) for (int i = 0; i < t.size(); i++) s += t.get(i);
        return s;
    }

    /** The inputs with each parameter p moved by step·dir[p]. */
    private static Map<String, Tensor> shifted(Map<String, Tensor> in, Map<String, Tensor> dir, double step) {
        Map<String, Tensor> out = new HashMap<>(in);
        dir.forEach((name, v) -> {
            Tensor x = in.get(name);
            double[] d = x.floats().clone();
            for (int j = 0; j < d.length; j++) d[j] += step * v.get(j);
            out.put(name, Tensor.ofFloats(x.type(), d));
        });
        return out;
    }

    /** A few generated programs that must not change silently: each passes, and transform_ad is exercised. */
    @org.junit.jupiter.api.Test
    void theGeneratorWritesValidProgramsOfEveryKind() {
        int seen = 0;
        for (long s = 0; s < 60; s++) {
            ProgramGen.Generated g = ProgramGen.generate(s, DType.F64);
            try {
                List<Tensor> out = chain(g);
                if (out != null) finiteDifferences(g, out);
            } catch (AssertionError | KinaException e) {
                throw new AssertionError("seed " + s + ": " + e.getMessage() + "\n" + g.source(), e);
            }
            seen++;
        }
        assertThat(seen).isEqualTo(60);
    }
}
