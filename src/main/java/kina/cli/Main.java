package kina.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import kina.io.FileCap;
import kina.ir.KinaException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.OverwrittenOptionException;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code kina} command. User errors (bad source, types, refused gradients, run-time traps,
 * bad files) print one line and exit 1; {@code --debug} adds the stack trace. Exit 2 is a usage
 * error (a bad option or argument: one {@code error:} line and a {@code see: kina CMD --help}
 * hint, never the whole usage); 3 an internal error. Every command takes {@code -h/--help}.
 */
@Command(name = "kina", mixinStandardHelpOptions = true, version = "kina 0.1.0",
        description = "A tensor compiler whose reverse mode is a transform of the program.",
        subcommands = {CheckCommand.class, RunCommand.class, GradCommand.class, PlanCommand.class, EmitMlirCommand.class, CompileCommand.class,
                TrainCommand.class, SampleCommand.class, BenchCommand.class, ModelCommand.class, ExportCommand.class, ImportCommand.class,
                CommandLine.HelpCommand.class})
public final class Main implements Callable<Integer> {

    /** Shared by every subcommand: show stack traces; {@code -h/--help} prints the usage, exit 0. */
    static final class Common {
        @Option(names = "--debug", description = "Print the stack trace of an error.")
        boolean debug;
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
        boolean help;
        @CommandLine.Spec(CommandLine.Spec.Target.MIXEE) CommandLine.Model.CommandSpec mixee;

        /** The cap on every file this command reads: {@code --max-file-size}, else {@link FileCap#DEFAULT}. */
        FileCap cap = FileCap.DEFAULT;

        /** Parses {@code --max-file-size} (a size with an optional K, M, G or T suffix) into {@link #cap}. */
        @Option(names = "--max-file-size", paramLabel = "BYTES", description = "Refuse files larger than this (K, M, G or T suffixes; default: 1G).")
        void maxFileSize(String text) {
            long n = FileCap.parseSize(text);
            if (n < 1)
                throw new ParameterException(mixee.commandLine(), "--max-file-size " + text
                        + ": must be a size of at least 1 byte, e.g. 4G, 512M or 1000000");
            cap = new FileCap(n);
        }
    }

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    /** {@code kina} with no command: the usage (which lists the commands) on stderr, and exit 2, a usage error. */
    @Override public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return spec.exitCodeOnInvalidInput();
    }

    public static void main(String[] args) {
        System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /** Runs the command line, writing to {@code out} and {@code err}; answers the exit code. */
    public static int run(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(new Main());
        cl.setOut(out);
        cl.setErr(err);
        boolean debug = java.util.Arrays.asList(args).contains("--debug");
        cl.setExecutionExceptionHandler((ex, line, parsed) -> {
            if (debug) ex.printStackTrace(err);
            if (ex instanceof KinaException k) {
                err.println(k.oneLine());
                return 1;
            }
            err.println("internal error: " + ex + (debug ? "" : " (run with --debug for the stack trace)"));
            return 3;
        });
        cl.setParameterExceptionHandler((ex, unused) -> {
            CommandLine at = ex.getCommandLine() == null ? cl : ex.getCommandLine();
            if (debug) ex.printStackTrace(err);
            err.println("error: " + usageProblem(ex, at));
            err.println("see: " + at.getCommandSpec().qualifiedName() + " --help");
            return at.getCommandSpec().exitCodeOnInvalidInput();
        });
        kina.mlir.Toolchain.notices(line -> {
            err.println(line);
            err.flush();
        });
        try {
            return cl.execute(args);
        } catch (StackOverflowError | OutOfMemoryError e) {
            err.println("error: " + e.getClass().getSimpleName() + " (the program is too large or too deep for this JVM)");
            return 1;
        } catch (NoClassDefFoundError e) {
            if (!String.valueOf(e.getMessage()).startsWith("jdk/incubator/vector/")) throw e;
            if (debug) e.printStackTrace(err);
            err.println("error: " + kina.kernels.VectorApi.MISSING);        // a path that reached a kernel before asking
            return 1;
        } finally {
            kina.mlir.Toolchain.notices(null);
        }
    }

    /**
     * One line for a command-line mistake: what is wrong and how to write it, in place of
     * picocli's message and usage block (its wording also says "option option" for map options).
     */
    static String usageProblem(ParameterException ex, CommandLine at) {
        String cmd = at.getCommandSpec().qualifiedName();
        ArgSpec arg = ex.getArgSpec();
        String value = ex.getValue();
        String msg = ex.getMessage() == null ? "" : ex.getMessage();
        if (ex instanceof UnmatchedArgumentException u) {
            List<String> unmatched = u.getUnmatched();
            String first = unmatched.isEmpty() ? "?" : unmatched.getFirst();
            List<String> maybe = u.getSuggestions();
            String hint = maybe.isEmpty() ? "" : " (did you mean " + String.join(" or ", maybe.subList(0, Math.min(3, maybe.size()))) + "?)";
            if (u.isUnknownOption()) return "unknown option " + first + " for " + cmd + hint;
            if (!at.getSubcommands().isEmpty() && at.getCommandSpec().positionalParameters().isEmpty())
                return "unknown command '" + first + "'" + hint + "; the commands are "
                        + String.join(", ", at.getSubcommands().keySet());
            return "unexpected argument '" + first + "' for " + cmd + hint;
        }
        if (ex instanceof MissingParameterException m && !m.getMissing().isEmpty()) {
            ArgSpec miss = m.getMissing().getFirst();
            if (miss instanceof OptionSpec o && msg.contains("for option"))
                return o.longestName() + " needs a value: " + o.longestName() + " " + o.paramLabel();
            String what = miss instanceof OptionSpec o ? o.longestName() : miss.paramLabel();
            String[] desc = miss.description();
            String about = desc.length == 0 ? "" : " (" + lowerFirst(desc[0].replaceAll("\\.$", "")) + ")";
            return cmd + " needs " + what + about;
        }
        if (ex instanceof OverwrittenOptionException w && w.getOverwritten() instanceof OptionSpec o)
            return o.longestName() + " is given twice; give it once";
        if (arg instanceof OptionSpec o && value != null) {
            String name = o.longestName();
            if (msg.contains("KEY=VALUE") || Map.class.isAssignableFrom(o.type())) {
                String label = o.paramLabel();
                String key = label.contains("=") ? label.substring(0, label.indexOf('=')) : "KEY";
                String val = label.contains("=") ? label.substring(label.indexOf('=') + 1) : "VALUE";
                return name + " takes " + key + "=" + val + ", not '" + value + "' (write " + name + " "
                        + (value.contains("=") ? key : value) + "=" + val + ")";
            }
            String kind = kind(o.type());
            if (kind != null && msg.startsWith("Invalid value"))
                return name + " takes " + kind + (o.paramLabel().startsWith("<") ? "" : " (" + o.paramLabel() + ")")
                        + ", not '" + value + "'";
        }
        return lowerFirst(msg.replace("option option", "option").lines().findFirst().orElse("bad arguments").replaceAll("\\.$", ""));
    }

    /** How to describe a value of type {@code t} to a user; null for types without a short name. */
    private static String kind(Class<?> t) {
        if (t == int.class || t == Integer.class || t == long.class || t == Long.class) return "a whole number";
        if (t == double.class || t == Double.class || t == float.class || t == Float.class) return "a number";
        if (t == Path.class) return "a path";
        return null;
    }

    private static String lowerFirst(String s) {
        return s.isEmpty() || (s.length() > 1 && Character.isUpperCase(s.charAt(1))) ? s
                : s.substring(0, 1).toLowerCase(Locale.ROOT) + s.substring(1);
    }
}
