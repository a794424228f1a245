package kina.eval;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.DType;
import kina.ir.Program;
import kina.syntax.Parser;

/** Test helpers: load examples (optionally in F64), run them by both readings. */
final class Programs {
    private Programs() {}

    static String source(String path, DType dtype) {
        try {
            String s = Files.readString(Path.of(path));
            return dtype == DType.F64 ? s.replace("F32", "F64") : s;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The source with everything after the last {@code with reverseMode in} replaced by the tuple
     * of the destructured names: exposes the handle's gradients.
     */
    static String exposeHandle(String src) {
        int at = src.lastIndexOf("with reverseMode in");
        int open = src.lastIndexOf("let (", at);
        int close = src.indexOf(')', open);
        String names = src.substring(open + 4, close + 1);
        return src.substring(0, at) + "with reverseMode in\n" + names + "\n";
    }

    static Program checked(String file, String src) { return Checker.check(Parser.parse(file, src)); }

    /** Runs by the recorded gradient (transform_ad, then the interpreter). */
    static List<Tensor> recorded(Program p, Map<String, Tensor> inputs) {
        return flatten(new Interpreter(inputs).run(TransformAd.transform(p)));
    }

    /** Runs handles by the oracle's eager reverse scan. */
    static List<Tensor> oracle(Program p, Map<String, Tensor> inputs) {
        return flatten(new Interpreter(inputs, new Oracle()).run(p));
    }

    static List<Tensor> flatten(Value v) {
        List<Tensor> out = new ArrayList<>();
        switch (v) {
            case Tensor t -> out.add(t);
            case Value.Tuple tup -> tup.elems().forEach(e -> out.addAll(flatten(e)));
            case Value.Closure c -> throw new AssertionError("program ended in fn " + c.name());
        }
        return out;
    }
}
