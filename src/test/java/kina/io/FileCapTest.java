package kina.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The size cap is a value each read takes: one read's cap leaves the next read's default alone. */
class FileCapTest {
    @TempDir Path dir;

    @Test void sizesParseAndPrintInPowersOf1024() {
        assertThat(FileCap.parseSize("4G")).isEqualTo(4L << 30);
        assertThat(FileCap.parseSize("512 MiB")).isEqualTo(512L << 20);
        assertThat(FileCap.parseSize("1000")).isEqualTo(1000);
        assertThat(FileCap.parseSize("-3")).isEqualTo(-1);
        assertThat(FileCap.parseSize("9999999999T")).isEqualTo(-1);
        assertThat(FileCap.human(1L << 30)).isEqualTo("1 GiB");
        assertThat(FileCap.human(1000)).isEqualTo("1000 bytes");
        assertThat(FileCap.DEFAULT.maxBytes()).isEqualTo(1L << 30);
        assertThatThrownBy(() -> new FileCap(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test void aCapRefusesALargerFileAndTheDefaultStillReadsIt() throws Exception {
        Path p = dir.resolve("x.npy");
        Npy.write(p, Tensor.ofFloats(TensorType.host(DType.F32, 2, 3), new double[6]));
        long size = Files.size(p);
        FileCap small = new FileCap(size - 1);
        assertThat(small.tooLarge(size)).isEqualTo("too large: " + size + " bytes, over the " + (size - 1) + " bytes cap (raise it with --max-file-size)");
        assertThat(small.tooLarge(size - 1)).isNull();
        assertThatThrownBy(() -> Npy.read(p, small)).isInstanceOf(FileFormatError.class)
                .hasMessage(p + ": " + small.tooLarge(size));
        assertThat(Npy.read(p).size()).isEqualTo(6);
        assertThat(Npy.read(p, new FileCap(size)).size()).isEqualTo(6);
        Path st = dir.resolve("w.safetensors");
        SafeTensors.write(st, Map.of("w", Tensor.ofFloats(TensorType.host(DType.F32, 2), new double[2])), Map.of());
        assertThatThrownBy(() -> SafeTensors.read(st, new FileCap(Files.size(st) - 1))).isInstanceOf(FileFormatError.class).hasMessageContaining("too large");
        assertThat(SafeTensors.read(st).tensors()).containsOnlyKeys("w");
    }
}
