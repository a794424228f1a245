/*
 * The train step's arena against the sequence length: compiles (without running) the AdamW train
 * step of medium's shape (d 256, 8 heads, 4 layers, SwiGLU 688; the long config) at each T, with
 * the weights and moments carried as training carries them (updated in their own buffers), and
 * prints the plan's arena (what kina bench's arena_mb says), its lower bound (the most bytes live at once) and the arena per row.
 * Any build: run it against a jar on the class path.
 *
 *   java --add-modules jdk.incubator.vector -cp target/kina.jar bench/ArenaVsSeq.java BATCH T...
 *   e.g. ... bench/ArenaVsSeq.java 2 256 512 1024 2048 4096
 */
import java.util.Locale;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import kina.model.Trainer;
import kina.plan.Plan;

public class ArenaVsSeq {
    public static void main(String[] args) {
        int batch = Integer.parseInt(args[0]);
        System.out.printf(Locale.ROOT, "%6s %12s %14s %16s%n", "T", "arena MiB", "peak live MiB", "arena KiB / row");
        for (int i = 1; i < args.length; i++) {
            int t = Integer.parseInt(args[i]);
            Config c = new Config("long", 256, 256, 8, 8, t, 4, 688, Config.ROPE_BASE, Config.EPS, false);
            Optimizer opt = new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
            Plan p = Plan.compile(Trainer.compile(StoryLm.trainStep(c, batch, opt)));
            p.carry(Trainer.carried(c, opt));             // as training and kina bench carry the weights and moments

            System.out.printf(Locale.ROOT, "%6d %12.1f %14.1f %16.1f%n", t, p.arenaBytes() / 1048576.0, p.peakLiveBytes() / 1048576.0,
                    p.arenaBytes() / 1024.0 / ((double) batch * t));
        }
    }
}
