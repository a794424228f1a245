package kina.model;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The weights of a config laid out contiguously in one float buffer, in {@link StoryLm#weights}
 * order, each row-major: the form parameters and gradients travel in between a driver and its
 * workers. On the wire a buffer is raw little-endian float bits ({@link #encode}), never Java
 * serialization (which writes floatToIntBits, collapsing NaN payloads to one NaN).
 */
public final class ParameterLayout {
    private final List<StoryLm.Weight> weights;
    private final int[] offsets;
    private final int size;

    public ParameterLayout(Config c) {
        weights = StoryLm.weights(c);
        offsets = new int[weights.size()];
        long at = 0;
        for (int k = 0; k < weights.size(); k++) {
            offsets[k] = Math.toIntExact(at);
            at += new Shape(weights.get(k).shape()).vol();
        }
        size = Math.toIntExact(at);
    }

    /** The weights in layout order. */
    public List<StoryLm.Weight> weights() { return weights; }

    /** Floats in a buffer: every weight's elements. */
    public int size() { return size; }

    /** Where weight k starts. */
    public int offset(int k) { return offsets[k]; }

    /** A buffer of {@code value(name)} for every weight, in layout order (F32 tensors of the weights' shapes). */
    public float[] flatten(Function<String, Tensor> value) {
        float[] out = new float[size];
        for (int k = 0; k < weights.size(); k++) pack(value.apply(weights.get(k).name()), out, offsets[k]);
        return out;
    }

    /** Copies tensor {@code t}'s elements (F32, so exact as float) into {@code out} from {@code at}. */
    static void pack(Tensor t, float[] out, int at) {
        double[] d = t.floats();
        for (int i = 0; i < d.length; i++) out[at + i] = (float) d[i];
    }

    /** The weights of {@code buffer} as F32 tensors, by {@code prefix + name}, in layout order. */
    public Map<String, Tensor> tensors(float[] buffer, String prefix) {
        if (buffer.length != size) throw new IllegalArgumentException("a buffer of " + buffer.length + " floats, not the layout's " + size);
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (int k = 0; k < weights.size(); k++) {
            StoryLm.Weight w = weights.get(k);
            double[] d = new double[Math.toIntExact(new Shape(w.shape()).vol())];
            for (int i = 0; i < d.length; i++) d[i] = buffer[offsets[k] + i];
            m.put(prefix + w.name(), Tensor.ofFloats(TensorType.host(DType.F32, w.shape()), d));
        }
        return m;
    }

    /** {@code floats} as little-endian raw float bits (4 bytes each; NaN payloads kept). */
    public static byte[] encode(float[] floats) {
        ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(4, floats.length)).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : floats) b.putFloat(f);
        return b.array();
    }

    /** The inverse of {@link #encode}; IllegalArgumentException for a length that is not a multiple of 4. */
    public static float[] decode(byte[] bytes) {
        if (bytes.length % 4 != 0) throw new IllegalArgumentException(bytes.length + " bytes is not a whole number of floats");
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        float[] out = new float[bytes.length / 4];
        for (int i = 0; i < out.length; i++) out[i] = b.getFloat();
        return out;
    }
}
