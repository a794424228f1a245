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
 * Data flows one way (DESIGN §8): each stage imports only the stages before it; nothing imports cli.
 * The Java API (kina.api) sits above eval and plan, below model and cli.
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
            Map.entry("io", Set.of("ir")),
            Map.entry("api", Set.of("ir", "syntax", "check", "ad", "eval", "kernels", "plan")),
            Map.entry("model", Set.of("ir", "syntax", "check", "ad", "eval", "kernels", "plan", "mlir", "io", "api")),
            Map.entry("cli", Set.of("ir", "syntax", "check", "ad", "eval", "kernels", "plan", "mlir", "io", "api", "model")));

    static final Pattern IMPORT = Pattern.compile("^import (?:static )?kina\\.([a-z]+)\\.", Pattern.MULTILINE);
    static final Pattern QUALIFIED = Pattern.compile("\\bkina\\.([a-z]+)\\.[A-Z]");

    @Test void eachStageImportsOnlyTheStagesBeforeIt() throws IOException {
        Path root = Path.of("src/main/java/kina");
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                String pkg = root.relativize(f).getName(0).toString();
                assertThat(ALLOWED).as("a stage not in DESIGN §8: " + pkg).containsKey(pkg);
                String src = Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
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
