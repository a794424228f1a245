package kina.model;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;

/**
 * llama2.c's legacy ("v0") model.bin, the file its run.c reads: seven little-endian int32 (dim,
 * hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size — negative when the classifier is not the
 * embedding — and seq_len), then float32 arrays: the token embedding [V, D]; for all layers the
 * attention RMSNorm [L, D], wq [L, H·hs, D], wk and wv [L, KV·hs, D], wo [L, D, H·hs], the FFN
 * RMSNorm [L, D], w1 [L, F, D], w2 [L, D, F], w3 [L, F, D]; the final RMSNorm [D]; two RoPE
 * tables of seq_len·hs/2 floats (cos, sin; run.c skips them); the classifier [V, D] when not
 * shared. Matrices are PyTorch Linear weights (out × in, row-major), so kina's x @ W weights are
 * written transposed.
 *
 * <p>Conventions mapped: run.c rotates interleaved pairs (2j, 2j+1) of each head by
 * t·10000^(−2j/hs); kina rotates half-split pairs (j, j + hd/2) by the same angle, so the rows of
 * wq and wk are permuted within each head (row 2j ← kina column j, row 2j+1 ← column j + hd/2),
 * which leaves every attention score unchanged. run.c's FFN is w2(silu(w1 x) ⊙ w3 x): w1 is kina's
 * {@code w_gate}, w3 its {@code w_up}, w2 its {@code w_down}. RMSNorm adds ε = 1e-5 to the mean
 * square, as kina does. A config the format cannot hold (another rope_base or eps) is refused by
 * name; kina always writes its own lm_head as the classifier (vocab_size negative).
 */
public final class Llama2c {
    private Llama2c() {}

    /** A model read back: its config and kina's weights, and whether the file shared the classifier. */
    public record Model(Config config, Map<String, Tensor> weights, boolean sharedClassifier) {}

    /** The first int32 of llama2.c's newer (version 1 and 2) files: "ak42". */
    static final int MAGIC = 0x616b3432;

    /** The rope base and ε run.c hard-codes. */
    public static final double ROPE_BASE = 10000, EPS = 1e-5;

    /** Throws ConfigError naming what {@code c} has that the format cannot hold. */
    public static void requireFits(Config c) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has no norms or MLP; llama2.c's format holds StoryLM decoders only");
        if (c.ropeBase() != ROPE_BASE)
            throw new ConfigError(c.name(), "rope_base " + c.ropeBase() + ": llama2.c's run.c rotates with base 10000 only");
        if (c.eps() != EPS) throw new ConfigError(c.name(), "eps " + c.eps() + ": llama2.c's run.c normalises with 1e-5 only");
    }

    /** The model.bin of config {@code c} and kina's weights {@code w} (StoryLm.weights names, F32). */
    public static byte[] write(Config c, Map<String, Tensor> w) {
        requireFits(c);
        int d = c.dModel(), f = c.mlpHidden(), layers = c.layers(), h = c.heads(), kv = c.kvHeads(), hd = c.headDim(), v = c.vocab();
        long floats = (long) v * d * 2 + (long) layers * (2L * d + (long) h * hd * d * 2 + 2L * kv * hd * d + 3L * f * d) + d
                + (long) c.seq() * hd;
        if (floats * 4 + 28 > Integer.MAX_VALUE) throw new ConfigError(c.name(), "too large for one model.bin written in memory");
        ByteBuffer b = ByteBuffer.allocate((int) (floats * 4 + 28)).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(d).putInt(f).putInt(layers).putInt(h).putInt(kv).putInt(-v).putInt(c.seq());
        put(b, w, "emb", false, 0);
        each(b, w, layers, "attn_norm", false, 0);
        each(b, w, layers, "wq", true, h);
        each(b, w, layers, "wk", true, kv);
        each(b, w, layers, "wv", true, 0);
        each(b, w, layers, "wo", true, 0);
        for (int l = 0; l < layers; l++)
            if (f > 0) put(b, w, "l" + l + "_mlp_norm", false, 0);
            else for (int i = 0; i < d; i++) b.putFloat(1f);           // no MLP: hidden_dim 0 makes the FFN add zeros
        each(b, w, f > 0 ? layers : 0, "w_gate", true, 0);           // w1
        each(b, w, f > 0 ? layers : 0, "w_down", true, 0);           // w2
        each(b, w, f > 0 ? layers : 0, "w_up", true, 0);             // w3
        put(b, w, "final_norm", false, 0);
        Tensor[] rope = Rope.tables(c);
        for (Tensor t : rope) for (double x : t.floats()) b.putFloat((float) x);
        put(b, w, "lm_head", true, 0);
        if (b.hasRemaining()) throw new IllegalStateException("model.bin size miscounted: " + b.remaining() + " bytes left");
        return b.array();
    }

    private static void each(ByteBuffer b, Map<String, Tensor> w, int layers, String name, boolean transpose, int ropeHeads) {
        for (int l = 0; l < layers; l++) put(b, w, "l" + l + "_" + name, transpose, ropeHeads);
    }

    /** Writes weight {@code name}; transposed ([in, out] → out × in) and, with ropeHeads > 0, its rows interleaved per head. */
    private static void put(ByteBuffer b, Map<String, Tensor> w, String name, boolean transpose, int ropeHeads) {
        Tensor t = w.get(name);
        if (t == null) throw new IllegalArgumentException("no weight " + name);
        double[] x = t.floats();
        if (!transpose) { for (double v : x) b.putFloat((float) v); return; }
        int in = (int) t.shape().dim(0), out = (int) t.shape().dim(1);
        for (int r = 0; r < out; r++) {
            int col = ropeHeads > 0 ? halfSplitColumn(r, out / ropeHeads) : r;
            for (int i = 0; i < in; i++) b.putFloat((float) x[i * out + col]);
        }
    }

    /** The kina (half-split) feature that run.c's interleaved row r of a head of width hd holds. */
    static int halfSplitColumn(int r, int hd) {
        int head = r / hd, k = r % hd;
        return head * hd + (k % 2 == 0 ? k / 2 : hd / 2 + k / 2);
    }

    /**
     * Reads a model.bin; the config is named {@code name} (rope_base 10000, eps 1e-5). A shared
     * classifier becomes lm_head = embᵀ. {@code where} names the file in errors.
     *
     * @throws DataError for a short, long or inconsistent file; ConfigError for sizes kina cannot build
     */
    public static Model read(String where, byte[] file, String name) {
        if (file.length < 28) throw new DataError(where, "not a llama2.c model.bin: " + file.length + " bytes, shorter than its 28-byte header");
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        if (b.getInt(0) == MAGIC)
            throw new DataError(where, "llama2.c's version " + b.getInt(4) + " format (magic \"ak42\"); kina reads the legacy v0 format "
                    + "(llama2.c's export.py --version 0)");
        int d = b.getInt(), f = b.getInt(), layers = b.getInt(), h = b.getInt(), kv = b.getInt(), vs = b.getInt(), seq = b.getInt();
        boolean shared = vs > 0;
        int v = Math.abs(vs);
        String header = "dim " + d + ", hidden_dim " + f + ", n_layers " + layers + ", n_heads " + h + ", n_kv_heads " + kv
                + ", vocab_size " + vs + ", seq_len " + seq;
        if (d <= 0 || f < 0 || layers <= 0 || h <= 0 || kv <= 0 || v == 0 || seq <= 0 || d % h != 0)
            throw new DataError(where, "not a llama2.c model.bin (header " + header + ")");
        Config c;
        try {
            c = new Config(name, v, d, h, kv, seq, layers, f, ROPE_BASE, EPS, false);
        } catch (ConfigError e) {
            throw new DataError(where, "header " + header + ": " + e.problem());
        }
        int hd = c.headDim();
        long need = 28 + 4 * ((long) v * d * (shared ? 1 : 2) + (long) layers * (2L * d + 2L * h * hd * d + 2L * kv * hd * d + 3L * f * d)
                + d + (long) seq * hd);
        if (file.length != need)
            throw new DataError(where, file.length + " bytes, but its header (" + header + ") needs " + need);
        Map<String, Tensor> w = new LinkedHashMap<>();
        Map<String, long[]> shapes = new LinkedHashMap<>();
        for (StoryLm.Weight wt : StoryLm.weights(c)) shapes.put(wt.name(), wt.shape());
        w.put("emb", get(b, shapes.get("emb"), false, 0));
        Tensor emb = w.get("emb");
        read(b, w, shapes, layers, "attn_norm", false, 0);
        read(b, w, shapes, layers, "wq", true, h);
        read(b, w, shapes, layers, "wk", true, kv);
        read(b, w, shapes, layers, "wv", true, 0);
        read(b, w, shapes, layers, "wo", true, 0);
        if (f > 0) read(b, w, shapes, layers, "mlp_norm", false, 0);
        else b.position(b.position() + 4 * layers * d);                // unused without an MLP
        read(b, w, shapes, f > 0 ? layers : 0, "w_gate", true, 0);
        read(b, w, shapes, f > 0 ? layers : 0, "w_down", true, 0);
        read(b, w, shapes, f > 0 ? layers : 0, "w_up", true, 0);
        w.put("final_norm", get(b, shapes.get("final_norm"), false, 0));
        b.position(b.position() + 4 * seq * hd);                       // the RoPE tables: kina computes its own
        if (shared) {
            double[] e = emb.floats(), lm = new double[e.length];
            for (int i = 0; i < v; i++) for (int j = 0; j < d; j++) lm[j * v + i] = e[i * d + j];
            w.put("lm_head", Tensor.ofFloats(TensorType.host(DType.F32, d, v), lm));
        } else {
            w.put("lm_head", get(b, shapes.get("lm_head"), true, 0));
        }
        Map<String, Tensor> ordered = new LinkedHashMap<>();
        for (String n : shapes.keySet()) ordered.put(n, w.get(n));
        return new Model(c, ordered, shared);
    }

    private static void read(ByteBuffer b, Map<String, Tensor> w, Map<String, long[]> shapes, int layers, String name, boolean transpose, int ropeHeads) {
        for (int l = 0; l < layers; l++) w.put("l" + l + "_" + name, get(b, shapes.get("l" + l + "_" + name), transpose, ropeHeads));
    }

    /** A kina weight of {@code shape} from the next floats (out × in when transposed; rows interleaved per head with ropeHeads > 0). */
    private static Tensor get(ByteBuffer b, long[] shape, boolean transpose, int ropeHeads) {
        int n = 1;
        for (long s : shape) n *= (int) s;
        double[] x = new double[n];
        if (!transpose) {
            for (int i = 0; i < n; i++) x[i] = b.getFloat();
        } else {
            int in = (int) shape[0], out = (int) shape[1];
            for (int r = 0; r < out; r++) {
                int col = ropeHeads > 0 ? halfSplitColumn(r, out / ropeHeads) : r;
                for (int i = 0; i < in; i++) x[i * out + col] = b.getFloat();
            }
        }
        return Tensor.ofFloats(TensorType.host(DType.F32, shape), x);
    }
}
