package kina.ir;

import java.util.List;

/**
 * The tensor instruction vocabulary (DESIGN §3), one record per instruction, grouped by family.
 * Every switch over Instr (type rules, kernels, VJP rules, printer, MLIR lowering) lists every
 * case and has no {@code default}, so adding an instruction fails to compile until each stage
 * handles it or refuses it by name.
 *
 * <p>Operands are Vars; static arguments (axis, perm, shape, dest type) are attributes.
 */
public sealed interface Instr extends Rhs {

    /** The operands, in the order VJP rules answer cotangents for them. */
    List<Var> operands();

    /** The surface name of the instruction, used in messages ({@code log_softmax}, {@code matmul}). */
    String op();

    // ---- constants ------------------------------------------------------------------------
    /** {@code tensor<T, σ, @p>}: an input whose payload is supplied at run time, by the let's name. */
    record Input(TensorType type) implements Instr {
        public List<Var> operands() { return List.of(); }
        public String op() { return "input"; }
    }

    /** {@code tensor<T, σ, @p> payload { … }}: a literal, row-major. */
    record Literal(TensorType type, Payload payload) implements Instr {
        public List<Var> operands() { return List.of(); }
        public String op() { return "literal"; }
    }

    /** {@code fill(T, v)} (printed {@code ones(T)} / {@code zeros(T)} for 1 and +0): every element v. */
    record Fill(TensorType type, double value) implements Instr {
        public List<Var> operands() { return List.of(); }
        public String op() { return "fill"; }

        @Override public boolean equals(Object o) {
            return o instanceof Fill f && f.type.equals(type)
                    && Double.doubleToRawLongBits(f.value) == Double.doubleToRawLongBits(value);
        }

        @Override public int hashCode() { return type.hashCode() * 31 + Double.hashCode(value); }
    }

    // ---- unary ----------------------------------------------------------------------------
    /** {@code -x}. */
    record Neg(Var x) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "neg"; }
    }

    /** {@code x.exp()}. */
    record Exp(Var x) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "exp"; }
    }

    /** {@code x.log()}. */
    record Log(Var x) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "log"; }
    }

    // ---- binary (same shape; broadcasting is an explicit instruction) ----------------------
    /** {@code a + b}. */
    record Add(Var a, Var b) implements Instr {
        public List<Var> operands() { return List.of(a, b); }
        public String op() { return "add"; }
    }

    /** {@code a - b}. */
    record Sub(Var a, Var b) implements Instr {
        public List<Var> operands() { return List.of(a, b); }
        public String op() { return "sub"; }
    }

    /** {@code a * b}, elementwise. */
    record Mul(Var a, Var b) implements Instr {
        public List<Var> operands() { return List.of(a, b); }
        public String op() { return "mul"; }
    }

    /** {@code a / b}, elementwise. */
    record Div(Var a, Var b) implements Instr {
        public List<Var> operands() { return List.of(a, b); }
        public String op() { return "div"; }
    }

    // ---- contraction ----------------------------------------------------------------------
    /** {@code a @ b}: σ++[M,K] @ σ++[K,N] → σ++[M,N], rank ≥ 2, no implicit broadcast (Section 5 §3). */
    record Matmul(Var a, Var b) implements Instr {
        public List<Var> operands() { return List.of(a, b); }
        public String op() { return "matmul"; }
    }

    // ---- shape ----------------------------------------------------------------------------
    /** {@code x.reshape([…])}: volume-preserving, row-major order kept. */
    record Reshape(Var x, Shape to) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "reshape"; }
    }

    /** {@code x.transpose([…])}: output axis i is input axis perm[i]. */
    record Transpose(Var x, Perm perm) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "transpose"; }
    }

    /** {@code x.broadcast([…])}: same rank, each source dim 1 or equal to the target dim. */
    record Broadcast(Var x, Shape to) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "broadcast"; }
    }

    // ---- reduction ------------------------------------------------------------------------
    /** {@code x.sum(axis=k, keepdims=b)}: sum over one axis, in increasing index order. */
    record Sum(Var x, int axis, boolean keepDims) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "sum"; }
    }

    // ---- fused row-wise -------------------------------------------------------------------
    /** {@code x.log_softmax(axis=k)}: x − max − log Σ exp(x − max) (Section 9 §3). */
    record LogSoftmax(Var x, int axis) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "log_softmax"; }
    }

    /** {@code x.softmax(axis=k)}: exp(x − max) / Σ exp(x − max). */
    record Softmax(Var x, int axis) implements Instr {
        public List<Var> operands() { return List.of(x); }
        public String op() { return "softmax"; }
    }

    // ---- indexing -------------------------------------------------------------------------
    /** {@code values.take_along_axis(indices, axis=k)}: indices drop the axis (Section 9 §4.2). */
    record TakeAlongAxis(Var values, Var indices, int axis) implements Instr {
        public List<Var> operands() { return List.of(values, indices); }
        public String op() { return "take_along_axis"; }
    }

    /** {@code values.gather(indices)}: values [V,D], I64 indices σ → σ++[D] (Section 5 §4). */
    record Gather(Var values, Var indices) implements Instr {
        public List<Var> operands() { return List.of(values, indices); }
        public String op() { return "gather"; }
    }

    // ---- IR-internal adjoints (no surface form) ---------------------------------------------
    /** ScatterAdd(updates σ++[D], indices I64 σ, dest [V,D]): duplicates add (Section 14 §7). */
    record ScatterAdd(Var updates, Var indices, TensorType dest) implements Instr {
        public List<Var> operands() { return List.of(updates, indices); }
        public String op() { return "scatter_add"; }
    }

    /** ScatterAlongAxis(axis, updates ρ, indices I64 ρ, dest σ): a select, no accumulation (Section 10 §7). */
    record ScatterAlongAxis(int axis, Var updates, Var indices, TensorType dest) implements Instr {
        public List<Var> operands() { return List.of(updates, indices); }
        public String op() { return "scatter_along_axis"; }
    }
}
