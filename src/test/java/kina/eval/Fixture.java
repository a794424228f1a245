package kina.eval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.ir.DType;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;

/** A PyTorch reference fixture (scripts/reference_*.py): inputs, outputs, and the handle tuple. */
public record Fixture(String program, DType dtype, Map<String, Tensor> inputs, List<Named> outputs, List<Named> handle) {

    public record Named(String name, Tensor value) {}

    public static Fixture load(String resource) {
        try (InputStream in = Fixture.class.getResourceAsStream("/fixtures/" + resource)) {
            if (in == null) throw new IllegalArgumentException("no fixture " + resource);
            JsonNode root = new ObjectMapper().readTree(in);
            Map<String, Tensor> inputs = new LinkedHashMap<>();
            root.get("inputs").properties().forEach(e -> inputs.put(e.getKey(), tensor(e.getValue())));
            return new Fixture(root.get("program").asText(), DType.parse(root.get("dtype").asText()), inputs,
                    named(root.get("outputs")), root.has("handle") ? named(root.get("handle")) : List.of());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<Named> named(JsonNode arr) {
        List<Named> out = new ArrayList<>();
        for (JsonNode n : arr) out.add(new Named(n.get("name").asText(), tensor(n)));
        return out;
    }

    /** The inputs with floating tensors retyped to {@code d} (F32 rounds each value). */
    public Map<String, Tensor> inputsAs(DType d) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        inputs.forEach((k, t) -> m.put(k, t.isFloating() ? Tensor.ofFloats(t.type().withDType(d), t.floats().clone()) : t));
        return m;
    }

    static Tensor tensor(JsonNode n) {
        DType dt = DType.parse(n.get("dtype").asText());
        List<Long> dims = new ArrayList<>();
        n.get("shape").forEach(d -> dims.add(d.asLong()));
        TensorType t = new TensorType(dt, new Shape(dims.stream().mapToLong(Long::longValue).toArray()), Placement.HOST);
        JsonNode data = n.get("data");
        if (dt.floating()) {
            double[] d = new double[data.size()];
            for (int i = 0; i < d.length; i++) d[i] = data.get(i).asDouble();
            return Tensor.ofFloats(t, d);
        }
        long[] l = new long[data.size()];
        for (int i = 0; i < l.length; i++) l[i] = data.get(i).asLong();
        return Tensor.ofInts(t, l);
    }
}
