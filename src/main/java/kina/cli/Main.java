package kina.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import kina.ir.KinaException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code kina} command. User errors (bad source, types, refused gradients, run-time traps,
 * bad files) print one line and exit 1; {@code --debug} adds the stack trace. Exit 2 is a usage
 * error; 3 an internal error.
 */
@Command(name = "kina", mixinStandardHelpOptions = true, version = "kina 0.1.0",
        description = "A tensor compiler whose reverse mode is a transform of the program.",
        subcommands = {CheckCommand.class, RunCommand.class, GradCommand.class, TrainCommand.class, SampleCommand.class, BenchCommand.class,
                ModelCommand.class, CommandLine.HelpCommand.class})
public final class Main implements Callable<Integer> {

    /** Shared by every subcommand: show stack traces. */
    static final class Common {
        @Option(names = "--debug", description = "Print the stack trace of an error.")
        boolean debug;
    }

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        spec.commandLine().usage(spec.commandLine().getOut());
        return 0;
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
        try {
            return cl.execute(args);
        } catch (StackOverflowError | OutOfMemoryError e) {
            err.println("error: " + e.getClass().getSimpleName() + " (the program is too large or too deep for this JVM)");
            return 1;
        }
    }
}
