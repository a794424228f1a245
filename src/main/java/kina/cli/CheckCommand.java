package kina.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.ir.Block;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code kina check FILE}: parse and type-check; print each let's type. */
@Command(name = "check", description = "Parse and type-check a .kina file; print each let's type.")
final class CheckCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The .kina source.") Path file;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        Program p = Source.load(file, common.cap);
        var out = spec.commandLine().getOut();
        print(p.body(), "", out);
        out.flush();
        return 0;
    }

    static void print(Block b, String indent, java.io.PrintWriter out) {
        for (Let l : b.lets()) {
            if (l.temporary()) continue;
            String names = l.destructure() ? l.binders().toString().replace('[', '(').replace(']', ')') : l.var().name();
            out.println(indent + names + " : " + l.type());
            if (l.rhs() instanceof Rhs.Fn fn) {
                for (Rhs.Param p : fn.params()) out.println(indent + "  " + p.name() + " : " + p.type() + "  (parameter)");
                print(fn.body(), indent + "  ", out);
            }
        }
        Let r = b.binding(b.result());
        String type = r == null ? "(parameter)"
                : r.destructure() && r.type() instanceof kina.ir.Type.Tuple(var elems) ? String.valueOf(elems.get(r.binders().indexOf(b.result())))
                : String.valueOf(r.type());
        out.println(indent + "=> " + (b.result().temporary() ? "result" : b.result().name()) + " : " + type);
    }
}
