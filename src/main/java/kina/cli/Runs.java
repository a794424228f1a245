package kina.cli;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kina.ir.KinaException;
import kina.model.Checkpoint;

/**
 * Where {@code kina train} writes. Without {@code --out}, each run gets a fresh numbered directory
 * under {@code runs/} ({@code run-0001}, {@code run-0002}, …) and {@code runs/latest}, a symbolic
 * link, is pointed at the newest, so {@code sample} and {@code export} read it by default and an
 * earlier run is never mixed into. An explicit {@code --out} that already holds another run's
 * checkpoints is refused in one line.
 */
final class Runs {
    private Runs() {}

    static final String LATEST = "latest";
    private static final Pattern NUMBERED = Pattern.compile("run-(\\d+)");

    /** A run directory claimed under a runs root; {@link #release} gives it back while nothing is in it. */
    record Claim(Path dir, Path latest, Path previous, String note) {
        /** Removes the directory if the run wrote nothing into it, and points {@code latest} back where it was. */
        void release() {
            try {
                if (!Files.deleteIfExists(dir)) return;
                if (previous == null) Files.deleteIfExists(latest);
                else point(latest, previous);
            } catch (IOException e) {
                // not empty (the run wrote a checkpoint) or gone: leave it
            }
        }
    }

    /**
     * Claims the next numbered run directory under {@code root} (created here, so two runs started
     * together get two) and points {@code root/latest} at it. A {@code latest} that is a directory
     * (a run written before runs were numbered) is first renamed to a number of its own; the claim's
     * note says so.
     *
     * @throws KinaException naming the directory when it cannot be created
     */
    static Claim claim(Path root) {
        Path latest = root.resolve(LATEST);
        try {
            Files.createDirectories(root);
            String note = null;
            if (Files.isDirectory(latest, LinkOption.NOFOLLOW_LINKS)) {
                Path kept = root.resolve(name(next(root)));
                Files.move(latest, kept, StandardCopyOption.ATOMIC_MOVE);
                note = latest + " (a run from before runs were numbered) is now " + kept;
            }
            Path previous = Files.isSymbolicLink(latest) ? Files.readSymbolicLink(latest) : null;
            while (true) {
                Path dir = root.resolve(name(next(root)));
                try {
                    Files.createDirectory(dir);
                } catch (FileAlreadyExistsException taken) {
                    continue;                                    // another run took this number first
                }
                point(latest, dir.getFileName());
                return new Claim(dir, latest, previous, note);
            }
        } catch (IOException e) {
            throw new KinaException(null, root + ": cannot create a run directory there (" + e.getMessage() + ")");
        }
    }

    /**
     * Refuses {@code out} when it holds checkpoints of a run other than {@code resumedRun} (the run
     * directory of {@code --resume}, or null): a new run would mix its steps and loss plot into them.
     *
     * @throws KinaException one line naming the directory, what it holds, and the two ways on
     */
    static void requireNoOtherRun(Path out, Path resumedRun) {
        List<String> steps = steps(out);
        if (steps.isEmpty() && !Files.exists(out.resolve(Checkpoint.LATEST_FILE))) return;
        if (resumedRun != null && same(out, resumedRun)) return;
        String held = steps.isEmpty() ? "a checkpoint pointer (latest)"
                : "the checkpoints of another run (" + steps.getFirst() + (steps.size() > 1 ? " … " + steps.getLast() : "") + ")";
        throw new KinaException(null, "--out " + out + ": holds " + held + "; give a directory of its own to this run, or --resume "
                + out + " to continue that one");
    }

    /** The step directory names under {@code dir}, in order; none when it is not a directory. */
    private static List<String> steps(Path dir) {
        List<String> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) return out;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "step-*")) {
            for (Path p : ds) if (p.getFileName().toString().matches("step-\\d+") && Files.isDirectory(p)) out.add(p.getFileName().toString());
        } catch (IOException e) {
            return out;
        }
        out.sort(null);
        return out;
    }

    private static boolean same(Path a, Path b) {
        try {
            return Files.isSameFile(a, b);
        } catch (IOException e) {
            return a.toAbsolutePath().normalize().equals(b.toAbsolutePath().normalize());
        }
    }

    /** One past the highest run number under {@code root} (1 when there is none). */
    private static int next(Path root) throws IOException {
        int max = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
            for (Path p : ds) {
                Matcher m = NUMBERED.matcher(p.getFileName().toString());
                if (m.matches() && m.group(1).length() < 10) max = Math.max(max, Integer.parseInt(m.group(1)));
            }
        }
        return max + 1;
    }

    private static String name(int n) { return String.format(java.util.Locale.ROOT, "run-%04d", n); }

    /** Points the link {@code latest} at {@code target} (relative to its directory) in one rename. */
    private static void point(Path latest, Path target) throws IOException {
        Path tmp = latest.resolveSibling("." + LATEST + "-" + ProcessHandle.current().pid());
        Files.deleteIfExists(tmp);
        Files.createSymbolicLink(tmp, target);
        Files.move(tmp, latest, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
