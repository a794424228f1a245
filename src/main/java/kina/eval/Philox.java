package kina.eval;

/**
 * Philox-4x32-10, the counter-based generator of J. K. Salmon, M. A. Moraes, R. O. Dror and
 * D. E. Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), as its reference
 * implementation Random123 computes it (checked against Random123's published known-answer
 * vectors), and the mappings from its words to the values of kina's random instructions
 * (docs/language.md, "Random"). Its output is a pure function of a 128-bit counter and a 64-bit
 * key: no state, so an element's value depends only on the key and the element's position, on
 * every engine and thread count.
 *
 * <p>The language's use: the key tensor's first element K gives the Philox key (k0, k1) = (low,
 * high 32 bits of K); its second element S (0 when the key has one element) gives the counter's
 * words c2, c3 = (low, high 32 bits of S); the row-major position n of the element gives c0, c1 =
 * (low, high 32 bits of n). One block of four words x0…x3 per element.
 */
public final class Philox {
    private Philox() {}

    /** The round multipliers and the key increments (Weyl constants) of Philox-4x32. */
    public static final int M0 = 0xD2511F53, M1 = 0xCD9E8D57, W0 = 0x9E3779B9, W1 = 0xBB67AE85;

    /** Rounds: 10, the variant Random123, cuRAND and JAX's counter-based generators use. */
    public static final int ROUNDS = 10;

    /** 2⁻²⁴ and 2⁻⁵³: the weights of the lowest bit of an F32 and an F64 uniform. */
    public static final double ULP24 = 0x1p-24, ULP53 = 0x1p-53;

    /** 2π rounded to double: Box–Muller's angle is r(2π·u). */
    public static final double TWO_PI = 2 * Math.PI;

    /**
     * Philox-4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1), the four words into
     * {@code out[0..3]}. A round: (hi₀, lo₀) = M0·c0, (hi₁, lo₁) = M1·c2 (64-bit products);
     * c ← (hi₁ ⊕ c1 ⊕ k0, lo₁, hi₀ ⊕ c3 ⊕ k1, lo₀); the key is bumped by (W0, W1) before every
     * round but the first.
     */
    public static void block(int c0, int c1, int c2, int c3, int k0, int k1, int[] out) {
        for (int r = 0; r < ROUNDS; r++) {
            if (r > 0) {
                k0 += W0;
                k1 += W1;
            }
            long p0 = (M0 & 0xFFFF_FFFFL) * (c0 & 0xFFFF_FFFFL), p1 = (M1 & 0xFFFF_FFFFL) * (c2 & 0xFFFF_FFFFL);
            int n0 = (int) (p1 >>> 32) ^ c1 ^ k0, n2 = (int) (p0 >>> 32) ^ c3 ^ k1;
            c1 = (int) p1;
            c3 = (int) p0;
            c0 = n0;
            c2 = n2;
        }
        out[0] = c0;
        out[1] = c1;
        out[2] = c2;
        out[3] = c3;
    }

    /** The block of element {@code n} under key K and stream S (the class comment's layout). */
    public static void element(long key, long stream, long n, int[] out) {
        block((int) n, (int) (n >>> 32), (int) stream, (int) (stream >>> 32), (int) key, (int) (key >>> 32), out);
    }

    /** The F32 uniform of a block: (x0 ≫ 8)·2⁻²⁴, in [0, 1), exact. */
    public static double uniform32(int[] x) { return (x[0] >>> 8) * ULP24; }

    /** The F64 uniform of words (a, b): the top 53 bits of the 64-bit a·2³² + b, times 2⁻⁵³; in [0, 1), exact. */
    public static double uniform64(int a, int b) { return ((((long) a) << 32 | (b & 0xFFFF_FFFFL)) >>> 11) * ULP53; }

    /** The uniform of a block in dtype F32 ({@code single}) or F64. The F32 one is the F64 one truncated to 24 bits. */
    public static double uniform(int[] x, boolean single) { return single ? uniform32(x) : uniform64(x[0], x[1]); }

    /**
     * The standard normal of a block, in F64 (Box–Muller): u₁ = uniform64(x0, x1), u₂ =
     * uniform64(x2, x3); z = r(√(−2·ln(1 − u₁)) · cos(r(2π·u₂))), with StrictMath's log, sqrt and cos
     * (portable bits). 1 − u₁ is exact and in (0, 1], so the log is finite; |z| &lt; 8.6.
     */
    public static double normal(int[] x) {
        double u1 = uniform64(x[0], x[1]), u2 = uniform64(x[2], x[3]);
        double radius = StrictMath.sqrt(-2 * StrictMath.log(1 - u1));
        return radius * StrictMath.cos(TWO_PI * u2);
    }
}
