package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LossPlotTest {
    @TempDir Path tmp;

    @Test void writesAPng() throws IOException {
        List<double[]> train = new ArrayList<>(), val = new ArrayList<>();
        for (int s = 1; s <= 200; s++) train.add(new double[] {s, 5.5 * Math.exp(-s / 40.0) + 1.6 + 0.05 * Math.sin(s)});
        for (int s = 25; s <= 200; s += 25) val.add(new double[] {s, 5.5 * Math.exp(-s / 40.0) + 1.7});
        train.add(new double[] {201, Double.NaN});   // a diverged step is left out, not fatal
        Path png = tmp.resolve("loss.png");
        LossPlot.write(png, train, val, 3.02);
        BufferedImage img = ImageIO.read(png.toFile());
        assertThat(img.getWidth()).isEqualTo(800);
        assertThat(img.getHeight()).isEqualTo(500);
        try (var s = Files.list(tmp)) { assertThat(s).containsExactly(png); }
    }

    /** The step axis ends on a round number: ticks 0, 100, 200, … for 600 steps, not 1, 119, 237, …. */
    @Test void theStepAxisUsesRoundTicks() {
        assertThat(LossPlot.tickStep(600)).isEqualTo(100);
        assertThat(LossPlot.tickStep(2000)).isEqualTo(500);
        assertThat(LossPlot.tickStep(53)).isEqualTo(10);
        assertThat(LossPlot.tickStep(3)).isEqualTo(1);
        for (double hi : new double[] {7, 53, 600, 1234, 2000, 99999}) {
            double s = LossPlot.tickStep(hi), m = s / Math.pow(10, Math.floor(Math.log10(s)));
            assertThat(m).as("%s", hi).isIn(1.0, 2.0, 5.0);
            assertThat(Math.ceil(hi / s)).as("%s", hi).isBetween(1.0, 10.0);
        }
    }

    @Test void emptyHistoriesStillPlot() throws IOException {
        Path empty = tmp.resolve("empty.png"), one = tmp.resolve("one.png");
        LossPlot.write(empty, List.of(), List.of(), Double.NaN);
        LossPlot.write(one, List.of(new double[] {1, 2.0}), List.of(), 3.0);
        for (Path png : List.of(empty, one)) {
            var img = ImageIO.read(png.toFile());
            assertThat(img).as(png.toString()).isNotNull();
            assertThat(img.getWidth()).as(png + " width").isGreaterThan(100);
            assertThat(img.getHeight()).as(png + " height").isGreaterThan(100);
        }
    }
}
