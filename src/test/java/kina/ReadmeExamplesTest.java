package kina;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kina.eval.Tensor;
import kina.io.TensorJson;
import kina.ir.DType;
import kina.ir.TensorType;
import kina.model.Config;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The README's JSON examples read as it says they do, and it links no file outside the project. */
class ReadmeExamplesTest {
    static List<String> jsonBlocks() throws Exception {
        Matcher m = Pattern.compile("```json\\n(.*?)```", Pattern.DOTALL).matcher(Files.readString(Path.of("README.md")));
        List<String> out = new ArrayList<>();
        while (m.find()) out.add(m.group(1));
        return out;
    }

    @Test void theConfigExampleLoads() throws Exception {
        String cfg = jsonBlocks().getFirst().strip();
        Config c = Config.fromJson("README", new ObjectMapper().readTree(cfg), "?");
        assertThat(c.kvHeads()).isEqualTo(2);
        assertThat(c.headDim()).isEqualTo(16);
    }

    @Test void theTensorExamplesRead(@TempDir Path dir) throws Exception {
        String[] lines = jsonBlocks().get(1).strip().split("\n");
        Tensor a = TensorJson.read(Files.writeString(dir.resolve("a.json"), lines[0]), TensorType.host(DType.F32, 2, 3));
        Tensor b = TensorJson.read(Files.writeString(dir.resolve("b.json"), lines[1]), TensorType.host(DType.I64, 1, 4));
        assertThat(a.floats()).containsExactly(1.5, -2.0, 0.25, 3, 4, 5);
        assertThat(b.ints()).containsExactly(3, 1, 3, 7);
    }

    /** Every method the parser reads is in the README's language section (as {@code .name(} or {@code `name(}). */
    @Test void theReadmeNamesEveryMethod() throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        List<String> missing = kina.ir.Syntax.methodNames().stream()
                .filter(n -> !readme.contains("." + n + "(") && !readme.contains("`" + n + "(")).toList();
        assertThat(missing).as("methods the README does not show").isEmpty();
    }

    @Test void theDocumentsStandOnTheirOwn() throws Exception {
        for (Path p : List.of(Path.of("README.md"), Path.of("docs/interop.md"), Path.of("docs/java-api.md")))
            assertThat(Files.readString(p)).as(p.toString()).doesNotContain("../shared").doesNotContain("/work/");
    }
}
