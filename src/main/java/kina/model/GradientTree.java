package kina.model;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * The balanced pairwise sum of micro-batch gradients, ((g0 + g1) + (g2 + g3)) + …, in which every
 * node adds its left child to its right (elementwise float additions, so the result depends only
 * on the tree, not on who computes it). Leaves are pushed in index order; a node is formed as
 * soon as two adjacent subtrees of one size are on the stack (a binary counter), so summing M
 * micro-batches holds at most log2 M + 1 buffers. An aligned block of 2^k micro-batches gives the
 * same sum whether it is pushed leaf by leaf or as one {@link Subtree} a worker computed, which is
 * why N workers and one process agree bit for bit.
 */
public final class GradientTree {
    /**
     * Micro-batches [from, to) summed: the gradient of their summed losses (a buffer in
     * {@link ParameterLayout} order) and the sum of those losses (nats), both by the tree.
     */
    public record Subtree(int from, int to, float lossSum, float[] gradient) {
        public Subtree {
            if (from < 0 || to <= from) throw new IllegalArgumentException("micro-batches [" + from + ", " + to + ")");
        }

        public int size() { return to - from; }
    }

    private final Deque<Subtree> stack = new ArrayDeque<>();

    /**
     * Adds the next subtree (it must start where the last one ended, and be of a power-of-two size
     * no larger than the one before it, as the aligned blocks of a power-of-two count are).
     * Takes ownership of its buffer: sums are formed in the left child's buffer.
     */
    public void push(Subtree t) {
        Subtree top = stack.peek();
        if (top != null && (top.to() != t.from() || t.size() > top.size()))
            throw new IllegalArgumentException("subtree [" + t.from() + ", " + t.to() + ") does not follow [" + top.from() + ", " + top.to() + ")");
        if (Integer.bitCount(t.size()) != 1) throw new IllegalArgumentException("subtree of " + t.size() + " micro-batches, not a power of two");
        while (!stack.isEmpty() && stack.peek().size() == t.size()) t = add(stack.pop(), t);
        stack.push(t);
    }

    /** The sum of everything pushed; IllegalStateException unless it formed one balanced tree (a power-of-two count of leaves). */
    public Subtree result() {
        if (stack.size() != 1) throw new IllegalStateException(stack.size() + " subtrees left: not a power-of-two count of micro-batches");
        return stack.peek();
    }

    /** The tree over {@code parts} (adjacent, in order): the driver's top levels. */
    public static Subtree sum(List<Subtree> parts) {
        GradientTree t = new GradientTree();
        for (Subtree p : parts) t.push(p);
        return t.result();
    }

    /**
     * The running sum ((g0 + g1) + g2) + … in index order: not this contract, kept as the negative
     * control that shows the order of additions changes the bits.
     */
    public static Subtree leftFold(List<Subtree> parts) {
        Subtree acc = parts.getFirst();
        for (Subtree p : parts.subList(1, parts.size())) acc = add(acc, p);
        return acc;
    }

    /** left + right, elementwise, into left's buffer. */
    private static Subtree add(Subtree left, Subtree right) {
        float[] a = left.gradient(), b = right.gradient();
        if (a.length != b.length) throw new IllegalArgumentException("gradients of " + a.length + " and " + b.length + " floats");
        for (int i = 0; i < a.length; i++) a[i] = a[i] + b[i];
        return new Subtree(left.from(), right.to(), left.lossSum() + right.lossSum(), a);
    }
}
