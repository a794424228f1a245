package kina.ir;

import java.util.List;

/** Source positions as data: {@link #strip} forgets them, so programs compare by structure alone. */
public final class Positions {
    private Positions() {}

    /** {@code p} with every Pos (lets, fn params, block results) replaced by {@link Pos#NONE}. */
    public static Program strip(Program p) { return new Program(p.file(), strip(p.body())); }

    /** {@code b} with every Pos, nested fn bodies (an elementwise fusion's too) included, replaced by {@link Pos#NONE}. */
    public static Block strip(Block b) {
        List<Let> lets = b.lets().stream()
                .map(l -> new Let(l.binders(), l.destructure(), strip(l.rhs()), Pos.NONE, l.owner(), l.type()))
                .toList();
        return new Block(lets, b.result(), Pos.NONE);
    }

    private static Rhs strip(Rhs r) {
        return switch (r) {
            case Rhs.Fn(List<Rhs.Param> params, Type result, Block body) -> new Rhs.Fn(
                    params.stream().map(q -> new Rhs.Param(q.name(), q.type(), Pos.NONE)).toList(), result, strip(body));
            case Instr.Elementwise(List<Var> inputs, Rhs.Fn body) -> new Instr.Elementwise(inputs, (Rhs.Fn) strip(body));
            case Instr i -> i;
            case Rhs.Call c -> c;
            case Rhs.Handle h -> h;
            case Rhs.Tuple t -> t;
        };
    }
}
