package kina.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import kina.ad.TransformAd;
import kina.eval.Interpreter;
import kina.eval.Oracle;
import kina.eval.Tensor;
import kina.eval.Value;
import kina.io.Npy;
import kina.ir.KinaException;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.mlir.Native;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kina run FILE [--input NAME=PATH]… [--random-inputs SEED] [--out DIR] [--engine E]}: runs a
 * program on the host interpreter, or compiled to a shared object ({@code --engine native}). Handles
 * are run as transformed by transform_ad (the product path), or by the oracle's reverse scan with
 * {@code --oracle}.
 */
@Command(name = "run", description = "Run a .kina program on the host interpreter (or natively, --engine native) and print its result.")
final class RunCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The .kina source.") Path file;
    @Option(names = "--input", paramLabel = "NAME=PATH", description = "Payload of an input let or fn parameter, as .npy or .json.")
    Map<String, Path> inputs = new LinkedHashMap<>();
    @Option(names = "--random-inputs", paramLabel = "SEED", description = "Fill inputs not given with random values: floats in [-1, 1), indices in range.")
    Long randomSeed;
    @Option(names = "--out", paramLabel = "DIR", description = "Write the results as .npy: result.npy, or result_0.npy, result_1.npy, … for a tuple.")
    Path out;
    @Option(names = "--oracle", description = "Run reverse mode by the eager reverse scan instead of the recorded gradient.")
    boolean oracle;
    @Option(names = "--cotangent-inputs", description = "Seed each handle of fn f with an input f_seed (give it with --input f_seed=FILE) instead of ones.")
    boolean cotangentInputs;
    @Option(names = "--detect-anomaly", description = "Stop at the first let (forward or backward) whose output holds a NaN or an Inf, naming it and its op.")
    boolean detectAnomaly;
    @Option(names = "--full", description = "Print every element of large tensors.")
    boolean full;
    @Option(names = "--engine", paramLabel = "ENGINE", defaultValue = "interpreter",
            description = "interpreter, or native: lowered to MLIR and built into a cached shared object (needs mlir-19-tools and clang-19) (default: ${DEFAULT-VALUE}).")
    String engine;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    /**
     * --out must be a directory or creatable as one: its nearest existing ancestor (itself included)
     * must be a writable directory. Checked before the program runs; nothing is created here.
     */
    private static void checkOut(Path out) {
        Path p = out.toAbsolutePath().normalize();
        while (p != null && !Files.exists(p)) p = p.getParent();
        if (p == null) return;
        if (!Files.isDirectory(p))
            throw new KinaException(null, "--out " + out + ": " + (p.equals(out.toAbsolutePath().normalize()) ? "" : p + " ")
                    + "is not a directory (the results are written into --out as .npy files)");
        if (!Files.isWritable(p)) throw new KinaException(null, "--out " + out + ": " + p + " is not writable");
    }

    @Override public Integer call() {
        if (out != null) checkOut(out);                                      // before the run, which may be long
        if (!engine.equals("interpreter") && !engine.equals("native"))
            throw new KinaException(null, "--engine " + engine + ": unknown (interpreter or native)");
        boolean nat = engine.equals("native");
        Program checked = Source.load(file, common.cap);
        if (oracle && cotangentInputs)
            throw new KinaException(null, "--cotangent-inputs works on the recorded gradient; drop --oracle");
        if (nat && (oracle || cotangentInputs))
            throw new KinaException(null, "--engine native runs the recorded gradient with the seed ones; drop " + (oracle ? "--oracle" : "--cotangent-inputs"));
        if (nat && detectAnomaly)
            throw new KinaException(null, "--detect-anomaly checks each let as the interpreter runs it; the native engine runs the program as one call: drop --engine native");
        Program prog = oracle ? checked : TransformAd.transform(checked, cotangentInputs);
        Map<String, TensorType> declared = new LinkedHashMap<>(Inputs.declared(prog));
        Rhs.Fn entry = null;
        if (prog.body().binding(prog.body().result()) != null
                && prog.body().binding(prog.body().result()).rhs() instanceof Rhs.Fn fn) {
            entry = fn;
            for (Rhs.Param p : fn.params()) declared.put(p.name().name(), p.type());
        }
        for (String name : inputs.keySet())
            if (name.isBlank())
                throw new KinaException(null, "--input =" + inputs.get(name) + ": no name before '=' (write --input NAME=PATH)");
            else if (!declared.containsKey(name))
                throw new KinaException(null, "--input " + name + ": the program has no input or parameter named " + name
                        + " (it has: " + String.join(", ", declared.keySet()) + ")");
        Map<String, Long> bounds = Inputs.indexBounds(prog);
        SplittableRandom rng = randomSeed == null ? null : new SplittableRandom(randomSeed);
        List<String> missing = new ArrayList<>();
        for (var e : declared.entrySet())
            if (!inputs.containsKey(e.getKey()) && rng == null) missing.add(e.getKey() + " : " + e.getValue());
        if (!missing.isEmpty())
            throw new KinaException(null, "inputs not given: " + String.join(", ", missing)
                    + " (pass --input NAME=FILE.npy for each, or --random-inputs SEED)");
        Map<String, Tensor> given = new HashMap<>();
        for (var e : declared.entrySet()) {
            String name = e.getKey();
            given.put(name, inputs.containsKey(name)
                    ? Inputs.load(name, inputs.get(name), e.getValue(), common.cap)
                    : Inputs.random(name, e.getValue(), bounds.getOrDefault(name, 2L), rng));
        }
        List<Tensor> parts = new ArrayList<>();
        boolean tuple;
        if (nat) {
            Native n = Native.compile(checked);
            parts.addAll(n.run(given));
            tuple = n.entry().outputs().size() != 1;
        } else {
            Interpreter in = new Interpreter(given, new Oracle()).detectAnomaly(detectAnomaly);
            Value result = in.run(prog);
            if (entry != null && result instanceof Value.Closure c) {
                List<Value> args = new ArrayList<>();
                for (Rhs.Param p : entry.params()) args.add(given.get(p.name().name()));
                result = in.call(c, args);
            }
            switch (result) {
                case Tensor t -> parts.add(t);
                case Value.Tuple tup -> {
                    for (int i = 0; i < tup.elems().size(); i++) {
                        if (!(tup.elems().get(i) instanceof Tensor t)) throw new KinaException(null, "result " + i + " is not a tensor");
                        parts.add(t);
                    }
                }
                case Value.Closure ignored -> throw new KinaException(null,
                        "the program's result is a fn; end the program with a call, or give its parameters as inputs");
            }
            tuple = result instanceof Value.Tuple;
        }
        var pw = spec.commandLine().getOut();
        for (int i = 0; i < parts.size(); i++) {
            pw.println((tuple ? "result_" + i : "result") + " : " + parts.get(i).type());
            pw.println(Show.format(parts.get(i), full));
        }
        if (out != null) {
            try {
                Files.createDirectories(out);
            } catch (java.io.IOException e) {
                throw new KinaException(null, "--out " + out + ": cannot create the directory (" + e.getMessage() + ")");
            }
            if (!tuple) Npy.write(out.resolve("result.npy"), parts.getFirst());
            else for (int i = 0; i < parts.size(); i++) Npy.write(out.resolve("result_" + i + ".npy"), parts.get(i));
            pw.println("wrote " + parts.size() + " file(s) to " + out);
        }
        pw.flush();
        return 0;
    }
}
