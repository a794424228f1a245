package kina.io;

/**
 * The size cap on what kina reads: every file (a .kina source, a .npy or JSON tensor, a JSON
 * config, a safetensors checkpoint and its state, a training text, a llama2.c model) is at most
 * {@code maxBytes} bytes and is refused by size before it is read. Readers also refuse, before
 * allocating, a header or a declared shape that asks for more than the file holds. A value the
 * readers take (their overloads without one use {@link #DEFAULT}, 1 GiB); the command line builds
 * one from {@code --max-file-size}.
 *
 * @param maxBytes the largest file read, in bytes (≥ 1; IllegalArgumentException otherwise)
 */
public record FileCap(long maxBytes) {
    /** The default cap: 1 GiB. */
    public static final FileCap DEFAULT = new FileCap(1L << 30);

    public FileCap {
        if (maxBytes < 1) throw new IllegalArgumentException("the file size cap must be at least 1 byte, got " + maxBytes);
    }

    /**
     * Null when a file of {@code size} bytes may be read, else the one-line problem:
     * {@code too large: N bytes, over the 1 GiB cap (raise it with --max-file-size)}.
     */
    public String tooLarge(long size) {
        if (size <= maxBytes) return null;
        return "too large: " + size + " bytes, over the " + human(maxBytes) + " cap (raise it with --max-file-size)";
    }

    /** {@code 1 GiB}, {@code 64 MiB}, {@code 512 KiB} or {@code 1000 bytes}: the largest unit that divides it. */
    public static String human(long bytes) {
        String[] units = {"bytes", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        long v = bytes;
        while (u < units.length - 1 && v >= 1024 && v % 1024 == 0) { v /= 1024; u++; }
        return v + " " + units[u];
    }

    /**
     * A size as the command line writes it: a whole number of bytes with an optional suffix K, M, G
     * or T (powers of 1024; KiB, MB and the like accepted too); -1 when {@code text} is not one.
     */
    public static long parseSize(String text) {
        String s = text.strip().toUpperCase(java.util.Locale.ROOT);
        long mult = 1;
        String[][] suffixes = {{"TIB", "TB", "T"}, {"GIB", "GB", "G"}, {"MIB", "MB", "M"}, {"KIB", "KB", "K"}, {"B"}};
        long[] mults = {1L << 40, 1L << 30, 1L << 20, 1L << 10, 1};
        outer:
        for (int i = 0; i < suffixes.length; i++)
            for (String suf : suffixes[i])
                if (s.endsWith(suf)) {
                    s = s.substring(0, s.length() - suf.length()).strip();
                    mult = mults[i];
                    break outer;
                }
        if (s.isEmpty() || !s.chars().allMatch(Character::isDigit) || s.length() > 18) return -1;
        long v = Long.parseLong(s);
        if (v > Long.MAX_VALUE / mult) return -1;
        return v * mult;
    }
}
