package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import kina.check.Checker;
import kina.ir.Positions;
import kina.ir.Printer;
import kina.ir.Program;
import kina.syntax.Parser;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The program builder writes the StoryLM programs the string builder wrote before it: every
 * fixture under fixtures/storylm-programs is that string builder's output ({@code kina model
 * print}, batch 2), and the built program equals it parsed, let for let (temporaries and their
 * owners included, positions aside), and prints the same.
 */
class StoryLmProgramsTest {
    static final Path DIR = Path.of("src/test/resources/fixtures/storylm-programs");
    static final Optimizer ADAMW = new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
    static final Config GQA = new Config("gqa", 256, 64, 4, 2, 16, 1, 0, Config.ROPE_BASE, 1e-6, false);

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        out.add(Arguments.of("storylm0-train-step", StoryLm.toyTrainStep(Config.byName("storylm0"))));
        // the configs the string builder wrote fixtures for
        List<Config> configs = new ArrayList<>(Stream.of("tiny", "small", "medium").map(Config::byName).toList());
        configs.add(GQA);
        for (Config c : configs) {
            out.add(Arguments.of(c.name() + "-train-step-adamw", StoryLm.trainStep(c, 2, ADAMW)));
            out.add(Arguments.of(c.name() + "-loss", StoryLm.lossOnly(c, 2)));
            out.add(Arguments.of(c.name() + "-logits", StoryLm.logits(c)));
            if (c != GQA) out.add(Arguments.of(c.name() + "-train-step-sgd", StoryLm.trainStep(c, 2, new Optimizer.Sgd(0.9, 1.0))));
        }
        Config tiny = Config.byName("tiny");
        out.add(Arguments.of("tiny-train-step-adamw-noclip", StoryLm.trainStep(tiny, 2, new Optimizer.AdamW(0.9, 0.999, 1e-6, 0, 0))));
        out.add(Arguments.of("tiny-train-step-sgd-plain", StoryLm.trainStep(tiny, 2, new Optimizer.Sgd(0, 0))));
        return out.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void builtEqualsTheStringBuiltProgram(String fixture, Program built) {
        Program parsed = Checker.check(Parser.parse(built.file(), source(fixture)));
        assertThat(Printer.print(built)).isEqualTo(Printer.print(parsed));
        assertThat(Positions.strip(built)).isEqualTo(Positions.strip(parsed));
        assertThat(Checker.check(built)).as("the built program checks").isEqualTo(built);
    }

    static String source(String name) {
        Path plain = DIR.resolve(name + ".kina"), gz = DIR.resolve(name + ".kina.gz");
        try {
            if (Files.exists(plain)) return Files.readString(plain);
            try (InputStream in = new GZIPInputStream(Files.newInputStream(gz))) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
