package kina.mlir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import kina.ir.DType;

/**
 * The transform-dialect schedule applied before bufferization: MLIR's own tiling and vectorization
 * of the contractions (the {@code kina.contraction} funcs, one class of shape per
 * {@code kina.schedule} key; see {@link Emitter.Contraction}). Per contraction C = A B:
 *
 * <ol>
 *   <li>rows of C in blocks of up to 64, four blocks or more where the rows allow
 *       ({@code tile_using_forall}: the blocks are independent, and run on the threads), the
 *       destination's zero fill fused into each block;
 *   <li>register tiles of {@link #registerTile} rows × columns, the fill fused into each tile
 *       ({@code transform.structured.fuse}), then the reduction over K one step at a time;
 *   <li>a last partial tile peeled off ({@code transform.loop.peel}) when a tile does not divide its
 *       dim, so that every tile has a static shape and vectorizes;
 *   <li>vectorized, the accumulator tile hoisted out of the K loop into registers
 *       ({@code hoist_loop_invariant_subsets}), the contraction lowered to outer products (one
 *       broadcast FMA per row and vector of columns).
 * </ol>
 *
 * <p>A large generic ({@code kina.parallel}, see {@link Mlir.Fn#generic}) has its first loop (a
 * parallel one) split into a parallel loop of slices, which the threads share. ScatterAdd's generic
 * ({@code kina.scatter}) runs as (v, n, d), so that its innermost loop runs along d and LLVM's loop
 * vectorizer takes it.
 */
final class Schedule {
    private Schedule() {}

    /** A register tile: rows of C by columns (a whole number of vectors). */
    record Tile(long rows, long cols) {}

    /**
     * The register tile for C's {@code n} columns on a host whose vectors hold {@code vectorBits}:
     * two vectors of columns, and as many rows as leaves the accumulators (rows × 2 vectors), a row
     * of B and a broadcast of A in the vector registers: 8 rows with AVX-512's 32 registers (16
     * accumulators), 6 with AVX2's 16 (12 accumulators; 8 rows spill), 4 with 128-bit vectors. With
     * AVX-512, when C's rows are not whole 64-byte lines apart (n × element size not a multiple of
     * 64: every other row's vectors straddle two lines), one vector of columns and 16 rows. Measured
     * on one core of an AMD EPYC (AVX-512, F32): 8×32 about 200–225 GFLOP/s where 16×32 gave
     * 60–130 and 4×64 130–200; at n = 344, 8×32 gave 75 and 16×16 190; under {@code -march=x86-64-v3},
     * 6×16 about 110 GFLOP/s where 8×16 gave 44 and 8×32 77.
     */
    static Tile registerTile(int vectorBits, DType d, long n) {
        long bytes = d == DType.F64 || d == DType.I64 ? 8 : 4, lanes = Math.max(1, vectorBits / 8 / bytes);
        if (vectorBits >= 512) return n * bytes % 64 == 0 ? new Tile(8, 2 * lanes) : new Tile(16, lanes);
        return new Tile(vectorBits >= 256 ? 6 : 4, 2 * lanes);
    }

    /** The property that sets the vector width the tiles are chosen for (128, 256 or 512 bits). */
    static final String VECTOR_BITS = "kina.native.vectorBits";

    /**
     * The host's vector width in bits: the {@value #VECTOR_BITS} system property, else 512 when
     * the CPU has AVX-512F, 256 with AVX2, 128 otherwise.
     *
     * @throws MlirError when the property is not 128, 256 or 512
     */
    static int vectorBits() {
        String p = System.getProperty(VECTOR_BITS);
        if (p != null) {
            return switch (p.trim()) {
                case "128" -> 128;
                case "256" -> 256;
                case "512" -> 512;
                default -> throw new MlirError("-D" + VECTOR_BITS + "=" + p + ": must be 128, 256 or 512");
            };
        }
        return HOST_BITS;
    }

    private static final int HOST_BITS = detect();

    private static int detect() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (!l.startsWith("flags")) continue;
                String f = " " + l.substring(l.indexOf(':') + 1).trim() + " ";
                return f.contains(" avx512f ") ? 512 : f.contains(" avx2 ") ? 256 : 128;
            }
        } catch (IOException | RuntimeException e) {
            // no /proc/cpuinfo: the portable width
        }
        return 128;
    }

    /** The schedule for {@code m} on a host of {@code vectorBits}. */
    static String text(Emitter.Module m, int vectorBits) {
        Map<String, Emitter.Contraction> classes = new LinkedHashMap<>();
        for (Emitter.Contraction c : m.contractions()) classes.putIfAbsent(c.key(), c);
        StringBuilder b = new StringBuilder();
        b.append("// kina: tile and vectorize the contractions (kina.contraction funcs); split the large generics' first\n");
        b.append("// loop into parallel blocks (kina.parallel); scatters run (v, n, d)\n");
        b.append("module attributes {transform.with_named_sequence} {\n");
        b.append("  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n");
        b.append("""
                    %pg = transform.structured.match ops{["linalg.generic"]} attributes {kina.parallel} in %root : (!transform.any_op) -> !transform.any_op
                    transform.foreach %pg : !transform.any_op {
                    ^bb0(%g: !transform.any_op):
                      %pt, %pf = transform.structured.tile_using_forall %g tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
                      transform.yield
                    }
                """);
        if (m.scatters())    // ScatterAdd's (v, d, n) with n innermost cannot vectorize; with d innermost LLVM's loop vectorizer does
            b.append("""
                        %sc = transform.structured.match ops{["linalg.generic"]} attributes {kina.scatter} in %root : (!transform.any_op) -> !transform.any_op
                        transform.foreach %sc : !transform.any_op {
                        ^bb0(%g: !transform.any_op):
                          %i = transform.structured.interchange %g iterator_interchange = [0, 2, 1] : (!transform.any_op) -> !transform.any_op
                          transform.yield
                        }
                    """);
        int i = 0;
        for (Emitter.Contraction c : classes.values()) b.append(tiling(c, registerTile(vectorBits, c.dtype(), c.n()), i++));
        if (classes.isEmpty()) return b.append("    transform.yield\n  }\n}\n").toString();
        b.append("""
                    %fs = transform.structured.match ops{["func.func"]} attributes {kina.contraction} in %root : (!transform.any_op) -> !transform.any_op
                    transform.apply_patterns to %fs {
                      transform.apply_patterns.canonicalization
                    } : !transform.any_op
                    %fv = transform.structured.vectorize_children_and_apply_patterns %fs : (!transform.any_op) -> !transform.any_op
                    transform.apply_patterns to %fv {
                      transform.apply_patterns.canonicalization
                      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
                    } : !transform.any_op
                    transform.apply_cse to %fv : !transform.any_op
                    %loops = transform.structured.match ops{["scf.for"]} in %root : (!transform.any_op) -> !transform.any_op
                    transform.loop.hoist_loop_invariant_subsets %loops : !transform.any_op
                    transform.apply_patterns to %fv {
                      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
                      transform.apply_patterns.vector.transfer_permutation_patterns
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

    /** Steps 1–3 for the funcs of one class. */
    private static String tiling(Emitter.Contraction c, Tile reg, int i) {
        long tm = Math.min(reg.rows(), c.m()), tn = Math.min(reg.cols(), c.n());
        long block = c.m() % tm == 0 ? tm * largestDivisor(c.m() / tm, Math.max(1, Math.min(64 / tm, c.m() / tm / 4))) : c.m();
        String b0 = c.batch() > 0 ? "1, " : "", z = c.batch() > 0 ? "0, " : "";
        StringBuilder b = new StringBuilder();
        b.append("    %f").append(i).append(" = transform.structured.match ops{[\"func.func\"]} attributes {kina.schedule = \"").append(c.key())
                .append("\"} in %root : (!transform.any_op) -> !transform.any_op\n");
        b.append("    transform.foreach %f").append(i).append(" : !transform.any_op {\n    ^bb0(%fn: !transform.any_op):\n");
        b.append("      %mm = transform.structured.match ops{[\"").append(c.op()).append("\"]} in %fn : (!transform.any_op) -> !transform.any_op\n");
        b.append("      %fill = transform.structured.match ops{[\"linalg.fill\"]} in %fn : (!transform.any_op) -> !transform.any_op\n");
        b.append("      %t, %forall = transform.structured.tile_using_forall %mm tile_sizes [").append(b0).append(block)
                .append(", 0] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n");
        b.append("      %fill2, %forall2 = transform.structured.fuse_into_containing_op %fill into %forall"
                + " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)\n");
        b.append("      %t2, %l:2 = transform.structured.fuse %t {tile_sizes = [").append(z).append(tm).append(", ").append(tn)
                .append(", 0]} : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)\n");
        b.append("      %t3, %lk = transform.structured.tile_using_for %t2 tile_sizes [").append(z)
                .append("0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n");
        if (c.n() % tn != 0) b.append(peel("%l#1", "n"));
        if (block % tm != 0) b.append(peel("%l#0", "m"));
        b.append("      transform.yield\n    }\n");
        return b.toString();
    }

    /** Peels the last, partial iteration off a tile loop (its tiles then have static shapes). */
    private static String peel(String loop, String name) {
        return "      %" + name + " = transform.cast " + loop + " : !transform.any_op to !transform.op<\"scf.for\">\n"
                + "      %" + name + "1, %" + name + "2 = transform.loop.peel %" + name
                + " : (!transform.op<\"scf.for\">) -> (!transform.any_op, !transform.any_op)\n";
    }

    /** The largest divisor of n that is at most cap (at least 1). */
    private static long largestDivisor(long n, long cap) {
        for (long d = Math.min(n, cap); d > 1; d--) if (n % d == 0) return d;
        return 1;
    }
}
