package kina.syntax;

import java.util.ArrayList;
import java.util.List;

import kina.ir.Pos;
import kina.ir.Syntax;

/**
 * Splits kina source into tokens (docs/language.md, "Lexical structure"): identifiers {@code [A-Za-z_][A-Za-z0-9_]*},
 * keywords, numbers ({@code 12}, {@code 1.5}, {@code 1.0E-5}; the sign is a separate {@code -}),
 * IR-internal names {@code %name} (the marked form of instructions transform_ad makes), punctuation, and
 * {@code //} comments to the end of the line. Lines and columns are 1-based.
 */
public final class Lexer {

    /** Token kinds. PUNCT covers every operator and bracket, including {@code ->}. */
    public enum Kind { IDENT, KEYWORD, NUMBER, INTERNAL, PUNCT, EOF }

    /** One token; {@code text} is the source spelling ("" for EOF). */
    public record Token(Kind kind, String text, Pos pos) {
        /** True for a keyword or punctuation token spelled {@code s}. */
        public boolean is(String s) { return (kind == Kind.KEYWORD || kind == Kind.PUNCT) && text.equals(s); }

        /** How an error message names it: {@code 'in'}, or {@code end of input}. */
        public String describe() { return kind == Kind.EOF ? "end of input" : "'" + text + "'"; }
    }


    private static final String SINGLE = "(){}[]<>,.:=+-*/@";

    private Lexer() {}

    /** All tokens of {@code source}, ending with EOF; throws SyntaxError on a character kina has no use for. */
    public static List<Token> lex(String file, String source) {
        List<Token> out = new ArrayList<>();
        int i = 0, line = 1, col = 1, n = source.length();
        while (true) {
            // skip blanks and comments
            while (i < n) {
                char c = source.charAt(i);
                if (c == '\n') { i++; line++; col = 1; }
                else if (c == ' ' || c == '\t' || c == '\r') { i++; col++; }
                else if (c == '/' && i + 1 < n && source.charAt(i + 1) == '/') {
                    while (i < n && source.charAt(i) != '\n') { i++; col++; }
                } else break;
            }
            Pos pos = new Pos(file, line, col);
            if (i >= n) { out.add(new Token(Kind.EOF, "", pos)); return out; }
            char c = source.charAt(i);
            int start = i;
            Kind kind;
            if (identStart(c)) {
                while (i < n && identPart(source.charAt(i))) i++;
                kind = Syntax.KEYWORDS.contains(source.substring(start, i)) ? Kind.KEYWORD : Kind.IDENT;
            } else if (c >= '0' && c <= '9') {
                i = digits(source, i);
                if (i + 1 < n && source.charAt(i) == '.' && isDigit(source.charAt(i + 1))) i = digits(source, i + 1);
                if (i < n && (source.charAt(i) == 'e' || source.charAt(i) == 'E')) {
                    int j = i + 1;
                    if (j < n && (source.charAt(j) == '+' || source.charAt(j) == '-')) j++;
                    if (j < n && isDigit(source.charAt(j))) i = digits(source, j);
                }
                kind = Kind.NUMBER;
            } else if (c == '%' && i + 1 < n && identPart(source.charAt(i + 1))) {
                i++;
                while (i < n && identPart(source.charAt(i))) i++;
                kind = Kind.INTERNAL;
            } else if (c == '-' && i + 1 < n && source.charAt(i + 1) == '>') {
                i += 2;
                kind = Kind.PUNCT;
            } else if (SINGLE.indexOf(c) >= 0) {
                i++;
                kind = Kind.PUNCT;
            } else {
                String shown = Character.isISOControl(c) ? String.format("\\u%04x", (int) c) : String.valueOf(c);
                throw new SyntaxError(pos, "unexpected character '" + shown + "'");
            }
            out.add(new Token(kind, source.substring(start, i), pos));
            col += i - start;
        }
    }

    private static int digits(String s, int i) {
        while (i < s.length() && isDigit(s.charAt(i))) i++;
        return i;
    }

    private static boolean isDigit(char c) { return c >= '0' && c <= '9'; }

    private static boolean identStart(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

    private static boolean identPart(char c) { return identStart(c) || isDigit(c); }
}
