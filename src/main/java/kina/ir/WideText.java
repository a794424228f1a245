package kina.ir;

/**
 * Text in UTF-16 or UTF-32 (as Windows tools save "Unicode" text), told apart from UTF-8 and from
 * binary data so that a reader of UTF-8 can say what the file is and how to convert it. A file is
 * wide text when it starts with a byte-order mark (FF FE, FE FF, FF FE 00 00, 00 00 FE FF), or,
 * without one, when one byte of every two in its first 4 KiB is mostly zero and the other never is
 * (UTF-16 of text that is mostly ASCII).
 */
public final class WideText {
    private WideText() {}

    /** How {@code bytes} are encoded, or null when they are not wide text: the name and the one line to say. */
    public record Encoding(String name, boolean byteOrderMark) {
        /** {@code UTF-16 text (little-endian); save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8}. */
        public String advice(String file) {
            String iconv = byteOrderMark ? name.substring(0, 6) : name;
            String order = name.endsWith("LE") ? "little-endian" : "big-endian";
            return name.substring(0, 6) + " text (" + order + (byteOrderMark ? ", with a byte-order mark" : "") + "), not UTF-8: save it as UTF-8, e.g. iconv -f "
                    + iconv + " -t UTF-8 " + file + " > " + file + ".utf8";
        }
    }

    /** The wide encoding of {@code b}, or null. */
    public static Encoding of(byte[] b) {
        if (starts(b, 0xFF, 0xFE, 0x00, 0x00)) return new Encoding("UTF-32LE", true);
        if (starts(b, 0x00, 0x00, 0xFE, 0xFF)) return new Encoding("UTF-32BE", true);
        if (starts(b, 0xFF, 0xFE)) return new Encoding("UTF-16LE", true);
        if (starts(b, 0xFE, 0xFF)) return new Encoding("UTF-16BE", true);
        int pairs = Math.min(b.length, 4096) / 2;
        if (pairs < 2) return null;
        int zeroEven = 0, zeroOdd = 0;
        for (int i = 0; i < pairs; i++) {
            if (b[2 * i] == 0) zeroEven++;
            if (b[2 * i + 1] == 0) zeroOdd++;
        }
        if (zeroOdd * 10 >= pairs * 6 && zeroEven == 0) return new Encoding("UTF-16LE", false);
        if (zeroEven * 10 >= pairs * 6 && zeroOdd == 0) return new Encoding("UTF-16BE", false);
        return null;
    }

    private static boolean starts(byte[] b, int... head) {
        if (b.length < head.length) return false;
        for (int i = 0; i < head.length; i++) if ((b[i] & 0xff) != head[i]) return false;
        return true;
    }
}
