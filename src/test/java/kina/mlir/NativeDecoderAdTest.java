package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.check.Checker;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

/**
 * validate-decoder-ad without Python: the native engine on the Section 14 wrappers (ad_gather,
 * ad_reshape, ad_matmul4) and the StoryLM-0 step, F32 and F64, against the NumPy and PyTorch
 * references scripts/validate_decoder_ad.py committed (native_decoder_ad.json), at the script's
 * tolerances; and against what the shared object returned when the script ran.
 */
class NativeDecoderAdTest {

    @Test void theWrappersAndTheStepMatchNumPyAndPyTorch() throws IOException {
        MlirTools.require();
        JsonNode root = new ObjectMapper().readTree(Path.of("src/test/resources/fixtures/native_decoder_ad.json").toFile());
        int n = 0;
        for (JsonNode c : root.get("cases")) {
            String program = c.get("program").asText(), dtype = c.get("dtype").asText();
            String src = Files.readString(Path.of(program));
            if (dtype.equals("F64")) src = src.replace("F32", "F64");
            Native nat = Native.compile(Checker.check(Parser.parse(program, src)));
            Map<String, Tensor> in = new HashMap<>();
            c.get("inputs").properties().forEach(e -> in.put(e.getKey(), tensor(e.getValue())));
            List<Tensor> got = nat.run(in);
            double tol = c.get("tolerance").asDouble();
            for (String ref : new String[] {"numpy", "torch", "native"})
                MlirTools.assertClose(got, tensors(c.get(ref)), tol, program + " " + dtype + " against " + ref);
            n++;
        }
        assertThat(n).isEqualTo(8);
    }

    static List<Tensor> tensors(JsonNode list) {
        List<Tensor> out = new ArrayList<>();
        for (JsonNode e : list) out.add(tensor(e));
        return out;
    }

    static Tensor tensor(JsonNode e) {
        DType d = DType.parse(e.get("dtype").asText());
        long[] shape = new long[e.get("shape").size()];
        for (int i = 0; i < shape.length; i++) shape[i] = e.get("shape").get(i).asLong();
        TensorType t = new TensorType(d, new Shape(shape), kina.ir.Placement.HOST);
        JsonNode data = e.get("data");
        if (d.floating()) {
            double[] v = new double[data.size()];
            for (int i = 0; i < v.length; i++) v[i] = data.get(i).asDouble();
            return Tensor.ofFloats(t, v);
        }
        long[] v = new long[data.size()];
        for (int i = 0; i < v.length; i++) v[i] = data.get(i).asLong();
        return Tensor.ofInts(t, v);
    }
}
