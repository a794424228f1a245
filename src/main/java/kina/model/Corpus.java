package kina.model;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import kina.io.FileCap;

/**
 * A training text as bytes (the {@link ByteTokenizer}'s tokens), split into a training part and a
 * validation part (the last {@code validFraction} of the bytes). Loaded from a file or from the
 * embedded Brown corpus excerpt ({@link #EMBEDDED_RESOURCE}).
 *
 * <p>A file is refused (DataError, one line) when it is missing, empty, larger than
 * {@link #MAX_BYTES}, UTF-16 or UTF-32 text (named, with how to convert it: {@link kina.ir.WideText}),
 * binary (a NUL byte, or more than 10% control characters other than tab, line feed, carriage
 * return and form feed), or not strict UTF-8. {@link #trainBatches} and
 * {@link #validBatches} refuse a text too short for the sequence length.
 */
public final class Corpus {
    /** The name and data file recorded for the embedded corpus. */
    public static final String EMBEDDED = "embedded";
    public static final String EMBEDDED_RESOURCE = "/kina/corpus/brown-excerpt.txt";
    public static final long MAX_BYTES = 512L * 1024 * 1024;
    public static final double DEFAULT_VALID_FRACTION = 0.1;

    private final String name;
    private final byte[] bytes;
    private final int split;

    private Corpus(String name, byte[] bytes, double validFraction) {
        if (!(validFraction > 0 && validFraction < 1))
            throw new DataError(name, "validation fraction must be in (0, 1), got " + validFraction);
        this.name = name;
        this.bytes = bytes;
        this.split = (int) Math.round(bytes.length * (1 - validFraction));
    }

    /** {@code file}, or the embedded corpus when {@code file} is null; 10% validation, under {@link FileCap#DEFAULT}. */
    public static Corpus load(Path file) {
        return load(file, DEFAULT_VALID_FRACTION, FileCap.DEFAULT);
    }

    /** {@code file}, or the embedded corpus when {@code file} is null; 10% validation; DataError for a file over {@code cap}. */
    public static Corpus load(Path file, FileCap cap) {
        return load(file, DEFAULT_VALID_FRACTION, cap);
    }

    /** {@code file}, or the embedded corpus when {@code file} is null, under {@link FileCap#DEFAULT}. */
    public static Corpus load(Path file, double validFraction) {
        return load(file, validFraction, FileCap.DEFAULT);
    }

    /** {@code file}, or the embedded corpus when {@code file} is null; DataError for a file over {@code cap}. */
    public static Corpus load(Path file, double validFraction, FileCap cap) {
        if (file == null) return embedded(validFraction);
        String name = file.toString();
        long size;
        try {
            size = Files.size(file);
        } catch (NoSuchFileException e) {
            throw new DataError(name, "file not found");
        } catch (IOException e) {
            throw new DataError(name, "cannot read: " + e.getMessage(), e);
        }
        if (Files.isDirectory(file)) throw new DataError(name, "is a directory, not a text file");
        if (size > MAX_BYTES) throw new DataError(name, "too large: " + size + " bytes (the limit is " + MAX_BYTES + ")");
        String big = cap.tooLarge(size);
        if (big != null) throw new DataError(name, big);
        byte[] b;
        try {
            b = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new DataError(name, "cannot read: " + e.getMessage(), e);
        }
        return of(name, b, validFraction);
    }

    /** The embedded Brown corpus excerpt, 10% validation. */
    public static Corpus embedded() {
        return embedded(DEFAULT_VALID_FRACTION);
    }

    /** The embedded Brown corpus excerpt. */
    public static Corpus embedded(double validFraction) {
        try (InputStream in = Corpus.class.getResourceAsStream(EMBEDDED_RESOURCE)) {
            if (in == null) throw new DataError(EMBEDDED, "resource " + EMBEDDED_RESOURCE + " missing from the classpath");
            return of(EMBEDDED, in.readAllBytes(), validFraction);
        } catch (IOException e) {
            throw new DataError(EMBEDDED, "cannot read resource: " + e.getMessage(), e);
        }
    }

    /** A corpus over {@code bytes} (taken, not copied), checked as a file would be; {@code name} names it in errors. */
    public static Corpus of(String name, byte[] bytes, double validFraction) {
        if (bytes.length == 0) throw new DataError(name, "empty file");
        if (bytes.length > MAX_BYTES) throw new DataError(name, "too large: " + bytes.length + " bytes (the limit is " + MAX_BYTES + ")");
        checkText(name, bytes);
        return new Corpus(name, bytes, validFraction);
    }

    private static void checkText(String name, byte[] b) {
        kina.ir.WideText.Encoding wide = kina.ir.WideText.of(b);
        if (wide != null) throw new DataError(name, wide.advice(name));
        long control = 0;
        for (int i = 0; i < b.length; i++) {
            int c = b[i] & 0xff;
            if (c == 0) throw new DataError(name, "binary file (NUL byte at offset " + i + ")");
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7f) control++;
        }
        if (control * 10 > b.length)
            throw new DataError(name, "binary file (" + control + " of " + b.length + " bytes are control characters)");
        CharsetDecoder d = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(b);
        try {
            d.decode(in);
        } catch (MalformedInputException e) {
            throw new DataError(name, "not UTF-8 (invalid byte sequence at offset " + in.position() + ")");
        } catch (CharacterCodingException e) {
            throw new DataError(name, "not UTF-8 (" + e.getMessage() + ")");
        }
    }

    /** The file name as given, or {@link #EMBEDDED}. */
    public String name() { return name; }

    /** The whole text's bytes (do not modify). */
    public byte[] bytes() { return bytes; }

    public int size() { return bytes.length; }

    /** Bytes [0, trainSize()) are training text. */
    public int trainSize() { return split; }

    /** Bytes [trainSize(), size()) are validation text. */
    public int validSize() { return bytes.length - split; }

    /** The lowercase hex SHA-256 of the bytes. */
    public String sha256() {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The entropy of the training bytes' unigram distribution, in nats: −Σ p ln p. A model that
     * only learned byte frequencies has this cross-entropy, so it is the baseline a loss must beat.
     */
    public double unigramEntropyNats() {
        long[] counts = new long[ByteTokenizer.VOCAB];
        for (int i = 0; i < split; i++) counts[bytes[i] & 0xff]++;
        double h = 0;
        for (long c : counts) {
            if (c == 0) continue;
            double p = (double) c / split;
            h -= p * Math.log(p);
        }
        return h;
    }

    /** Random training windows; the batch for step s depends only on (seed, s). */
    public Batches trainBatches(int batch, int seq, long seed) {
        return new Batches(name + " (training part)", bytes, 0, split, batch, seq, seed);
    }

    /**
     * Random validation windows, fixed by the seed: {@code validBatches(b, s, seed).at(i)} is the
     * same for every call, and differs from the training stream's windows.
     */
    public Batches validBatches(int batch, int seq, long seed) {
        return new Batches(name + " (validation part)", bytes, split, bytes.length, batch, seq, Batches.mix(seed, VALID_SALT));
    }

    /** Training windows over the ids {@code tok} makes of the training part (each part is encoded on its own). */
    public Batches trainBatches(Tokenizer tok, int batch, int seq, long seed) {
        return new Batches(name + " (training part, " + tok.kind() + ")", tokens(tok, 0, split), bytesOf(tok), batch, seq, seed);
    }

    /** Validation windows over the ids {@code tok} makes of the validation part, fixed by the seed. */
    public Batches validBatches(Tokenizer tok, int batch, int seq, long seed) {
        return new Batches(name + " (validation part, " + tok.kind() + ")", tokens(tok, split, bytes.length), bytesOf(tok), batch, seq,
                Batches.mix(seed, VALID_SALT));
    }

    private int[] tokens(Tokenizer tok, int from, int to) { return tok.encode(java.util.Arrays.copyOfRange(bytes, from, to)); }

    private static int[] bytesOf(Tokenizer tok) {
        int[] n = new int[tok.vocab()];
        for (int i = 0; i < n.length; i++) n[i] = tok.bytes(i).length;
        return n;
    }

    private static final long VALID_SALT = 0x5eed_7a11_da7aL;
}
