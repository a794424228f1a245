package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The golden modules examples/NAME.mlir (the Section 14 §9 and Section 10 examples) are what the
 * emitter writes today, and mlir-opt-19 accepts them. After an intended change of the lowering,
 * regenerate them: {@code bin/test -Dtest=GoldenTest -Dkina.golden.update=true} (or
 * {@code bin/kina emit-mlir examples/NAME.kina -o examples/NAME.mlir}) and review the diff.
 */
class GoldenTest {

    @ParameterizedTest @ValueSource(strings = {"ad_reshape", "ad_matmul4", "ad_gather", "nll_ad", "storylm0_ad_step"})
    void theGoldenModuleIsWhatTheEmitterWrites(String name) throws IOException {
        String text = EmitterTest.emit("examples/" + name + ".kina");
        Path golden = Path.of("examples", name + ".mlir");
        if (Boolean.getBoolean("kina.golden.update")) Files.writeString(golden, text);
        assertThat(golden).as("golden %s (regenerate: bin/kina emit-mlir examples/%s.kina -o %s)", golden, name, golden).exists();
        assertThat(text).as("emit-mlir examples/%s.kina differs from %s", name, golden).isEqualTo(Files.readString(golden));
        MlirTools.assertAccepted(Files.readString(golden), golden.toString());
    }
}
