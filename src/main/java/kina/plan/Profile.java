package kina.plan;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kina.ir.Instr;
import kina.ir.Shape;

/**
 * The plan's profile reports over the time each step took since profiling began: by kind (a
 * matmul by its shape and operand layouts, with GFLOP/s) or step by step in schedule order.
 * {@code nat[i]}: step i runs a native kernel ("[fallback]" marks the generic one).
 */
record Profile(Slots ir, long[] nanos, int runs, boolean[] nat) {

    /** Time by instruction kind, largest first: one line per kind. */
    List<String> byKind() {
        Map<String, long[]> by = new LinkedHashMap<>();
        long total = 0;
        for (int i = 0; i < ir.steps.size(); i++) {
            Slots.Step s = ir.steps.get(i);
            long flops = matmulFlops(s);
            String kind = (flops > 0 ? matmulShape(s) : s.instr().op()) + (nat[i] ? "" : " [fallback]");
            long[] acc = by.computeIfAbsent(kind, _ -> new long[3]);
            acc[0] += nanos[i];
            acc[1]++;
            acc[2] += flops;
            total += nanos[i];
        }
        List<Map.Entry<String, long[]>> es = new ArrayList<>(by.entrySet());
        es.sort((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]));
        List<String> lines = new ArrayList<>();
        for (var e : es)
            lines.add(String.format(Locale.ROOT, "%-34s %9.1f ms %5.1f%%  (%d kernels per run)%s", e.getKey(), e.getValue()[0] / 1e6,
                    total == 0 ? 0 : 100.0 * e.getValue()[0] / total, e.getValue()[1],
                    e.getValue()[2] > 0 && e.getValue()[0] > 0
                            ? String.format(Locale.ROOT, " %.1f GFLOP/s", runs * (double) e.getValue()[2] / e.getValue()[0]) : ""));
        return lines;
    }

    /** Every step in schedule order: index, let, what it runs, mean ms per run (four decimals), a matmul's GFLOP/s. */
    List<String> bySteps() {
        List<String> lines = new ArrayList<>(ir.steps.size());
        for (int i = 0; i < ir.steps.size(); i++) {
            Slots.Step s = ir.steps.get(i);
            long flops = matmulFlops(s);
            String what = (flops > 0 ? matmulShape(s) : s.instr().op() + " " + ir.type(s.out()).shape()) + (nat[i] ? "" : " [fallback]");
            lines.add(String.format(Locale.ROOT, "%4d %-16s %-40s %10.4f ms%s", i, s.let().binders().getFirst().name(), what,
                    runs == 0 ? 0 : nanos[i] / 1e6 / runs,
                    flops > 0 && nanos[i] > 0 ? String.format(Locale.ROOT, " %.1f GFLOP/s", runs * (double) flops / nanos[i]) : ""));
        }
        return lines;
    }

    /** For a matmul step, whether its first and second operands are read transposed; null for any other step. */
    private static boolean[] layout(Instr ins) {
        if (ins instanceof Instr.MatmulT(var _, var _, boolean ta, boolean tb)) return new boolean[] {ta, tb};
        if (ins instanceof Instr.MatmulShared(var _, var _, boolean ta, boolean tb)) return new boolean[] {ta, tb};
        return ins instanceof Instr.Matmul ? new boolean[2] : null;
    }

    /** Multiply-adds × 2 of one run of a matmul step, all its products (0 for any other step). */
    private long matmulFlops(Slots.Step s) {
        boolean[] t = layout(s.instr());
        if (t == null) return 0;
        Shape a = ir.type(s.args()[0]).shape();
        int r = a.rank();
        long k = t[0] ? a.dim(r - 2) : a.dim(r - 1), vol = 0;
        for (int o : s.outs()) vol += ir.type(o).shape().vol();
        return 2 * vol * k;
    }

    /** "matmul B×M×K×N NN|TN|NT|TT" of a matmul step (N as n₁+n₂+… for shared products): the operand layouts the kernel reads. */
    private String matmulShape(Slots.Step s) {
        boolean[] t = layout(s.instr());
        Shape out = ir.type(s.out()).shape(), a = ir.type(s.args()[0]).shape();
        int r = out.rank();
        long m = out.dim(r - 2), n = out.dim(r - 1), k = t[0] ? a.dim(r - 2) : a.dim(r - 1);
        StringBuilder ns = new StringBuilder().append(n);
        for (int j = 1; j < s.outs().length; j++) ns.append('+').append(ir.type(s.outs()[j]).shape().dim(r - 1));
        return String.format(Locale.ROOT, "matmul %dx%dx%dx%s %s%s", out.vol() / (m * n), m, k, ns, t[0] ? "T" : "N", t[1] ? "T" : "N");
    }
}
