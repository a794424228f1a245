package kina.model;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import kina.io.AtomicFiles;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.BitmapEncoder.BitmapFormat;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler.LegendPosition;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * A PNG line chart of a run's losses (nats per byte) against the step: the training loss, the
 * validation loss, and the unigram-entropy baseline as a dashed horizontal line. Drawn headless
 * (sets {@code java.awt.headless=true}) and written atomically (temp file, then rename).
 */
public final class LossPlot {
    private LossPlot() {}

    /**
     * Writes the chart to {@code png}. {@code train} and {@code val} hold (step, loss) pairs; either
     * may be empty; non-finite losses are left out. {@code baseline} NaN draws no baseline.
     * FileFormatError (kina.io) when the file cannot be written.
     */
    public static void write(Path png, List<double[]> train, List<double[]> val, double baseline) {
        AtomicFiles.write(png, render(train, val, baseline, 800, 500));
    }

    /** The chart as PNG bytes, {@code width} × {@code height} pixels. */
    public static byte[] render(List<double[]> train, List<double[]> val, double baseline, int width, int height) {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder().width(width).height(height)
                .title("Loss").xAxisTitle("step").yAxisTitle("cross-entropy (nats/byte)").build();
        chart.getStyler().setLegendPosition(LegendPosition.InsideNE);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridLinesVisible(true);

        double lo = Double.POSITIVE_INFINITY, hi = Double.NEGATIVE_INFINITY;
        for (List<double[]> s : List.of(train, val))
            for (double[] p : s) if (finite(p)) { lo = Math.min(lo, p[0]); hi = Math.max(hi, p[0]); }
        if (lo > hi) { lo = 0; hi = 1; }
        if (lo == hi) hi = lo + 1;
        // The step axis from 0 to a round number, so the ticks fall on round steps (0, 100, 200, …)
        // rather than on the first step plus multiples of an odd spacing, whose labels crowded.
        double step = tickStep(hi), end = Math.ceil(hi / step) * step;
        chart.getStyler().setXAxisMin(Math.min(0, lo)).setXAxisMax(end);
        chart.setCustomXAxisTickLabelsFormatter(x -> x == Math.rint(x) ? String.format(java.util.Locale.ROOT, "%,d", Math.round(x))
                : String.format(java.util.Locale.ROOT, "%.1f", x));

        add(chart, "train", train, new Color(0x1f77b4), false);
        add(chart, "validation", val, new Color(0xd62728), true);
        if (Double.isFinite(baseline)) {
            XYSeries b = chart.addSeries(String.format("unigram baseline %.3f", baseline),
                    new double[] {lo, hi}, new double[] {baseline, baseline});
            b.setMarker(SeriesMarkers.NONE);
            b.setLineColor(Color.GRAY);
            b.setLineStyle(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        }
        // XChart puts the ticks of equally spaced x values (steps 1, 2, 3, …) on every k-th value,
        // 1, 1 + k, …; an invisible point off that lattice makes it choose round ticks instead.
        XYSeries anchor = chart.addSeries(" ", new double[] {0.5}, new double[] {Double.isFinite(baseline) ? baseline : 0});
        anchor.setMarker(SeriesMarkers.NONE);
        anchor.setLineColor(new Color(0, 0, 0, 0));
        anchor.setShowInLegend(false);
        if (chart.getSeriesMap().size() == 1) {
            XYSeries e = chart.addSeries("no data", new double[] {0, 1}, new double[] {0, 0});
            e.setMarker(SeriesMarkers.NONE);
            e.setLineColor(new Color(0, 0, 0, 0));
        }
        try {
            return BitmapEncoder.getBitmapBytes(chart, BitmapFormat.PNG);
        } catch (IOException e) {
            throw new IllegalStateException("PNG encoding failed", e);
        }
    }

    /** A round tick spacing (1, 2 or 5 × 10^k) that divides [0, hi] into 4 to 10 parts. */
    static double tickStep(double hi) {
        double raw = hi / 8, mag = Math.pow(10, Math.floor(Math.log10(raw)));
        for (double m : new double[] {1, 2, 5, 10}) if (m * mag >= raw) return Math.max(1, m * mag);
        return Math.max(1, 10 * mag);
    }

    private static void add(XYChart chart, String name, List<double[]> pts, Color color, boolean markers) {
        int n = 0;
        for (double[] p : pts) if (finite(p)) n++;
        if (n == 0) return;
        double[] x = new double[n], y = new double[n];
        int i = 0;
        for (double[] p : pts) if (finite(p)) { x[i] = p[0]; y[i] = p[1]; i++; }
        XYSeries s = chart.addSeries(name, x, y);
        s.setLineColor(color);
        s.setMarkerColor(color);
        s.setMarker(markers ? SeriesMarkers.CIRCLE : SeriesMarkers.NONE);
    }

    private static boolean finite(double[] p) {
        return p.length >= 2 && Double.isFinite(p[0]) && Double.isFinite(p[1]);
    }
}
