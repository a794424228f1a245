package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import kina.ir.DType;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import org.junit.jupiter.api.Test;

/** The contractions' tiles follow the host's vector width, and the width is part of the object's cache key. */
class ScheduleTest {

    @Test void theRegisterTileFollowsTheVectorWidth() {
        assertThat(Schedule.registerTile(512, DType.F32, 64)).isEqualTo(new Schedule.Tile(8, 32));
        assertThat(Schedule.registerTile(512, DType.F64, 64)).isEqualTo(new Schedule.Tile(8, 16));
        assertThat(Schedule.registerTile(256, DType.F32, 64)).isEqualTo(new Schedule.Tile(6, 16));
        assertThat(Schedule.registerTile(256, DType.F32, 172)).isEqualTo(new Schedule.Tile(6, 16));
        assertThat(Schedule.registerTile(128, DType.F32, 64)).isEqualTo(new Schedule.Tile(4, 8));
        // AVX-512 rows that straddle cache lines (172 floats apart): one vector of columns, 16 rows
        assertThat(Schedule.registerTile(512, DType.F32, 172)).isEqualTo(new Schedule.Tile(16, 16));
    }

    @Test void aWidthOf256BitsChoosesTheAvx2TilesAndAnotherObject() {
        Emitter.Module m = Emitter.emitNative(StoryLm.trainStep(Config.byName("tiny"), 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0)));
        String was = System.getProperty(Schedule.VECTOR_BITS);
        try {
            System.setProperty(Schedule.VECTOR_BITS, "256");
            assertThat(Schedule.vectorBits()).isEqualTo(256);
            String avx2 = Schedule.text(m, Schedule.vectorBits());
            assertThat(avx2).contains("tile_sizes = [6, 16, 0]").doesNotContain("tile_sizes = [8, 32, 0]");
            System.setProperty(Schedule.VECTOR_BITS, "512");
            assertThat(Schedule.text(m, Schedule.vectorBits())).contains("tile_sizes = [8, 32, 0]", "tile_sizes = [16, 16, 0]");
            if (Toolchain.find().isPresent()) {
                String k512 = Toolchain.key(m);
                System.setProperty(Schedule.VECTOR_BITS, "256");
                assertThat(Toolchain.key(m)).isNotEqualTo(k512);
            }
            System.setProperty(Schedule.VECTOR_BITS, "300");
            assertThatThrownBy(Schedule::vectorBits).isInstanceOf(MlirError.class).hasMessageContaining("must be 128, 256 or 512");
        } finally {
            if (was == null) System.clearProperty(Schedule.VECTOR_BITS);
            else System.setProperty(Schedule.VECTOR_BITS, was);
        }
    }
}
