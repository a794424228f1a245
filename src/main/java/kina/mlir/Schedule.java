package kina.mlir;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import kina.ir.DType;

/**
 * The transform-dialect schedule applied before bufferization: MLIR's own tiling and vectorization
 * of the contractions. Each contraction is a func of its own ({@code kina.contraction}) naming its
 * tile sizes ({@code kina.tiles = "MxNxK"}, a leading 1 for a batch; see {@link #tiles}), which
 * the emitter records for the schedule ({@link Emitter.Module#contractions}):
 * per tile class, the matmul (which accumulates into its caller's zero-filled init) is tiled with
 * {@code tile_using_for}; then every
 * contraction func is vectorized ({@code vectorize_children_and_apply_patterns}) and its contractions
 * lowered to outer products (FMAs on vectors). The contraction funcs hold nothing else, so no
 * elementwise op is vectorized into one huge vector (the other funcs are left to LLVM's own loop
 * vectorizer).
 */
final class Schedule {
    private Schedule() {}

    /**
     * Tile sizes of a contraction (M, N, K; with a leading 1 for the batch): each a power of two
     * dividing its dim, so every tile has a static shape and vectorizes (a partial tile stays scalar
     * and was 10× slower): N up to two vectors of AVX2 (16 floats, 8 doubles), M up to 8 rows when N
     * is narrow, else 4 (the accumulators fit the 16 registers), K up to 16. The best measured on
     * 512×64 @ 64×160 (about 60 GFLOP/s on one core; best of 40 calls) among the sizes tried.
     */
    static List<Long> tiles(int rank, long m, long n, long k, DType d) {
        long lanes = d == DType.F64 ? 8 : 16;
        long tn = divisor(n, lanes), tm = divisor(m, tn >= lanes ? 4 : 8), tk = divisor(k, 16);
        List<Long> t = new ArrayList<>();
        if (rank == 3) t.add(1L);
        t.addAll(List.of(tm, tn, tk));
        return t;
    }

    /** The largest power of two ≤ cap that divides n (cap for n = 0). */
    private static long divisor(long n, long cap) {
        long t = cap;
        while (t > 1 && n % t != 0) t /= 2;
        return t;
    }

    /** The schedule for {@code m}, or null when it has no contraction and no scatter. */
    static String text(Emitter.Module m) {
        Set<String> classes = new TreeSet<>();
        for (Emitter.Contraction c : m.contractions()) classes.add(c.tileText());
        boolean scatters = m.scatters();
        if (classes.isEmpty() && !scatters) return null;
        StringBuilder b = new StringBuilder();
        b.append("// kina: tile and vectorize the contractions (kina.contraction funcs); scatters run (v, n, d)\n");
        b.append("module attributes {transform.with_named_sequence} {\n");
        b.append("  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n");
        if (scatters)    // ScatterAdd's (v, d, n) with n innermost cannot vectorize; with d innermost LLVM's loop vectorizer does
            b.append("""
                        %sc = transform.structured.match ops{["linalg.generic"]} attributes {kina.scatter} in %root : (!transform.any_op) -> !transform.any_op
                        transform.foreach %sc : !transform.any_op {
                        ^bb0(%g: !transform.any_op):
                          %i = transform.structured.interchange %g iterator_interchange = [0, 2, 1] : (!transform.any_op) -> !transform.any_op
                          transform.yield
                        }
                    """);
        int i = 0;
        for (String c : classes) {
            String[] sizes = c.split("x");
            String all = String.join(", ", sizes);
            b.append("    %f").append(i).append(" = transform.structured.match ops{[\"func.func\"]} attributes {kina.tiles = \"").append(c)
                    .append("\"} in %root : (!transform.any_op) -> !transform.any_op\n");
            b.append("    transform.foreach %f").append(i).append(" : !transform.any_op {\n    ^bb0(%fn: !transform.any_op):\n");
            b.append("      %mm = transform.structured.match ops{[\"linalg.matmul\", \"linalg.batch_matmul\"]} in %fn : (!transform.any_op) -> !transform.any_op\n");
            b.append("      %t").append(loops("l", sizes.length)).append(" = transform.structured.tile_using_for %mm tile_sizes [").append(all)
                    .append("] : (!transform.any_op) -> ").append(handles(sizes.length + 1)).append('\n');
            b.append("      transform.yield\n    }\n");
            i++;
        }
        if (classes.isEmpty()) return b.append("    transform.yield\n  }\n}\n").toString();
        b.append("""
                    %fs = transform.structured.match ops{["func.func"]} attributes {kina.contraction} in %root : (!transform.any_op) -> !transform.any_op
                    %fv = transform.structured.vectorize_children_and_apply_patterns %fs : (!transform.any_op) -> !transform.any_op
                    transform.apply_patterns to %fv {
                      transform.apply_patterns.vector.reduction_to_contract
                      transform.apply_patterns.vector.transfer_permutation_patterns
                      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
                      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
                      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
                      transform.apply_patterns.vector.lower_outerproduct
                      transform.apply_patterns.canonicalization
                    } : !transform.any_op
                    transform.yield
                  }
                }
                """);
        return b.toString();
    }

    /** {@code , %NAME0, …} for n loop handles. */
    private static String loops(String name, int n) {
        StringBuilder b = new StringBuilder();
        for (int k = 0; k < n; k++) b.append(", %").append(name).append(k);
        return b.toString();
    }

    private static String handles(int n) {
        StringBuilder b = new StringBuilder("(");
        for (int k = 0; k < n; k++) b.append(k > 0 ? ", " : "").append("!transform.any_op");
        return b.append(')').toString();
    }
}
