package kina;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The repository stands alone: its sources, README, docs, scripts, examples and benchmarks cite no
 * document a clone lacks (a specification's numbered sections, design notes kept outside the
 * repository). A rule is stated where it is used, or linked into docs/. The embedded text corpus
 * (src/main/resources) is data and is not read; bench/HISTORY.md's "§n" are its own sections.
 */
class StandsAloneTest {
    static final Pattern CITATION = Pattern.compile("Section [0-9]+|§|spec-notes|DESIGN|the seeds|\\.\\./shared");
    /** bench/HISTORY.md refers to its own sections as §1, §2, … */
    static final Pattern HISTORY = Pattern.compile("Section [0-9]+|spec-notes|DESIGN|the seeds|\\.\\./shared");
    static final List<String> ROOTS = List.of("src/main/java", "README.md", "docs", "scripts", "examples", "bench");
    static final Pattern TEXT = Pattern.compile(".*\\.(java|md|py|kina|sh)$");

    @Test void nothingCitesADocumentTheRepositoryLacks() throws IOException {
        List<String> found = new ArrayList<>();
        for (String root : ROOTS) {
            try (Stream<Path> files = Files.walk(Path.of(root))) {
                for (Path f : files.filter(Files::isRegularFile).filter(p -> TEXT.matcher(p.toString()).matches()).toList()) {
                    Pattern citation = f.equals(Path.of("bench/HISTORY.md")) ? HISTORY : CITATION;
                    List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
                    for (int i = 0; i < lines.size(); i++) {
                        Matcher m = citation.matcher(lines.get(i));
                        if (m.find()) found.add(f + ":" + (i + 1) + ": " + m.group());
                    }
                }
            }
        }
        assertThat(found).as("citations of documents the repository lacks: state the fact or link into docs/").isEmpty();
    }
}
