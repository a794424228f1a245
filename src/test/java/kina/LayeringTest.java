package kina;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Data flows one way: each stage imports only the stages before it; nothing imports cli. The Java
 * API (kina.api) sits above eval and plan, below model and cli; the file formats (kina.io) read and
 * write eval's tensors for api, model and cli. The hot kernels (kina.kernels) are
 * shared by eval and plan and know no compiler: of kina they use only ir's value types and its
 * user error ({@link #KERNELS_USE}), never an instruction, a let or a program.
 */
class LayeringTest {
    static final Map<String, Set<String>> ALLOWED = Map.ofEntries(
            Map.entry("ir", Set.<String>of()),
            Map.entry("kernels", Set.of("ir")),
            Map.entry("syntax", Set.of("ir")),
            Map.entry("check", Set.of("ir")),
            Map.entry("ad", Set.of("ir", "check")),
            Map.entry("eval", Set.of("ir", "check", "ad", "kernels")),
            Map.entry("plan", Set.of("ir", "check", "ad", "eval", "kernels")),
            Map.entry("mlir", Set.of("ir", "check", "ad", "eval")),
            Map.entry("io", Set.of("ir", "eval")),
            Map.entry("api", Set.of("ir", "syntax", "check", "ad", "eval", "kernels", "plan", "io")),
            Map.entry("model", Set.of("ir", "syntax", "check", "ad", "eval", "kernels", "plan", "mlir", "io", "api")),
            Map.entry("cli", Set.of("ir", "syntax", "check", "ad", "eval", "kernels", "plan", "mlir", "io", "api", "model")));

    /** All that kina.kernels may name of kina outside itself: value types, and the one-line user error. */
    static final Set<String> KERNELS_USE = Set.of("kina.ir.DType", "kina.ir.Shape", "kina.ir.TensorType", "kina.ir.Instr.AttnOpts",
            "kina.ir.KinaException");

    static final Pattern IMPORT = Pattern.compile("^import (?:static )?kina\\.([a-z]+)\\.", Pattern.MULTILINE);
    static final Pattern QUALIFIED = Pattern.compile("\\bkina\\.([a-z]+)\\.[A-Z]");

    /** A name in kina: its package, then its class (nested classes included) or {@code *}. */
    static final Pattern NAME = Pattern.compile("\\bkina\\.([a-z]+)\\.([A-Z]\\w*(?:\\.[A-Z]\\w*)*|\\*)");

    @Test void theKernelsUseOnlyValueTypesOfIr() throws IOException {
        Path root = Path.of("src/main/java/kina/kernels");
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = NAME.matcher(code(f));
                while (m.find()) {
                    if (m.group(1).equals("kernels")) continue;
                    assertThat(KERNELS_USE).as("kernels/%s names %s", f.getFileName(), m.group()).contains(m.group());
                }
            }
        }
    }

    /** The source of f without comments. */
    static String code(Path f) throws IOException {
        return Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
    }

    @Test void eachStageImportsOnlyTheStagesBeforeIt() throws IOException {
        Path root = Path.of("src/main/java/kina");
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                String pkg = root.relativize(f).getName(0).toString();
                assertThat(ALLOWED).as("a stage not in the layering: " + pkg).containsKey(pkg);
                String src = code(f);
                for (Pattern p : new Pattern[] {IMPORT, QUALIFIED}) {
                    Matcher m = p.matcher(src);
                    while (m.find()) {
                        String used = m.group(1);
                        if (used.equals(pkg)) continue;
                        assertThat(ALLOWED.get(pkg)).as("%s uses kina.%s", root.relativize(f), used).contains(used);
                    }
                }
            }
        }
    }
}
