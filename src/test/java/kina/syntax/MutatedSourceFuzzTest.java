package kina.syntax;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.api.Kina;
import kina.check.Checker;
import kina.eval.ProgramGen;
import kina.ir.DType;
import kina.ir.KinaException;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Syntax;
import kina.plan.Plan;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.ShrinkingMode;

/**
 * Valid sources (generated programs, their printed gradients with the IR-internal forms, their
 * plans with the fusions, the examples, the round-trip generator's programs) mutated: tokens
 * deleted, swapped, duplicated or replaced, dtypes and dims changed (wrong types, huge dims),
 * deep nesting (parentheses, unary minus, method chains, fn literals), long identifiers, bytes
 * that are not UTF-8, control characters, truncation. Each mutant goes through the front end as
 * the command does (strict UTF-8, parse, check) and, when accepted, through transform_ad and the
 * printer and back. Every answer is the source's own one-line error (a KinaException) or success:
 * never another exception, never a stack overflow. Fixed seed; {@code kina.fuzz.scale} mutants
 * per try.
 */
class MutatedSourceFuzzTest {
    static final int SCALE = Integer.getInteger("kina.fuzz.scale", 1);

    /** Mutants tried in this JVM, accepted by the checker, and refused with a one-line error. */
    static int mutants, accepted, errors;

    @net.jqwik.api.lifecycle.AfterContainer
    static void report() {
        System.out.printf("mutated-source fuzz: %d mutants of %d seed sources; %d accepted by the checker, %d one-line errors%n",
                mutants, SEEDS.size(), accepted, errors);
    }

    static final List<String> SEEDS = seeds();

    @Property(tries = 5000, seed = "2512", shrinking = ShrinkingMode.OFF, edgeCases = EdgeCasesMode.NONE)
    void mutatedSourceGetsOnlyOneLineErrors(@ForAll long seed) {
        for (int k = 0; k < SCALE; k++) {
            long s = seed + 0x9E3779B97F4A7C15L * k;
            byte[] mutant = mutate(new SplittableRandom(s));
            try {
                frontEnd(mutant);
            } catch (Throwable e) {
                String text = new String(mutant, StandardCharsets.UTF_8);
                throw new AssertionError("seed " + s + ": " + e + " for the mutant\n"
                        + (text.length() > 4000 ? text.substring(0, 4000) + "…" : text), e);
            }
            mutants++;
        }
    }

    /** The front end over {@code bytes}; a KinaException must be one line. Anything else is thrown. */
    static void frontEnd(byte[] bytes) {
        try {
            String text = Kina.decode("m.kina", bytes);
            Program checked = Checker.check(Parser.parse("m.kina", text));
            accepted++;
            Program t = TransformAd.transform(checked);
            String printed = Printer.print(t);
            Program again = Checker.check(Parser.parse("printed.kina", printed));
            assertThat(Printer.print(again)).isEqualTo(printed);
        } catch (KinaException e) {
            String line = e.oneLine();
            assertThat(line).doesNotContain("\n").contains("error: ");
            assertThat(line.length()).as("a one-line error of readable length: %s", line.length() > 300 ? line.substring(0, 300) : line)
                    .isLessThan(1200);
            errors++;
        }
    }

    // ---- the seed sources -------------------------------------------------------------------------

    private static List<String> seeds() {
        List<String> out = new ArrayList<>();
        for (long s = 0; s < 24; s++) {
            ProgramGen.Generated g = ProgramGen.generate(s, s % 2 == 0 ? DType.F32 : DType.F64);
            out.add(g.source());
            try {
                Program t = TransformAd.transform(Checker.check(Parser.parse("g.kina", g.source())));
                out.add(Printer.print(t));
                if (s % 2 == 0) out.add(Printer.print(Plan.compile(t).program()));
            } catch (KinaException e) {
                // a planted refusal: the source alone
            }
        }
        try (Stream<Path> ex = Files.list(Path.of("examples"))) {
            for (Path p : ex.filter(p -> p.toString().endsWith(".kina")).sorted().toList()) out.add(Files.readString(p));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        for (long s = 0; s < 12; s++) out.add(new RoundTripTest.SourceGen(new Random(s)).program());
        return List.copyOf(out);
    }

    // ---- mutations ------------------------------------------------------------------------------

    private static final Pattern TOKEN = Pattern.compile(
            "\\s+|//[^\\n]*|%?[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|->|.", Pattern.DOTALL);

    private static final List<String> VOCAB = vocab();

    private static List<String> vocab() {
        List<String> v = new ArrayList<>(List.of("let", "in", "fn", "handle", "with", "reverseMode", "forwardMode", "tensor",
                "payload", "ones", "zeros", "fill", "true", "false", "(", ")", "{", "}", "[", "]", "<", ">", ",", ".", ":",
                "=", "+", "-", "*", "/", "@", "->", "host", "device", "0", "1", "-1", "2", "7", "1.5", "1e400", "nan", "inf",
                "axis", "keepdims", "eps", "heads", "kv_heads", "F32", "F64", "I64", "I1", "BF16", "F16", "F8E4M3", "F8E5M2",
                "%", "%0", "%nope", "x", "f", "g", "result"));
        v.addAll(Syntax.methodNames());
        for (Syntax.Form f : Syntax.forms()) if (f.internal()) v.add("%" + f.name());
        return List.copyOf(v);
    }

    private static final String[] HUGE = {"4611686018427387904", "9223372036854775807", "9223372036854775808",
            "99999999999999999999", "2147483647", "2147483648", "1000000000", "65536", "0"};

    /** Each seed split into tokens once (blanks and comments are tokens too, so joining them gives the seed back). */
    private static final List<List<String>> TOKENS = SEEDS.stream().map(MutatedSourceFuzzTest::tokens).toList();

    static byte[] mutate(SplittableRandom r) {
        List<String> t = new ArrayList<>(TOKENS.get(r.nextInt(TOKENS.size())));
        int n = 1 + r.nextInt(3);
        for (int i = 0; i < n; i++) mutateTokens(t, r);
        String src = String.join("", t);
        if (r.nextInt(12) == 0) src = src.substring(0, r.nextInt(src.length() + 1));      // truncated
        byte[] b = src.getBytes(StandardCharsets.UTF_8);
        if (r.nextInt(10) == 0) b = mutateBytes(b, r);
        return b;
    }

    private static List<String> tokens(String s) {
        List<String> out = new ArrayList<>();
        Matcher m = TOKEN.matcher(s);
        while (m.find()) out.add(m.group());
        return out;
    }

    /** Indices of the tokens that are not blanks or comments. */
    private static List<Integer> solid(List<String> t) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) if (!t.get(i).isBlank() && !t.get(i).startsWith("//")) out.add(i);   // "" is blank
        return out;
    }

    private static void mutateTokens(List<String> t, SplittableRandom r) {
        List<Integer> solid = solid(t);
        if (solid.isEmpty()) { t.add(")"); return; }
        int at = solid.get(r.nextInt(solid.size()));
        switch (r.nextInt(16)) {
            case 0, 1 -> t.set(at, "");                                                    // delete
            case 2 -> {                                                                    // swap
                int other = solid.get(r.nextInt(solid.size()));
                String x = t.get(at);
                t.set(at, t.get(other));
                t.set(other, x);
            }
            case 3 -> t.set(at, t.get(at) + " " + t.get(at));                              // duplicate
            case 4, 5 -> t.set(at, VOCAB.get(r.nextInt(VOCAB.size())));                    // replace
            case 6 -> {                                                                    // a wrong dtype
                List<Integer> ds = where(t, x -> DType.parse(x) != null);
                if (!ds.isEmpty()) t.set(ds.get(r.nextInt(ds.size())), DType.values()[r.nextInt(DType.values().length)].spelling());
            }
            case 7 -> {                                                                    // a huge or changed number
                List<Integer> ns = where(t, x -> Character.isDigit(x.charAt(0)));
                if (!ns.isEmpty()) t.set(ns.get(r.nextInt(ns.size())), r.nextBoolean() ? HUGE[r.nextInt(HUGE.length)] : String.valueOf(r.nextInt(6)));
            }
            case 8 -> {                                                                    // deep nesting
                int depth = r.nextBoolean() ? 200 + r.nextInt(120) : 300 + r.nextInt(3_000);
                String x = t.get(at);
                t.set(at, switch (r.nextInt(5)) {
                    case 0 -> "(".repeat(depth) + x + ")".repeat(depth);
                    case 1 -> "-".repeat(depth) + x;
                    case 2 -> x + ".exp()".repeat(depth);
                    case 3 -> "fn() -> tensor<F32, [], @host> {".repeat(Math.min(depth, 3000)) + x + "}".repeat(Math.min(depth, 3000));
                    default -> "f(".repeat(depth) + x + ")".repeat(depth);
                });
            }
            case 9 -> {                                                                    // a long identifier, everywhere or once
                List<Integer> ids = where(t, x -> Character.isLetter(x.charAt(0)) && !Syntax.KEYWORDS.contains(x));
                if (!ids.isEmpty()) {
                    String name = t.get(ids.get(r.nextInt(ids.size())));
                    String longName = name + "_" + "x".repeat(100 + r.nextInt(5_000));
                    if (r.nextBoolean()) { for (int i : ids) if (t.get(i).equals(name)) t.set(i, longName); }
                    else t.set(at, longName);
                }
            }
            case 10 -> t.set(at, t.get(at) + new String(Character.toChars(
                    new int[] {0, 7, 0x1b, 0x7f, 0x202e, 0xfeff, 0x00e9, 0x1F600, '\t', '\r', '#', '$', '`', '\\', '"', '\''}[r.nextInt(16)])));
            case 11 -> { for (int i = at; i < t.size(); i++) t.set(i, ""); }             // cut off
            case 12 -> {                                                                   // a shape's dims or a perm changed
                List<Integer> open = where(t, x -> x.equals("["));
                if (!open.isEmpty()) t.set(open.get(r.nextInt(open.size())), "[" + (r.nextBoolean() ? "" : r.nextInt(-3, 9) + ", "));
            }
            case 13 -> t.set(at, "@device");                                               // a placement
            case 14 -> {                                                                   // a let moved after its uses
                List<Integer> lets = where(t, x -> x.equals("let"));
                if (lets.size() >= 2) {
                    int a = lets.get(r.nextInt(lets.size())), b = lets.get(r.nextInt(lets.size()));
                    String x = t.get(a);
                    t.set(a, t.get(b));
                    t.set(b, x);
                }
            }
            default -> t.set(at, t.get(at).toUpperCase(java.util.Locale.ROOT));
        }
    }

    private static List<Integer> where(List<String> t, java.util.function.Predicate<String> p) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) if (!t.get(i).isEmpty() && p.test(t.get(i))) out.add(i);
        return out;
    }

    /** Bytes that are not UTF-8: a stray continuation or lead byte, an overlong form, a surrogate, a cut character. */
    private static byte[] mutateBytes(byte[] b, SplittableRandom r) {
        byte[][] bad = {{(byte) 0xff}, {(byte) 0x80}, {(byte) 0xc3}, {(byte) 0xc0, (byte) 0xaf}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
                {(byte) 0xf4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, {(byte) 0xe2, (byte) 0x82}, {(byte) 0xfe, (byte) 0xfe}};
        byte[] ins = bad[r.nextInt(bad.length)];
        int at = r.nextInt(b.length + 1);
        byte[] out = new byte[b.length + ins.length];
        System.arraycopy(b, 0, out, 0, at);
        System.arraycopy(ins, 0, out, at, ins.length);
        System.arraycopy(b, at, out, at + ins.length, b.length - at);
        return out;
    }
}
