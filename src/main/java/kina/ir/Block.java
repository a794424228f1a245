package kina.ir;

import java.util.List;

/**
 * A let-chain ending in a Var: {@code let … in let … in result}. The body of a fn and the whole
 * program are blocks. A tuple result {@code (a, b)} is a temporary let of {@link Rhs.Tuple}.
 */
public record Block(List<Let> lets, Var result, Pos resultPos) {
    public Block { lets = List.copyOf(lets); }

    /** The let that binds {@code v} in this block, or null (a parameter or unbound). */
    public Let binding(Var v) {
        for (Let l : lets) if (l.binders().contains(v)) return l;
        return null;
    }
}
