package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.SafeTensors;
import kina.ir.DType;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointTest {
    @TempDir Path root;

    static final Config CONFIG = Config.byName("storylm0");

    static Map<String, Tensor> weights(double scale) {
        Map<String, Tensor> w = new LinkedHashMap<>();
        w.put("embed", Tensor.of(DType.F32, new long[] {8, 4}, ramp(32, scale)));
        w.put("wq", Tensor.of(DType.F32, new long[] {4, 4}, ramp(16, -scale)));
        return w;
    }

    static Map<String, TensorType> expected() {
        Map<String, TensorType> e = new LinkedHashMap<>();
        e.put("embed", new TensorType(DType.F32, Shape.of(8, 4), Placement.HOST));
        e.put("wq", new TensorType(DType.F32, Shape.of(4, 4), Placement.HOST));
        return e;
    }

    static double[] ramp(int n, double scale) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = scale * (0.1 * i - 1.3) / 3;
        return v;
    }

    static Checkpoint.State state(long step) {
        return new Checkpoint.State(CONFIG, "adamw", Map.of("lr", 3e-4, "beta1", 0.9), step, 42,
                Corpus.EMBEDDED, Corpus.EMBEDDED,
                List.of(new double[] {1, 5.5}, new double[] {2, Double.NaN}), List.of(new double[] {2, 5.25}),
                Map.of("elapsed_s", "12.5"));
    }

    private String error(Path p) {
        return assertThatThrownBy(() -> Checkpoint.load(p)).isInstanceOf(CheckpointError.class).actual().getMessage();
    }

    @Test void roundTripsBitForBitThroughLatest() {
        Map<String, Tensor> m = Map.of("m.embed", Tensor.of(DType.F64, new long[] {2}, 1e-300, -0.0));
        Path dir = Checkpoint.save(root, state(123), weights(1), m);
        assertThat(dir).isEqualTo(root.resolve("step-000123"));
        Checkpoint.Loaded l = Checkpoint.load(root).requireWeights(expected());
        assertThat(l.dir()).isEqualTo(dir);
        for (var e : weights(1).entrySet()) assertThat(l.weights().get(e.getKey()).bitEquals(e.getValue())).isTrue();
        assertThat(l.weights().keySet()).containsExactly("embed", "wq");
        assertThat(l.moments().get("m.embed").bitEquals(m.get("m.embed"))).isTrue();
        Checkpoint.State s = l.state();
        assertThat(s.config()).isEqualTo(CONFIG);
        assertThat(s.optimizer()).isEqualTo("adamw");
        assertThat(s.hyper()).isEqualTo(Map.of("lr", 3e-4, "beta1", 0.9));
        assertThat(s.step()).isEqualTo(123);
        assertThat(s.seed()).isEqualTo(42);
        assertThat(s.dataFile()).isEqualTo("embedded");
        assertThat(s.trainLoss()).hasSize(2);
        assertThat(s.trainLoss().get(0)).containsExactly(1, 5.5);
        assertThat(s.trainLoss().get(1)[1]).isNaN();
        assertThat(s.valLoss().get(0)).containsExactly(2, 5.25);
        assertThat(s.extra()).isEqualTo(Map.of("elapsed_s", "12.5"));
        // the step directory itself loads too
        assertThat(Checkpoint.load(dir).state().step()).isEqualTo(123);
    }

    @Test void latestFollowsTheNewestSaveAndOldStepsStay() throws IOException {
        Checkpoint.save(root, state(1), weights(1), Map.of());
        Checkpoint.save(root, state(2), weights(2), Map.of());
        assertThat(Files.readString(root.resolve("latest"))).isEqualTo("step-000002\n");
        assertThat(Checkpoint.load(root).weights().get("embed").bitEquals(weights(2).get("embed"))).isTrue();
        assertThat(Checkpoint.load(root.resolve("step-000001")).weights().get("embed").bitEquals(weights(1).get("embed"))).isTrue();
        try (var s = Files.list(root.resolve("step-000002"))) {
            assertThat(s.map(p -> p.getFileName().toString()).sorted()).containsExactly("model.safetensors", "optimizer.safetensors", "state.json");
        }
    }

    @Test void aSaveThatDidNotFinishIsNotACheckpoint() throws IOException {
        Checkpoint.save(root, state(5), weights(1), Map.of());
        Path dir = root.resolve("step-000005");
        Files.delete(dir.resolve("state.json"));   // as after a crash before state.json
        assertThat(error(dir)).isEqualTo(dir + ": incomplete checkpoint (no state.json; its save did not finish)");
        assertThat(error(root)).isEqualTo(root.resolve("latest") + ": names step-000005, which holds no complete checkpoint");
    }

    @Test void refusesMissingThings() throws IOException {
        Path nowhere = root.resolve("nowhere");
        assertThat(error(nowhere)).isEqualTo(nowhere + ": checkpoint directory not found");
        assertThat(error(root)).isEqualTo(root + ": no checkpoint here (neither state.json nor latest)");
        Path dir = Checkpoint.save(root, state(1), weights(1), Map.of());
        Files.delete(dir.resolve("optimizer.safetensors"));
        // the weights alone load (sample and export need no more); resuming step 1 asks for the moments
        Checkpoint.Loaded bare = Checkpoint.load(root);
        assertThat(bare.moments()).isEmpty();
        for (var e : weights(1).entrySet()) assertThat(bare.weights().get(e.getKey()).bitEquals(e.getValue())).isTrue();
        assertThatThrownBy(() -> bare.requireMoments(Map.of("m.embed", kina.ir.TensorType.host(DType.F32, 8, 4))))
                .isInstanceOf(CheckpointError.class).hasMessage(dir.resolve("optimizer.safetensors") + ": not found: this checkpoint holds the "
                        + "weights alone, which sample and export read, but resuming its step 1 needs the optimizer's moments too");
        Files.delete(dir.resolve("model.safetensors"));
        assertThat(error(root)).isEqualTo(dir.resolve("model.safetensors") + ": file not found");
        Files.writeString(root.resolve("latest"), "../../etc");
        assertThat(error(root)).isEqualTo(root.resolve("latest") + ": corrupt pointer: expected a step-NNNNNN name");
    }

    @Test void refusesBadStateJson() throws IOException {
        Path dir = Checkpoint.save(root, state(1), weights(1), Map.of());
        Path st = dir.resolve("state.json");
        String good = Files.readString(st);
        Files.writeString(st, good.substring(0, good.length() / 2));
        assertThat(error(dir)).startsWith(st + ": corrupt JSON: ").doesNotContain("\n");
        Files.writeString(st, "{\"format\": \"kina-checkpoint\", \"a\": [1, 2");   // Jackson names its source here: not shown
        assertThat(error(dir)).isEqualTo(st + ": corrupt JSON: unexpected end of input (the array opened at line 1, column 36 is not closed)");
        Files.writeString(st, "{\"hello\": 1}");
        assertThat(error(dir)).isEqualTo(st + ": not a kina checkpoint state (no \"format\": \"kina-checkpoint\")");
        Files.writeString(st, good.replace("\"format_version\" : 1", "\"format_version\" : 2"));
        assertThat(error(dir)).isEqualTo(st + ": format version 2; this kina reads version 1");
        Files.writeString(st, good.replace("\"heads\" : 2", "\"heads\" : 3"));
        assertThat(error(dir)).isEqualTo(st + ": config: heads 3 does not divide d_model 4");
        Files.writeString(st, good.replace("\"step\" : 1,", ""));
        assertThat(error(dir)).isEqualTo(st + ": corrupt state: missing 'step'");
    }

    @Test void refusesBadTensorFiles() throws IOException {
        Path dir = Checkpoint.save(root, state(1), weights(1), Map.of());
        Path model = dir.resolve("model.safetensors");
        byte[] good = Files.readAllBytes(model);
        Files.write(model, Arrays.copyOf(good, good.length - 3));
        assertThat(error(dir)).isEqualTo(model + ": truncated: tensor 'wq' ends at data byte 192, but the data has 189 bytes");
        Files.writeString(model, "this is not a tensor file at all");
        assertThat(error(dir)).startsWith(model + ": not a safetensors file (header length ");
        SafeTensors.write(model, weights(2), Map.of("format", "pt"));   // valid, but not the saved one
        assertThat(error(dir)).isEqualTo(model + ": does not match state.json (SHA-256 differs): the file was changed or replaced");
    }

    @Test void refusesTensorsThatDoNotFitTheConfig() {
        Map<String, Tensor> w = weights(1);
        Checkpoint.save(root, state(1), w, Map.of());
        Path model = root.resolve("step-000001").resolve("model.safetensors");
        Checkpoint.Loaded l = Checkpoint.load(root);
        Map<String, TensorType> more = new LinkedHashMap<>(expected());
        more.put("wk", new TensorType(DType.F32, Shape.of(4, 4), Placement.HOST));
        assertThatThrownBy(() -> l.requireWeights(more)).isInstanceOf(CheckpointError.class)
                .hasMessage(model + ": missing tensor 'wk' (config storylm0)");
        Map<String, TensorType> wider = new LinkedHashMap<>(expected());
        wider.put("wq", new TensorType(DType.F32, Shape.of(4, 8), Placement.HOST));
        assertThatThrownBy(() -> l.requireWeights(wider)).isInstanceOf(CheckpointError.class)
                .hasMessage(model + ": tensor 'wq' is F32[4, 4], config storylm0 needs F32[4, 8]");
        Map<String, TensorType> fewer = new LinkedHashMap<>(expected());
        fewer.remove("wq");
        assertThatThrownBy(() -> l.requireWeights(fewer)).isInstanceOf(CheckpointError.class)
                .hasMessage(model + ": unexpected tensor 'wq' (config storylm0)");
        assertThatThrownBy(() -> l.requireMoments(expected())).isInstanceOf(CheckpointError.class)
                .hasMessage(root.resolve("step-000001").resolve("optimizer.safetensors") + ": missing tensor 'embed' (config storylm0)");
    }
}
