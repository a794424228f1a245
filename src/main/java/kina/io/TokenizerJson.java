package kina.io;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link Vocabulary} as a Hugging Face {@code tokenizer.json} (the {@code tokenizers} library's
 * file): a BPE model with byte fallback, the normalizer {@code Sequence[Replace(" ", "▁")]}, no
 * pre-tokenizer, and the decoder that undoes both; the special tokens are its added tokens. This is
 * the form transformers gives Llama 2's SentencePiece tokenizer, less its dummy prefix.
 *
 * <p>A BPE of that kind merges pairs by rank, SentencePiece (and llama2.c's run.c, and kina) by the
 * score of the merged token. The writer lists every pair of tokens whose concatenation is a token,
 * by that token's score, highest first; the reader takes a merge list back only where ranks give
 * the same merges: every merge makes a token, every split of a token into two tokens is a merge,
 * and the merges of one token are adjacent. A token's score is then minus the rank of its first
 * merge (0 for a token no merge makes). Within one token's merges transformers follows the rank
 * and SentencePiece the leftmost pair, which can split a rare overlap ("ab a ba") differently.
 */
public final class TokenizerJson {
    private TokenizerJson() {}

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** The file {@code tokenizer.json} of {@code v}; NORMAL tokens may not be repeated. */
    public static byte[] write(Vocabulary v) {
        ObjectNode o = JSON.createObjectNode();
        o.put("version", "1.0");
        o.putNull("truncation");
        o.putNull("padding");
        ArrayNode added = o.putArray("added_tokens");
        String unk = null;
        for (int i = 0; i < v.size(); i++) {
            Vocabulary.Type t = v.types().get(i);
            if (t != Vocabulary.Type.CONTROL && t != Vocabulary.Type.UNKNOWN) continue;
            if (t == Vocabulary.Type.UNKNOWN) unk = v.tokens().get(i);
            added.addObject().put("id", i).put("content", v.tokens().get(i)).put("single_word", false).put("lstrip", false)
                    .put("rstrip", false).put("normalized", false).put("special", true);
        }
        ObjectNode norms = o.putObject("normalizer");             // a Sequence of one, the form Llama 2's file has (less its Prepend)
        norms.put("type", "Sequence");
        ObjectNode norm = norms.putArray("normalizers").addObject();
        norm.put("type", "Replace").putObject("pattern").put("String", " ");
        norm.put("content", Vocabulary.SPACE);
        o.putNull("pre_tokenizer");
        o.putNull("post_processor");
        ObjectNode dec = o.putObject("decoder");
        dec.put("type", "Sequence");
        ArrayNode ds = dec.putArray("decoders");
        ObjectNode rep = ds.addObject();
        rep.put("type", "Replace").putObject("pattern").put("String", Vocabulary.SPACE);
        rep.put("content", " ");
        ds.addObject().put("type", "ByteFallback");
        ds.addObject().put("type", "Fuse");
        ObjectNode m = o.putObject("model");
        m.put("type", "BPE");
        m.putNull("dropout");
        if (unk != null) m.put("unk_token", unk);
        else m.putNull("unk_token");
        m.putNull("continuing_subword_prefix");
        m.putNull("end_of_word_suffix");
        m.put("fuse_unk", true);
        m.put("byte_fallback", true);
        m.put("ignore_merges", false);
        ObjectNode vocab = m.putObject("vocab");
        for (int i = 0; i < v.size(); i++) vocab.put(v.tokens().get(i), i);
        ArrayNode merges = m.putArray("merges");
        for (String[] pair : merges(v)) merges.addArray().add(pair[0]).add(pair[1]);
        try {
            return JSON.writeValueAsBytes(o);
        } catch (JacksonException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every split of a NORMAL token into two NORMAL tokens, by the token's score (highest first), then its id, then the split point. */
    static List<String[]> merges(Vocabulary v) {
        Map<String, Integer> normal = new HashMap<>();
        for (int i = 0; i < v.size(); i++) if (v.types().get(i) == Vocabulary.Type.NORMAL) normal.putIfAbsent(v.tokens().get(i), i);
        Integer[] order = new Integer[v.size()];
        for (int i = 0; i < order.length; i++) order[i] = i;
        Arrays.sort(order, (x, y) -> v.scores()[x] != v.scores()[y] ? Float.compare(v.scores()[y], v.scores()[x]) : Integer.compare(x, y));
        List<String[]> out = new ArrayList<>();
        for (int id : order) {
            if (v.types().get(id) != Vocabulary.Type.NORMAL) continue;
            String t = v.tokens().get(id);
            for (int k = t.offsetByCodePoints(0, 1); k < t.length(); k = t.offsetByCodePoints(k, 1)) {
                String a = t.substring(0, k), b = t.substring(k);
                if (normal.containsKey(a) && normal.containsKey(b)) out.add(new String[] {a, b});
            }
        }
        return out;
    }

    /**
     * Reads a tokenizer.json of the kind {@link #write} writes (a Llama 2 style one, with the dummy
     * prefix of a {@code Prepend("▁")} normalizer or a Metaspace pre-tokenizer, is read too, and
     * says so in {@link Vocabulary#dummyPrefix()}); {@code where} names the file in errors.
     *
     * @throws ModelFileError naming what kina's BPE cannot represent: another model type, a GPT-2
     *     style byte-level pre-tokenizer, no byte fallback, a merge list ranks cannot reproduce
     */
    public static Vocabulary read(String where, byte[] file) {
        JsonNode o;
        try {
            o = JSON.readTree(file);
        } catch (JacksonException e) {
            throw new ModelFileError(where, "not valid JSON: " + e.getOriginalMessage().replace('\n', ' '));
        } catch (java.io.IOException e) {
            throw new ModelFileError(where, "cannot read: " + e.getMessage());
        }
        if (o == null || !o.isObject() || !o.path("model").isObject()) throw new ModelFileError(where, "not a tokenizer.json (no \"model\" object)");
        JsonNode m = o.get("model");
        String type = m.path("type").asText("BPE");
        if (!type.equals("BPE")) throw new ModelFileError(where, "model type " + type + ": kina's tokenizer is a BPE (SentencePiece style, with byte fallback)");
        boolean prefix = normalizer(where, o.get("normalizer")) | preTokenizer(where, o.get("pre_tokenizer"));
        if (!m.path("byte_fallback").asBoolean(false))
            throw new ModelFileError(where, "model.byte_fallback false: kina's BPE falls back to the bytes <0x00>…<0xFF> for a character it has no token for");
        for (String k : List.of("continuing_subword_prefix", "end_of_word_suffix"))
            if (m.hasNonNull(k) && !m.get(k).asText().isEmpty()) throw new ModelFileError(where, "model." + k + " \"" + m.get(k).asText() + "\": kina's BPE has none");
        if (m.path("ignore_merges").asBoolean(false)) throw new ModelFileError(where, "model.ignore_merges true: kina's BPE always merges");
        if (m.hasNonNull("dropout") && m.get("dropout").asDouble() != 0) throw new ModelFileError(where, "model.dropout " + m.get("dropout") + ": kina's BPE is deterministic");
        JsonNode vocab = m.get("vocab");
        if (vocab == null || !vocab.isObject()) throw new ModelFileError(where, "model.vocab is not an object");
        int n = vocab.size();
        String[] tokens = new String[n];
        for (Map.Entry<String, JsonNode> e : vocab.properties()) {
            JsonNode id = e.getValue();
            if (!id.canConvertToInt() || id.intValue() < 0 || id.intValue() >= n)
                throw new ModelFileError(where, "model.vocab gives '" + e.getKey() + "' the id " + id + "; kina needs the ids 0…" + (n - 1));
            if (tokens[id.intValue()] != null) throw new ModelFileError(where, "model.vocab gives id " + id + " to '" + tokens[id.intValue()] + "' and '" + e.getKey() + "'");
            tokens[id.intValue()] = e.getKey();
        }
        Vocabulary.Type[] types = new Vocabulary.Type[n];
        Arrays.fill(types, Vocabulary.Type.NORMAL);
        for (int i = 0; i < n; i++) if (tokens[i].matches("<0x[0-9A-F]{2}>")) types[i] = Vocabulary.Type.BYTE;
        String unk = m.hasNonNull("unk_token") ? m.get("unk_token").asText() : null;
        for (JsonNode a : o.path("added_tokens")) {
            int id = a.path("id").asInt(-1);
            String content = a.path("content").asText();
            if (id < 0 || id >= n || !tokens[id].equals(content))
                throw new ModelFileError(where, "added token '" + content + "' (id " + id + ") is not that id of model.vocab; kina's ids are the BPE's");
            if (a.path("special").asBoolean(false)) types[id] = content.equals(unk) ? Vocabulary.Type.UNKNOWN : Vocabulary.Type.CONTROL;
            else types[id] = Vocabulary.Type.USER_DEFINED;
        }
        float[] scores = scores(where, m.get("merges"), tokens, types);
        return new Vocabulary(List.of(tokens), scores, List.of(types), prefix);
    }

    /** Whether the normalizer adds a dummy prefix; refuses one kina cannot mirror. */
    private static boolean normalizer(String where, JsonNode n) {
        if (n == null || n.isNull()) return false;
        String t = n.path("type").asText();
        return switch (t) {
            case "Sequence" -> {
                boolean p = false;
                for (JsonNode x : n.path("normalizers")) p |= normalizer(where, x);
                yield p;
            }
            case "Replace" -> {
                if (!n.path("pattern").path("String").asText().equals(" ") || !n.path("content").asText().equals(Vocabulary.SPACE))
                    throw new ModelFileError(where, "normalizer Replace(" + n.path("pattern") + " → " + n.path("content") + "): kina's BPE replaces only a space, by ▁");
                yield false;
            }
            case "Prepend" -> {
                if (!n.path("prepend").asText().equals(Vocabulary.SPACE)) throw new ModelFileError(where, "normalizer Prepend(\"" + n.path("prepend").asText() + "\"): kina's BPE prepends nothing");
                yield true;
            }
            default -> throw new ModelFileError(where, "normalizer " + t + ": kina's BPE takes text as it comes (only a space becomes ▁)");
        };
    }

    /** Whether the pre-tokenizer adds a dummy prefix; refuses one that splits the text. */
    private static boolean preTokenizer(String where, JsonNode p) {
        if (p == null || p.isNull()) return false;
        String t = p.path("type").asText();
        if (t.equals("Metaspace")) {
            if (!p.path("replacement").asText(Vocabulary.SPACE).equals(Vocabulary.SPACE) || p.path("split").asBoolean(false))
                throw new ModelFileError(where, "pre_tokenizer Metaspace with split or another replacement: kina's BPE merges across spaces, as SentencePiece does");
            String scheme = p.path("prepend_scheme").asText(p.path("add_prefix_space").asBoolean(true) ? "always" : "never");
            return !scheme.equals("never");
        }
        if (t.equals("ByteLevel"))
            throw new ModelFileError(where, "pre_tokenizer ByteLevel (GPT-2's byte-to-unicode BPE, as Llama 3's): kina's BPE is SentencePiece style, with byte fallback");
        throw new ModelFileError(where, "pre_tokenizer " + t + ": kina's BPE does not split the text before merging");
    }

    /** The scores the merge list's ranks stand for; refuses a list ranks and scores do not agree on. */
    private static float[] scores(String where, JsonNode merges, String[] tokens, Vocabulary.Type[] types) {
        Map<String, Integer> normal = new HashMap<>();
        for (int i = 0; i < tokens.length; i++) if (types[i] == Vocabulary.Type.NORMAL) normal.putIfAbsent(tokens[i], i);
        float[] scores = new float[tokens.length];
        int[] first = new int[tokens.length], last = new int[tokens.length];
        Arrays.fill(first, -1);
        Map<String, Boolean> listed = new HashMap<>();
        int rank = 0;
        for (JsonNode mg : merges == null ? List.<JsonNode>of() : merges) {
            String a, b;
            if (mg.isArray() && mg.size() == 2) {
                a = mg.get(0).asText();
                b = mg.get(1).asText();
            } else {
                String[] s = mg.asText().split(" ", -1);
                if (s.length != 2) throw new ModelFileError(where, "merge " + rank + " '" + mg.asText() + "' is not two tokens");
                a = s[0];
                b = s[1];
            }
            Integer id = normal.get(a + b);
            if (!normal.containsKey(a) || !normal.containsKey(b) || id == null)
                throw new ModelFileError(where, "merge " + rank + " ('" + a + "', '" + b + "') is not of two tokens into a third");
            if (first[id] < 0) first[id] = rank;
            else if (last[id] != rank - 1)
                throw new ModelFileError(where, "the merges into '" + a + b + "' are not adjacent (ranks " + first[id] + " and " + rank
                        + "); kina's BPE gives each token one priority");
            last[id] = rank;
            listed.put(a + "\u0000" + b, true);
            rank++;
        }
        for (Map.Entry<String, Integer> e : normal.entrySet()) {
            String t = e.getKey();
            for (int k = t.isEmpty() ? 1 : t.offsetByCodePoints(0, 1); k < t.length(); k = t.offsetByCodePoints(k, 1)) {
                String a = t.substring(0, k), b = t.substring(k);
                if (normal.containsKey(a) && normal.containsKey(b) && !listed.containsKey(a + "\u0000" + b))
                    throw new ModelFileError(where, "no merge ('" + a + "', '" + b + "'), though both make the token '" + t
                            + "': kina's BPE, like SentencePiece, merges every such pair");
            }
            int id = e.getValue();
            scores[id] = first[id] < 0 ? 0f : -first[id];
        }
        return scores;
    }
}
